//! The status write, the Events of changed conditions, and the requeue
//! (docs/metacontroller.md §3.3 steps 8 and 12).

use super::*;

#[test]
fn status_is_replaced_with_observed_generation_and_skipped_when_equal() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).generation(7).0;
    let plan = Pass::new(&ctl, &parent).plan(vec![], response(vec![]));
    assert_eq!(
        plan.ops,
        [Op::WriteStatus {
            status: json!({"ok": true, "observedGeneration": 7})
        }]
    );
    let written = Obj::parent()
        .finalizer(FINALIZER)
        .generation(7)
        .data("status", json!({"ok": true, "observedGeneration": 7}))
        .0;
    let plan = Pass::new(&ctl, &written).plan(vec![], response(vec![]));
    assert!(plan.ops.is_empty());
    // No status in the response: the status is wiped to observedGeneration.
    let none = HookResponse::default();
    let plan = Pass::new(&ctl, &written).plan(vec![], none);
    assert_eq!(
        plan.ops,
        [Op::WriteStatus {
            status: json!({"observedGeneration": 7})
        }]
    );
}

#[test]
fn condition_changes_become_events_after_the_writes() {
    let ctl = hello_like();
    let parent = Obj::parent()
        .finalizer(FINALIZER)
        .data(
            "status",
            json!({"conditions": [
                {"type": "Ready", "status": "True", "reason": "ReplicasAvailable"},
                {"type": "SpecValid", "status": "True", "reason": "Valid"}
            ]}),
        )
        .0;
    let mut resp = response(vec![]);
    resp.status = Some(
        json!({"conditions": [
            {"type": "Ready", "status": "True", "reason": "ReplicasAvailable", "message": "new text only"},
            {"type": "SpecValid", "status": "False", "reason": "InvalidSpec", "message": "replicas must be 0 to 20"}
        ]})
        .as_object()
        .unwrap()
        .clone(),
    );
    let plan = planned(&ctl, &parent, &[vec![child("web").arc()], vec![]], resp).unwrap();
    assert_eq!(kinds(&plan.ops), ["DeleteChild", "WriteStatus", "Event"]);
    assert_eq!(
        plan.ops[2],
        Op::Event {
            kind: EventType::Warning,
            reason: "InvalidSpec".to_owned(),
            note: "SpecValid is False: replicas must be 0 to 20".to_owned(),
            after: Some(Written::Status),
        }
    );
}

/// The Events of one status change, as (kind, reason); `changing`: the
/// same pass writes children.
fn events(old: Option<Value>, new: Value, changing: bool) -> Vec<(EventType, String)> {
    crate::decide::plan::status::condition_events(old.as_ref(), &new, changing)
        .into_iter()
        .filter_map(|op| match op {
            Op::Event { kind, reason, .. } => Some((kind, reason)),
            _ => None,
        })
        .collect()
}

fn conditions(list: &[(&str, &str, &str)]) -> Value {
    json!({"conditions": list.iter().map(|(t, s, r)| json!({"type": t, "status": s, "reason": r})).collect::<Vec<_>>()})
}

#[test]
fn a_new_object_becoming_ready_is_worth_no_event_and_a_problem_is_a_warning() {
    // A new healthy Hello: its Deployment created, valid, not ready yet;
    // then ready. Nothing.
    let first = conditions(&[
        ("SpecValid", "True", "Valid"),
        ("Ready", "False", "ReplicasNotAvailable"),
    ]);
    assert_eq!(events(None, first.clone(), true), []);
    let ready = conditions(&[
        ("SpecValid", "True", "Valid"),
        ("Ready", "True", "ReplicasAvailable"),
    ]);
    assert_eq!(events(Some(first.clone()), ready.clone(), false), []);
    // Scaled: the Deployment applied, Ready falls while it catches up.
    let scaling = conditions(&[
        ("SpecValid", "True", "Valid"),
        ("Ready", "False", "ReplicasNotAvailable"),
    ]);
    assert_eq!(events(Some(ready.clone()), scaling.clone(), true), []);
    // The same fall with nothing written by us (pods lost): a Warning.
    assert_eq!(
        events(Some(ready.clone()), scaling, false),
        [(EventType::Warning, "ReplicasNotAvailable".to_owned())]
    );
    // A new object that cannot make progress (its child's name is taken,
    // so nothing is written): a Warning from the start.
    let taken = conditions(&[
        ("SpecValid", "True", "Valid"),
        ("Ready", "False", "ErrResourceExists"),
    ]);
    assert_eq!(
        events(None, taken, false),
        [(EventType::Warning, "ErrResourceExists".to_owned())]
    );
    // An invalid spec, from the start or later, whatever else is written: a
    // Warning; another problem of the same condition: another Warning;
    // fixed: a Normal.
    let invalid = conditions(&[
        ("SpecValid", "False", "InvalidSpec"),
        ("Ready", "False", "ReplicasNotAvailable"),
    ]);
    assert_eq!(
        events(None, invalid.clone(), true),
        [(EventType::Warning, "InvalidSpec".to_owned())]
    );
    let invalid_later = conditions(&[
        ("SpecValid", "False", "InvalidSpec"),
        ("Ready", "True", "ReplicasAvailable"),
    ]);
    assert_eq!(
        events(Some(ready.clone()), invalid_later, false),
        [(EventType::Warning, "InvalidSpec".to_owned())]
    );
    let other = conditions(&[
        ("SpecValid", "False", "TooManyReplicas"),
        ("Ready", "False", "ReplicasNotAvailable"),
    ]);
    assert_eq!(
        events(Some(invalid.clone()), other, false),
        [(EventType::Warning, "TooManyReplicas".to_owned())]
    );
    assert_eq!(
        events(Some(invalid.clone()), invalid.clone(), false),
        [],
        "the same problem again: nothing"
    );
    assert_eq!(
        events(Some(invalid), ready, false),
        [(EventType::Normal, "Valid".to_owned())]
    );
}

#[test]
fn a_rollout_says_nothing_until_it_ends() {
    let on = |reason| conditions(&[("Updated", "True", reason)]);
    let step = |reason| conditions(&[("Updated", "False", reason)]);
    // Steps of a rolling update (plan/rolling/), with or without a child
    // written in the same pass: nothing.
    assert_eq!(
        events(
            Some(on("OnLatestRevision")),
            step("RolloutProgressing"),
            true
        ),
        []
    );
    assert_eq!(
        events(
            Some(step("RolloutProgressing")),
            step("RolloutWaiting"),
            false
        ),
        []
    );
    // Done: one Normal.
    assert_eq!(
        events(Some(step("RolloutWaiting")), on("OnLatestRevision"), false),
        [(EventType::Normal, "OnLatestRevision".to_owned())]
    );
    // An `Updated` condition of the hook's own that falls is still news.
    assert_eq!(
        events(Some(on("Fine")), step("Broken"), false),
        [(EventType::Warning, "Broken".to_owned())]
    );
}

#[test]
fn resync_after_seconds_is_a_requeue_decision() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let mut resp = response(vec![]);
    resp.resync_after_seconds = 1.5;
    let plan = planned(&ctl, &parent, &[vec![], vec![]], resp.clone()).unwrap();
    assert_eq!(plan.resync_after, Some(Duration::from_millis(1500)));
    resp.resync_after_seconds = 0.0;
    assert_eq!(
        planned(&ctl, &parent, &[vec![], vec![]], resp)
            .unwrap()
            .resync_after,
        None
    );
}

/// Remembers one status written on `p1` at resourceVersion `10`.
struct WroteOn10(Value);

impl AppliedMemory for WroteOn10 {
    fn applied(&self, _: usize, _: Option<&str>, _: &str) -> Option<crate::decide::plan::Applied> {
        None
    }
    fn written_status(&self, uid: &str, resource_version: &str) -> Option<Value> {
        (uid == "p1" && resource_version == "10").then(|| self.0.clone())
    }
}

#[test]
fn a_status_the_cache_has_not_seen_yet_is_not_written_again() {
    // The last reconcile wrote {ok, observedGeneration 2} on the parent at
    // resourceVersion 10; a child's event queued this one before the
    // parent's own event arrived, so the cache still shows 10 without it.
    let ctl = hello_like();
    let stale = Obj::parent()
        .finalizer(FINALIZER)
        .generation(2)
        .resource_version("10")
        .data(
            "status",
            json!({"conditions": [{"type": "Ready", "status": "True", "reason": "Old"}]}),
        )
        .0;
    let written = json!({"ok": true, "observedGeneration": 2});
    let memory = WroteOn10(written);
    let plan = Pass::new(&ctl, &stale)
        .remembering(&memory)
        .plan(vec![], response(vec![]));
    assert!(
        plan.ops.is_empty(),
        "nothing to write, nothing to tell: {:?}",
        plan.ops
    );
    // Once the cache has moved on (someone else wrote since), it is the
    // cache that counts.
    let moved = Obj::parent()
        .finalizer(FINALIZER)
        .generation(2)
        .resource_version("12")
        .0;
    let plan = Pass::new(&ctl, &moved)
        .remembering(&memory)
        .plan(vec![], response(vec![]));
    assert_eq!(kinds(&plan.ops), ["WriteStatus"]);
}

/// Remembers that a pass left `p1`'s status for later while catching up.
struct DeferredWhileCatchingUp;

impl AppliedMemory for DeferredWhileCatchingUp {
    fn applied(&self, _: usize, _: Option<&str>, _: &str) -> Option<crate::decide::plan::Applied> {
        None
    }
    fn deferred_while_catching_up(&self, uid: &str) -> bool {
        uid == "p1"
    }
}

/// A response desiring `children`, with these conditions as its status.
fn with_conditions(children: Vec<Value>, list: &[(&str, &str, &str)]) -> HookResponse {
    let mut resp = response(children);
    resp.status = conditions(list).as_object().cloned();
    resp
}

const VALID_NOT_READY: [(&str, &str, &str); 2] = [
    ("SpecValid", "True", "Valid"),
    ("Ready", "False", "ReplicasNotAvailable"),
];

#[test]
fn a_deferrable_status_waits_unless_it_is_worth_a_warning_or_the_parent_goes() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let deferrable = |parent: &DynamicObject, resp: HookResponse| {
        Pass::new(&ctl, parent)
            .at(StatusPace::Deferrable)
            .plan(vec![], resp)
    };
    // A new parent: its child is created now, its status waits, and the
    // plan says this pass was catching up.
    let plan = deferrable(
        &parent,
        with_conditions(vec![desired("web", 1)], &VALID_NOT_READY),
    );
    assert_eq!(kinds(&plan.ops), ["ApplyChild"]);
    assert_eq!(plan.deferred_status, Some(true));
    // Nothing changes but the status: it waits too, not catching up.
    let ready = [
        ("SpecValid", "True", "Valid"),
        ("Ready", "True", "ReplicasAvailable"),
    ];
    let plan = deferrable(&parent, with_conditions(vec![], &ready));
    assert!(plan.ops.is_empty(), "{:?}", plan.ops);
    assert_eq!(plan.deferred_status, Some(false));
    // A status equal to the one the parent holds defers nothing.
    let mut holds = conditions(&ready);
    holds["observedGeneration"] = json!(1);
    let holding = Obj::parent()
        .finalizer(FINALIZER)
        .generation(1)
        .data("status", holds)
        .0;
    let plan = deferrable(&holding, with_conditions(vec![], &ready));
    assert_eq!(
        (plan.ops.len(), plan.deferred_status),
        (0, None),
        "{:?}",
        plan.ops
    );
    // Worth a Warning: written now, Warning and all.
    let invalid = [
        ("SpecValid", "False", "InvalidSpec"),
        ("Ready", "False", "ReplicasNotAvailable"),
    ];
    let plan = deferrable(&parent, with_conditions(vec![], &invalid));
    assert_eq!(kinds(&plan.ops), ["WriteStatus", "Event", "Event"]);
    assert_eq!(plan.deferred_status, None);
    // Being deleted: written now.
    let deleting = Obj::parent().finalizer(FINALIZER).deleting().0;
    let plan = deferrable(&deleting, with_conditions(vec![], &VALID_NOT_READY));
    assert_eq!(kinds(&plan.ops), ["WriteStatus"]);
    assert_eq!(plan.deferred_status, None);
}

#[test]
fn the_pass_that_writes_a_deferred_status_judges_it_as_the_deferring_pass_would() {
    // The pass that created the child deferred the status (Ready False,
    // catching up); the next writes it with nothing left to change. Without
    // the memory that would be a fall nothing explains: a Warning.
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let none: [Vec<Arc<DynamicObject>>; 2] = [vec![], vec![]];
    let remembered = Pass::new(&ctl, &parent)
        .remembering(&DeferredWhileCatchingUp)
        .plan(vec![], with_conditions(vec![], &VALID_NOT_READY));
    assert_eq!(kinds(&remembered.ops), ["WriteStatus"]);
    let forgotten = planned(
        &ctl,
        &parent,
        &none,
        with_conditions(vec![], &VALID_NOT_READY),
    )
    .unwrap();
    assert_eq!(kinds(&forgotten.ops), ["WriteStatus", "Event"]);
}

#[test]
fn a_settling_status_waits_only_for_a_pass_that_changes_a_child() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let settle = |resp: HookResponse| {
        Pass::new(&ctl, &parent)
            .at(StatusPace::Settle)
            .plan(vec![], resp)
    };
    // The child is created: its status follows moments later; so does ours.
    let plan = settle(with_conditions(vec![desired("web", 1)], &VALID_NOT_READY));
    assert_eq!(kinds(&plan.ops), ["ApplyChild"]);
    assert_eq!(plan.deferred_status, Some(true));
    // Nothing of ours changes: the status goes now.
    let plan = settle(with_conditions(vec![], &VALID_NOT_READY));
    assert_eq!(kinds(&plan.ops), ["WriteStatus", "Event"]);
    assert_eq!(plan.deferred_status, None);
}
