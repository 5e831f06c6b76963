//! Planner tests: one per rule of docs/metacontroller.md §3 the driver
//! implements, each on small built objects.

use super::config::UpdateStrategy;
use super::model::Driven;
use super::plan::*;
use super::test_support::{Demo, FINALIZER, Obj};
use super::wire::HookResponse;
use kube::core::DynamicObject;
use metahook_hooks::HookKind;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The plan after the hook, for the common case: nothing related, nothing
/// remembered from an earlier apply.
fn planned(
    ctl: &Driven,
    parent: &DynamicObject,
    observed: &[Vec<Arc<DynamicObject>>],
    response: HookResponse,
) -> Result<Plan, PlanError> {
    after_hook(ctl, parent, observed, &[], response, &NoMemory)
}

/// The `demo` controller with Deployments (strategy given) and ConfigMaps.
fn controller(strategy: UpdateStrategy, finalize: bool, generate_selector: bool) -> Driven {
    Demo {
        strategy,
        finalize,
        generate_selector,
        config_maps: true,
    }
    .build()
}

/// The plan applies the child `name`, writes the status, and does nothing
/// else.
fn assert_applies_only(plan: &Plan, name: &str) {
    assert_eq!(kinds(&plan.ops), ["ApplyChild", "WriteStatus"]);
    let Op::ApplyChild { name: applied, .. } = &plan.ops[0] else {
        unreachable!()
    };
    assert_eq!(applied, name);
}

fn hello_like() -> Driven {
    controller(UpdateStrategy::InPlace, true, true)
}

/// A child of `p1` under generateSelector.
fn child(name: &str) -> Obj {
    Obj::deployment(name)
        .owned_by("p1")
        .label("controller-uid", "p1")
}

fn desired(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": name}, "spec": {"replicas": replicas}})
}

fn response(children: Vec<Value>) -> HookResponse {
    HookResponse {
        status: Some(serde_json::Map::from_iter([("ok".to_owned(), json!(true))])),
        children,
        ..HookResponse::default()
    }
}

fn kinds(ops: &[Op]) -> Vec<&'static str> {
    ops.iter()
        .map(|op| match op {
            Op::AddFinalizer { .. } => "AddFinalizer",
            Op::RemoveFinalizer { .. } => "RemoveFinalizer",
            Op::VerifyParent => "VerifyParent",
            Op::Adopt { .. } => "Adopt",
            Op::Release { .. } => "Release",
            Op::DeleteChild { .. } => "DeleteChild",
            Op::ApplyChild { .. } => "ApplyChild",
            Op::WriteStatus { .. } => "WriteStatus",
            Op::Event { .. } => "Event",
        })
        .collect()
}

fn observed_of(p: &Prelude) -> &Vec<Vec<Arc<DynamicObject>>> {
    match &p.next {
        Next::CallHook { observed, .. } => observed,
        Next::Stop => panic!("expected a hook call"),
    }
}

fn hook_of(p: &Prelude) -> HookKind {
    match &p.next {
        Next::CallHook { hook, .. } => *hook,
        Next::Stop => panic!("expected a hook call"),
    }
}

// ---- prelude: finalizer, filter, claim -------------------------------------

#[test]
fn finalizer_is_added_before_anything_else() {
    let parent = Obj::parent().finalizer("other").0;
    let orphan = Obj::deployment("orphan")
        .label("controller-uid", "p1")
        .arc();
    let p = prelude(&hello_like(), &parent, &[vec![orphan], vec![]]).unwrap();
    assert_eq!(kinds(&p.ops), ["AddFinalizer", "VerifyParent", "Adopt"]);
    assert_eq!(
        p.ops[0],
        Op::AddFinalizer {
            before: Some(vec!["other".to_owned()]),
            after: vec!["other".to_owned(), FINALIZER.to_owned()],
        }
    );
    assert_eq!(hook_of(&p), HookKind::Sync);
}

#[test]
fn finalizer_is_never_added_to_a_terminating_parent() {
    let parent = Obj::parent().finalizer("other").deleting().0;
    let p = prelude(&hello_like(), &parent, &[vec![], vec![]]).unwrap();
    assert!(p.ops.is_empty());
    // Deleting with a finalize hook: finalize is called.
    assert_eq!(hook_of(&p), HookKind::Finalize);
}

#[test]
fn finalizer_is_removed_when_the_controller_has_no_finalize_hook() {
    let ctl = controller(UpdateStrategy::InPlace, false, true);
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let p = prelude(&ctl, &parent, &[vec![], vec![]]).unwrap();
    assert_eq!(
        p.ops,
        [Op::RemoveFinalizer {
            before: Some(vec![FINALIZER.to_owned()]),
            after: vec![],
        }]
    );
    assert_eq!(hook_of(&p), HookKind::Sync);
}

#[test]
fn deleting_parent_without_finalize_hook_calls_sync_and_touches_no_child() {
    let ctl = controller(UpdateStrategy::InPlace, false, true);
    let parent = Obj::parent().finalizer("someone-else").deleting().0;
    let owned = child("web").arc();
    let p = prelude(&ctl, &parent, &[vec![owned.clone()], vec![]]).unwrap();
    assert_eq!(hook_of(&p), HookKind::Sync);
    // The hook wants nothing, but the parent is going and no finalizer of
    // ours holds it: children are left to the garbage collector.
    let plan = planned(&ctl, &parent, observed_of(&p), response(vec![])).unwrap();
    assert_eq!(kinds(&plan.ops), ["WriteStatus"]);
}

#[test]
fn deleting_parent_with_finalize_hook_manages_children_until_finalized() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).deleting().0;
    let owned = child("web").arc();
    let p = prelude(&ctl, &parent, &[vec![owned], vec![]]).unwrap();
    assert_eq!(hook_of(&p), HookKind::Finalize);
    let plan = planned(&ctl, &parent, observed_of(&p), response(vec![])).unwrap();
    assert_eq!(kinds(&plan.ops), ["DeleteChild", "WriteStatus"]);
}

#[test]
fn finalized_removes_the_finalizer_first_and_then_leaves_children_alone() {
    // docs/metacontroller.md §1.5: on the pass that says finalized, the
    // finalizer goes before children would be managed, so that response's
    // children are not applied.
    let ctl = hello_like();
    let parent = Obj::parent()
        .finalizer("x")
        .finalizer(FINALIZER)
        .deleting()
        .0;
    let owned = child("web").arc();
    let mut resp = response(vec![desired("web", 2)]);
    resp.finalized = true;
    let plan = planned(&ctl, &parent, &[vec![owned], vec![]], resp).unwrap();
    assert_eq!(kinds(&plan.ops), ["RemoveFinalizer", "WriteStatus"]);
    assert_eq!(
        plan.ops[0],
        Op::RemoveFinalizer {
            before: Some(vec!["x".to_owned(), FINALIZER.to_owned()]),
            after: vec!["x".to_owned()],
        }
    );
}

#[test]
fn gc_finalizer_leaves_children_to_the_garbage_collector() {
    let ctl = hello_like();
    let parent = Obj::parent()
        .finalizer(FINALIZER)
        .finalizer("foregroundDeletion")
        .deleting()
        .0;
    let plan = planned(
        &ctl,
        &parent,
        &[vec![child("web").arc()], vec![]],
        response(vec![]),
    )
    .unwrap();
    assert_eq!(kinds(&plan.ops), ["WriteStatus"]);
}

#[test]
fn label_filter_ignores_parents_that_are_not_ours() {
    let mut ctl = hello_like();
    ctl.config.parent.label_selector =
        Some(serde_json::from_value(json!({"matchLabels": {"team": "a"}})).unwrap());
    let theirs = Obj::parent().label("team", "b").0;
    let p = prelude(&ctl, &theirs, &[vec![], vec![]]).unwrap();
    assert_eq!(
        p,
        Prelude {
            ops: vec![],
            next: Next::Stop
        }
    );
    let ours = Obj::parent().label("team", "a").0;
    assert_eq!(
        hook_of(&prelude(&ctl, &ours, &[vec![], vec![]]).unwrap()),
        HookKind::Sync
    );
    // Opted out while holding the finalizer: finalized
    // (docs/metacontroller.md §1.5).
    let leaving = Obj::parent().label("team", "b").finalizer(FINALIZER).0;
    assert_eq!(
        hook_of(&prelude(&ctl, &leaving, &[vec![], vec![]]).unwrap()),
        HookKind::Finalize
    );
}

#[test]
fn claim_adopts_releases_and_ignores_foreign() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let owned = child("owned").arc();
    let orphan = Obj::deployment("orphan")
        .label("controller-uid", "p1")
        .arc();
    let orphan_unmatched = Obj::deployment("stranger").arc();
    let foreign = Obj::deployment("foreign")
        .owned_by("someone")
        .label("controller-uid", "p1")
        .arc();
    let released = Obj::deployment("mislabelled")
        .owned_by("p1")
        .label("controller-uid", "zz")
        .arc();
    let other_ns = child("elsewhere").namespace("other").arc();
    let terminating_orphan = Obj::deployment("going")
        .label("controller-uid", "p1")
        .deleting()
        .arc();
    let p = prelude(
        &ctl,
        &parent,
        &[
            vec![
                owned.clone(),
                orphan.clone(),
                orphan_unmatched,
                foreign,
                released,
                other_ns,
                terminating_orphan,
                owned.clone(),
            ],
            vec![],
        ],
    )
    .unwrap();
    assert_eq!(kinds(&p.ops), ["VerifyParent", "Adopt", "Release"]);
    let Op::Adopt {
        child,
        before,
        after,
    } = &p.ops[1]
    else {
        unreachable!()
    };
    assert_eq!(child.name, "orphan");
    assert_eq!(before, &None);
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].uid, "p1");
    assert_eq!(after[0].kind, "Thing");
    assert_eq!(after[0].controller, Some(true));
    assert_eq!(after[0].block_owner_deletion, Some(true));
    let Op::Release { child, after, .. } = &p.ops[2] else {
        unreachable!()
    };
    assert_eq!(
        (child.name.as_str(), child.uid.as_str()),
        ("mislabelled", "uid-mislabelled")
    );
    assert!(after.is_empty());
    // Claimed: the owned one (once) and the adopted orphan as cached.
    let names: Vec<_> = observed_of(&p)[0]
        .iter()
        .map(|o| o.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["owned", "orphan"]);
    assert!(observed_of(&p)[1].is_empty());
}

#[test]
fn a_deleting_parent_adopts_nothing_and_releases_nothing() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).deleting().0;
    let orphan = Obj::deployment("orphan")
        .label("controller-uid", "p1")
        .arc();
    let mislabelled = Obj::deployment("m").owned_by("p1").arc();
    let p = prelude(&ctl, &parent, &[vec![orphan, mislabelled], vec![]]).unwrap();
    assert!(p.ops.is_empty());
    assert!(observed_of(&p)[0].is_empty());
}

#[test]
fn parent_selector_is_required_without_generate_selector() {
    let ctl = controller(UpdateStrategy::InPlace, false, false);
    let parent = Obj::parent().0;
    assert_eq!(
        prelude(&ctl, &parent, &[vec![], vec![]]).unwrap_err(),
        PlanError::NoSelector
    );
    let with = Obj::parent()
        .data("spec", json!({"selector": {"matchLabels": {"app": "web"}}}))
        .0;
    let labelled = Obj::deployment("web").label("app", "web").arc();
    let p = prelude(&ctl, &with, &[vec![labelled], vec![]]).unwrap();
    assert_eq!(kinds(&p.ops), ["VerifyParent", "Adopt"]);
}

// ---- after the hook: children ----------------------------------------------

#[test]
fn extras_are_deleted_with_their_uid() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let keep = child("keep").arc();
    let extra = child("extra").arc();
    let already_going = child("going").deleting().arc();
    let plan = planned(
        &ctl,
        &parent,
        &[vec![keep.clone(), extra, already_going], vec![]],
        response(vec![desired("keep", 1)]),
    )
    .unwrap();
    assert_eq!(
        kinds(&plan.ops),
        ["DeleteChild", "ApplyChild", "WriteStatus"]
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
fn apply_body_defaults_namespace_and_labels_and_sets_the_owner() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let mut want = desired("web", 2);
    want["status"] = json!({"replicas": 9});
    want["metadata"]["uid"] = json!("echoed");
    want["metadata"]["annotations"] = json!({LAST_APPLIED: "{}", "keep": "me"});
    let plan = planned(&ctl, &parent, &[vec![], vec![]], response(vec![want])).unwrap();
    let Op::ApplyChild {
        type_index,
        namespace,
        name,
        body,
        ..
    } = &plan.ops[0]
    else {
        panic!("{:?}", plan.ops)
    };
    assert_eq!(
        (*type_index, namespace.as_deref(), name.as_str()),
        (0, Some("shop"), "web")
    );
    assert_eq!(
        body,
        &json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {
                "name": "web", "namespace": "shop",
                "labels": {"controller-uid": "p1"},
                "annotations": {"keep": "me"},
                "ownerReferences": [{"apiVersion": "example.com/v1", "kind": "Thing", "name": "p",
                    "uid": "p1", "controller": true, "blockOwnerDeletion": true}]
            },
            "spec": {"replicas": 2}
        })
    );
}

#[test]
fn selector_mismatch_fails_before_anything_is_written() {
    let ctl = controller(UpdateStrategy::InPlace, true, false);
    let parent = Obj::parent()
        .finalizer(FINALIZER)
        .data("spec", json!({"selector": {"matchLabels": {"app": "web"}}}))
        .0;
    let mut good = desired("good", 1);
    good["metadata"]["labels"] = json!({"app": "web"});
    let mut bad = desired("bad", 1);
    bad["metadata"]["labels"] = json!({"app": "other"});
    let err = planned(&ctl, &parent, &[vec![], vec![]], response(vec![good, bad])).unwrap_err();
    assert_eq!(
        err,
        PlanError::SelectorMismatch {
            kind: "Deployment".to_owned(),
            name: "bad".to_owned()
        }
    );
}

#[test]
fn desired_children_outside_the_contract_fail_the_reconcile() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let cases = [
        (
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
            "not one of the controller's childResources",
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {}}),
            "metadata.name is missing",
        ),
        (
            json!({"kind": "Deployment", "metadata": {"name": "x"}}),
            "apiVersion is missing",
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "namespace": "other"}}),
            "own namespace",
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "labels": {"n": 1}}}),
            "is not a string",
        ),
    ];
    for (child, want) in cases {
        let err = planned(&ctl, &parent, &[vec![], vec![]], response(vec![child])).unwrap_err();
        assert!(err.to_string().contains(want), "{err}");
    }
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
    let first = planned(
        &ctl,
        &parent,
        &[vec![observed.clone()], vec![]],
        response(vec![desired("web", 2)]),
    )
    .unwrap();
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
    let again = after_hook(
        &ctl,
        &parent,
        &[vec![observed.clone()], vec![]],
        &[],
        response(vec![desired("web", 2)]),
        &same,
    )
    .unwrap();
    assert_eq!(kinds(&again.ops), ["WriteStatus"]);
    // Someone edited the child since (generation moved): applied again.
    let edited = child("web").generation(4).arc();
    let drift = after_hook(
        &ctl,
        &parent,
        &[vec![edited], vec![]],
        &[],
        response(vec![desired("web", 2)]),
        &same,
    )
    .unwrap();
    assert_eq!(kinds(&drift.ops), ["ApplyChild", "WriteStatus"]);
    // The hook wants something else: applied again.
    let changed = after_hook(
        &ctl,
        &parent,
        &[vec![observed], vec![]],
        &[],
        response(vec![desired("web", 3)]),
        &same,
    )
    .unwrap();
    assert_eq!(kinds(&changed.ops), ["ApplyChild", "WriteStatus"]);
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
    let plan = planned(
        &ctl,
        &parent,
        &[vec![same], vec![]],
        response(vec![desired("web", 2)]),
    )
    .unwrap();
    assert_eq!(kinds(&plan.ops), ["WriteStatus"]);
    let differs = child("web").data("spec", json!({"replicas": 1})).arc();
    let plan = planned(
        &ctl,
        &parent,
        &[vec![differs], vec![]],
        response(vec![desired("web", 2)]),
    )
    .unwrap();
    assert_eq!(kinds(&plan.ops), ["DeleteChild", "WriteStatus"]);
    let Op::DeleteChild { reason, child } = &plan.ops[0] else {
        unreachable!()
    };
    assert_eq!(
        (*reason, child.uid.as_str()),
        (DeleteReason::Recreate, "uid-web")
    );
}

#[test]
fn terminating_children_are_neither_updated_nor_deleted_again() {
    let ctl = controller(UpdateStrategy::InPlace, true, true);
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let going = child("web").deleting().arc();
    let plan = planned(
        &ctl,
        &parent,
        &[vec![going], vec![]],
        response(vec![desired("web", 2)]),
    )
    .unwrap();
    assert_eq!(kinds(&plan.ops), ["WriteStatus"]);
}

// ---- after the hook: status, events, requeue -------------------------------

#[test]
fn status_is_replaced_with_observed_generation_and_skipped_when_equal() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).generation(7).0;
    let plan = planned(&ctl, &parent, &[vec![], vec![]], response(vec![])).unwrap();
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
    let plan = after_hook(
        &ctl,
        &written,
        &[vec![], vec![]],
        &[],
        response(vec![]),
        &NoMemory,
    )
    .unwrap();
    assert!(plan.ops.is_empty());
    // No status in the response: the status is wiped to observedGeneration.
    let none = HookResponse::default();
    let plan = after_hook(&ctl, &written, &[vec![], vec![]], &[], none, &NoMemory).unwrap();
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
        }
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

#[test]
fn convergence_desired_fed_back_as_observed_plans_no_writes() {
    // After the first reconcile's apply and status write, the next one
    // (same hook answer, children as applied) must plan nothing.
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let first = planned(
        &ctl,
        &parent,
        &[vec![], vec![]],
        response(vec![desired("web", 2)]),
    )
    .unwrap();
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
    let second = after_hook(
        &ctl,
        &parent,
        &[vec![observed], vec![]],
        &[],
        response(vec![desired("web", 2)]),
        &Once(*fingerprint),
    )
    .unwrap();
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
fn cluster_scoped_parents_claim_across_namespaces_and_name_the_namespace() {
    let mut ctl = hello_like();
    ctl.parent.namespaced = false;
    let mut parent = Obj::parent().finalizer(FINALIZER).0;
    parent.metadata.namespace = None;
    let here = child("a").namespace("one").arc();
    let there = Obj::deployment("b")
        .namespace("two")
        .label("controller-uid", "p1")
        .arc();
    let p = prelude(&ctl, &parent, &[vec![here, there], vec![]]).unwrap();
    assert_eq!(kinds(&p.ops), ["VerifyParent", "Adopt"]);
    assert_eq!(observed_of(&p)[0].len(), 2);
    // A namespaced child of a cluster-scoped parent must say where it goes.
    let err = planned(
        &ctl,
        &parent,
        observed_of(&p),
        response(vec![desired("a", 1)]),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("metadata.namespace is required"),
        "{err}"
    );
    let mut placed = desired("a", 1);
    placed["metadata"]["namespace"] = json!("one");
    let plan = planned(&ctl, &parent, observed_of(&p), response(vec![placed])).unwrap();
    // `b` (adopted, not desired) goes; `a` is applied in its namespace.
    assert_eq!(
        kinds(&plan.ops),
        ["DeleteChild", "ApplyChild", "WriteStatus"]
    );
    let Op::ApplyChild { namespace, .. } = &plan.ops[1] else {
        unreachable!()
    };
    assert_eq!(namespace.as_deref(), Some("one"));
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
        &existing,
        response(vec![
            desired("web", 1),
            desired("api", 1),
            desired("new", 1),
        ]),
        &NoMemory,
    )
    .unwrap();
    assert_applies_only(&plan, "new");
}

#[test]
fn finalized_removes_the_finalizer_even_when_the_children_break_the_rules() {
    // docs/metacontroller.md §3.3: step 9 (finalizer) comes before step 10
    // (selector check), so a finalize hook that is done is not held up by a
    // bad child list.
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).deleting().0;
    let mut resp = response(vec![
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
    ]);
    resp.finalized = true;
    let plan = planned(&ctl, &parent, &[vec![], vec![]], resp.clone()).unwrap();
    assert_eq!(kinds(&plan.ops), ["RemoveFinalizer"]);
    assert!(matches!(
        plan.failure,
        Some(PlanError::UndeclaredChild { .. })
    ));
    // Without `finalized`, the same answer fails before anything is written.
    resp.finalized = false;
    assert!(planned(&ctl, &parent, &[vec![], vec![]], resp).is_err());
}
