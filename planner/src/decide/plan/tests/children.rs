//! Deletes and applies per update strategy, and what the memory of the last
//! apply saves (docs/metacontroller.md §3.3 step 11, §3.7, §3.8).

use super::*;

#[test]
fn extras_are_deleted_with_their_uid() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let keep = child("keep").arc();
    let extra = child("extra").arc();
    let already_going = child("going").deleting().arc();
    let plan = Pass::new(&ctl, &parent).plan(
        vec![keep.clone(), extra, already_going],
        response(vec![desired("keep", 1)]),
    );
    assert_eq!(
        kinds(&plan.ops),
        ["DeleteChild", "ApplyChild", "WriteStatus", "Event"]
    );
    assert_eq!(
        plan.ops[0],
        Op::DeleteChild {
            child: Target {
                type_index: 0,
                namespace: Some("shop".to_owned()),
                name: "extra".to_owned(),
                uid: "uid-extra".to_owned(),
            },
            reason: DeleteReason::NotDesired,
        }
    );
}

#[test]
fn on_delete_creates_missing_children_but_never_updates() {
    let ctl = controller(UpdateStrategy::OnDelete, true, true);
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let plan = planned(
        &ctl,
        &parent,
        &[
            vec![child("old").data("spec", json!({"replicas": 1})).arc()],
            vec![],
        ],
        response(vec![desired("old", 5), desired("new", 1)]),
    )
    .unwrap();
    assert_applies_only(&plan, "new");
}

#[test]
fn in_place_applies_unless_nothing_changed_since_the_last_apply() {
    let ctl = controller(UpdateStrategy::InPlace, true, true);
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let observed = child("web").generation(3).arc();
    let first =
        Pass::new(&ctl, &parent).plan(vec![observed.clone()], response(vec![desired("web", 2)]));
    let Op::ApplyChild { fingerprint, .. } = &first.ops[0] else {
        panic!("{:?}", first.ops)
    };

    struct Remembers(Applied);
    impl AppliedMemory for Remembers {
        fn applied(&self, t: usize, ns: Option<&str>, name: &str) -> Option<Applied> {
            (t == 0 && ns == Some("shop") && name == "web").then(|| self.0.clone())
        }
    }
    let same = Remembers(Applied {
        fingerprint: *fingerprint,
        uid: "uid-web".to_owned(),
        generation: 3,
        resource_version: "1".to_owned(),
    });
    let again = Pass::new(&ctl, &parent)
        .remembering(&same)
        .plan(vec![observed.clone()], response(vec![desired("web", 2)]));
    assert_eq!(kinds(&again.ops), ["WriteStatus"]);
    // Someone edited the child since (generation moved): applied again.
    let edited = child("web").generation(4).arc();
    let drift = Pass::new(&ctl, &parent)
        .remembering(&same)
        .plan(vec![edited], response(vec![desired("web", 2)]));
    assert_eq!(kinds(&drift.ops), ["ApplyChild", "WriteStatus", "Event"]);
    assert_eq!(
        drift.ops[2],
        Op::Event {
            kind: EventType::Normal,
            reason: "Updated".to_owned(),
            note: "Deployment web updated".to_owned(),
            after: Some(Written::Child {
                type_index: 0,
                name: "web".to_owned(),
            }),
        },
        "an existing child that changes is worth a Normal"
    );
    // The hook wants something else: applied again.
    let changed = Pass::new(&ctl, &parent)
        .remembering(&same)
        .plan(vec![observed], response(vec![desired("web", 3)]));
    assert_eq!(kinds(&changed.ops), ["ApplyChild", "WriteStatus", "Event"]);
}

#[test]
fn recreate_deletes_a_child_that_differs_and_keeps_one_that_does_not() {
    let ctl = controller(UpdateStrategy::Recreate, true, true);
    let parent = Obj::parent().finalizer(FINALIZER).0;
    // Server-defaulted fields (strategy, revisionHistoryLimit) are not a
    // difference.
    let same = child("web")
        .data("spec", json!({"replicas": 2, "revisionHistoryLimit": 10}))
        .arc();
    let plan = Pass::new(&ctl, &parent).plan(vec![same], response(vec![desired("web", 2)]));
    assert_eq!(kinds(&plan.ops), ["WriteStatus"]);
    let differs = child("web").data("spec", json!({"replicas": 1})).arc();
    let plan = Pass::new(&ctl, &parent).plan(vec![differs], response(vec![desired("web", 2)]));
    assert_eq!(kinds(&plan.ops), ["DeleteChild", "WriteStatus", "Event"]);
    let Op::DeleteChild { reason, child } = &plan.ops[0] else {
        unreachable!()
    };
    assert_eq!(
        (*reason, child.uid.as_str()),
        (DeleteReason::Recreate, "uid-web")
    );
}

#[test]
fn recreate_leaves_a_child_it_applied_whose_named_lists_only_gained_items() {
    let ctl = controller(UpdateStrategy::Recreate, true, true);
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let wanted = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "v1"}]}}}});
    // The fingerprint of the apply the plan makes for it.
    let checked =
        super::super::desired::check_desired(&ctl, &parent, std::slice::from_ref(&wanted)).unwrap();
    let (_, fingerprint) = super::super::apply::with_fingerprint(super::super::apply::apply_body(
        &ctl,
        &parent,
        &checked[0].object,
    ));
    let stamp = super::super::apply::fingerprint_text(fingerprint);
    let live = |containers: Value, stamped: bool| {
        let mut c = child("web").data(
            "spec",
            json!({"template": {"spec": {"containers": containers}}}),
        );
        if stamped {
            c = c.annotation(APPLIED, &stamp);
        }
        c.arc()
    };
    let plan_for = |obs| {
        let plan = Pass::new(&ctl, &parent).plan(vec![obs], response(vec![wanted.clone()]));
        kinds(&plan.ops).contains(&"DeleteChild")
    };
    let injected = json!([{"name": "c", "image": "v1"}, {"name": "injected", "image": "proxy"}]);
    // Applied by us, a container added by admission: left alone.
    assert!(!plan_for(live(injected.clone(), true)));
    // The same without our fingerprint: every field must hold, list lengths too.
    assert!(plan_for(live(injected, false)));
    // Ours, but its own container changed since: recreated.
    assert!(plan_for(live(json!([{"name": "c", "image": "v0"}]), true)));
}

#[test]
fn terminating_children_are_neither_updated_nor_deleted_again() {
    let ctl = controller(UpdateStrategy::InPlace, true, true);
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let going = child("web").deleting().arc();
    let plan = Pass::new(&ctl, &parent).plan(vec![going], response(vec![desired("web", 2)]));
    assert_eq!(kinds(&plan.ops), ["WriteStatus"]);
}

#[test]
fn a_desired_name_taken_by_an_object_not_ours_is_left_alone() {
    // Metacontroller's create meets AlreadyExists and moves on; an apply
    // would take the object over. (The Foo controller relies on this.)
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let foreign = Obj::deployment("web").owned_by("someone-else").arc();
    let unmatched_orphan = Obj::deployment("api").arc();
    let existing = [vec![foreign, unmatched_orphan], vec![]];
    let p = prelude(&ctl, &parent, &existing).unwrap();
    assert!(observed_of(&p)[0].is_empty());
    let plan = after_hook(
        &ctl,
        &parent,
        observed_of(&p),
        existing.as_slice(),
        response(vec![
            desired("web", 1),
            desired("api", 1),
            desired("new", 1),
        ]),
        &NoMemory,
        StatusPace::Now,
    )
    .unwrap();
    assert_applies_only(&plan, "new");
}

#[test]
fn convergence_desired_fed_back_as_observed_plans_no_writes() {
    // After the first reconcile's apply and status write, the next one
    // (same hook answer, children as applied) must plan nothing.
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let first = Pass::new(&ctl, &parent).plan(vec![], response(vec![desired("web", 2)]));
    let Op::ApplyChild { fingerprint, .. } = &first.ops[0] else {
        unreachable!()
    };
    let Op::WriteStatus { status } = &first.ops[1] else {
        unreachable!()
    };
    struct Once(u64);
    impl AppliedMemory for Once {
        fn applied(&self, _: usize, _: Option<&str>, _: &str) -> Option<Applied> {
            Some(Applied {
                fingerprint: self.0,
                uid: "uid-web".to_owned(),
                generation: 1,
                resource_version: "1".to_owned(),
            })
        }
    }
    let parent = Obj::parent()
        .finalizer(FINALIZER)
        .data("status", status.clone())
        .0;
    let observed = child("web").arc();
    let second = Pass::new(&ctl, &parent)
        .remembering(&Once(*fingerprint))
        .plan(vec![observed], response(vec![desired("web", 2)]));
    assert!(second.ops.is_empty(), "{:?}", second.ops);
}

#[test]
fn contains_compares_desired_fields_only() {
    assert!(contains(&json!({"a": 1, "b": 2}), &json!({"a": 1})));
    assert!(!contains(&json!({"a": 1}), &json!({"a": 2})));
    assert!(contains(
        &json!({"l": [{"n": 1, "d": true}]}),
        &json!({"l": [{"n": 1}]})
    ));
    assert!(!contains(
        &json!({"l": [{"n": 1}, {"n": 2}]}),
        &json!({"l": [{"n": 1}]})
    ));
    // Type-strict, as Metacontroller's comparison is.
    assert!(!contains(&json!({"r": 3}), &json!({"r": 3.0})));
}

#[test]
fn a_restarted_driver_leaves_a_child_alone_that_carries_what_it_would_apply() {
    // The first apply, by a driver that remembers nothing.
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let first = Pass::new(&ctl, &parent).plan(vec![], response(vec![desired("web", 2)]));
    let Some(Op::ApplyChild { body, .. }) = first.ops.first() else {
        panic!("{:?}", first.ops)
    };
    // The child as the API server keeps it: what was applied, plus what the
    // server adds (identity, defaults, status).
    let stored = |body: &Value| {
        let mut live = body.clone();
        live["metadata"]["uid"] = json!("uid-web");
        live["metadata"]["resourceVersion"] = json!("7");
        live["metadata"]["generation"] = json!(1);
        live["spec"]["strategy"] = json!({"type": "RollingUpdate"});
        live["status"] = json!({"replicas": 2});
        Arc::new(serde_json::from_value::<DynamicObject>(live).unwrap())
    };
    let live = stored(body);
    // A new process (no memory), the same answer: no apply, no Event.
    let again =
        Pass::new(&ctl, &parent).plan(vec![live.clone()], response(vec![desired("web", 2)]));
    assert_eq!(kinds(&again.ops), ["WriteStatus"]);
    // Someone scaled it by hand: applied again.
    let mut scaled = (*live).clone();
    scaled.data["spec"]["replicas"] = json!(5);
    let drift =
        Pass::new(&ctl, &parent).plan(vec![Arc::new(scaled)], response(vec![desired("web", 2)]));
    assert_eq!(kinds(&drift.ops), ["ApplyChild", "WriteStatus", "Event"]);
    // The hook now wants less (a field dropped): the live child still holds
    // every desired field, but the fingerprint differs, so the apply goes
    // out and lets go of the dropped field.
    let fewer = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {}});
    let dropped = Pass::new(&ctl, &parent).plan(vec![live.clone()], response(vec![fewer]));
    assert_eq!(kinds(&dropped.ops), ["ApplyChild", "WriteStatus"]);
    // Without the annotation (a child from an older metahook): applied once.
    let mut old = (*live).clone();
    old.metadata.annotations = None;
    let upgrade =
        Pass::new(&ctl, &parent).plan(vec![Arc::new(old)], response(vec![desired("web", 2)]));
    assert_eq!(
        kinds(&upgrade.ops),
        ["ApplyChild", "WriteStatus"],
        "no Event: nothing a person asked for changed"
    );
}

/// Applied `web` moments ago; the cache has not shown it yet.
struct WebOnItsWay;

impl AppliedMemory for WebOnItsWay {
    fn applied(&self, _: usize, _: Option<&str>, _: &str) -> Option<Applied> {
        None
    }
    fn on_its_way(&self, type_index: usize, _: Option<&str>, name: &str, _: u64) -> bool {
        type_index == 0 && name == "web"
    }
}

#[test]
fn a_child_on_its_way_to_the_cache_is_not_applied_again() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let none: [Vec<Arc<DynamicObject>>; 2] = [vec![], vec![]];
    let plan = Pass::new(&ctl, &parent)
        .remembering(&WebOnItsWay)
        .at(StatusPace::Deferrable)
        .plan(vec![], response(vec![desired("web", 1), desired("db", 1)]));
    let applied: Vec<&str> = plan
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::ApplyChild { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(applied, ["db"], "web is on its way, db is new");
    // Still catching up with what this process created.
    assert_eq!(plan.deferred_status, Some(true));
    // Without the memory, web is created (again).
    let plan = planned(&ctl, &parent, &none, response(vec![desired("web", 1)])).unwrap();
    assert_eq!(kinds(&plan.ops), ["ApplyChild", "WriteStatus"]);
}
