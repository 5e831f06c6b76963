//! The label filter, the children's selector and the claim: adopt, release,
//! leave another controller's alone (docs/metacontroller.md §3.3 steps 2 and
//! 4, §3.5, §3.6).

use super::*;

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
        ["DeleteChild", "ApplyChild", "WriteStatus", "Event"]
    );
    let Op::ApplyChild { namespace, .. } = &plan.ops[1] else {
        unreachable!()
    };
    assert_eq!(namespace.as_deref(), Some("one"));
}
