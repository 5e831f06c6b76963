//! The finalizer over a parent's life: added before anything else, removed
//! without a finalize hook or once `finalized`, and which children a
//! deleting parent still manages (docs/metacontroller.md §1.5, §3.3 steps 3,
//! 9 and 11).

use super::*;

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
    assert_eq!(
        kinds(&plan.ops),
        ["RemoveFinalizer", "WriteStatus", "Event"]
    );
    assert!(
        matches!(&plan.ops[2], Op::Event { kind: EventType::Normal, reason, .. } if reason == "Finalized"),
        "{:?}",
        plan.ops[2]
    );
    assert_eq!(
        plan.ops[0],
        Op::RemoveFinalizer {
            before: Some(vec!["x".to_owned(), FINALIZER.to_owned()]),
            after: vec!["x".to_owned()],
        }
    );
}

#[test]
fn finalized_with_no_other_finalizer_writes_no_status_to_a_parent_then_gone() {
    // Without another finalizer the API server deletes the parent as ours
    // comes off: a status write after it would be a 404.
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).deleting().0;
    let mut resp = response(vec![]);
    resp.finalized = true;
    let plan = planned(&ctl, &parent, &[vec![], vec![]], resp).unwrap();
    assert_eq!(kinds(&plan.ops), ["RemoveFinalizer", "Event"]);
}

#[test]
fn gc_finalizer_leaves_children_to_the_garbage_collector() {
    let ctl = hello_like();
    let parent = Obj::parent()
        .finalizer(FINALIZER)
        .finalizer("foregroundDeletion")
        .deleting()
        .0;
    let plan = Pass::new(&ctl, &parent).plan(vec![child("web").arc()], response(vec![]));
    assert_eq!(kinds(&plan.ops), ["WriteStatus"]);
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
    assert_eq!(kinds(&plan.ops), ["RemoveFinalizer", "Event"]);
    assert!(matches!(
        plan.failure,
        Some(PlanError::UndeclaredChild { .. })
    ));
    // Without `finalized`, the same answer fails before anything is written.
    resp.finalized = false;
    assert!(planned(&ctl, &parent, &[vec![], vec![]], resp).is_err());
}
