//! The hook's desired children: refused when they break the contract,
//! defaulted and sent as a server-side apply body when they keep it
//! (docs/metacontroller.md §3.3 step 10).

use super::*;

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
fn apply_body_defaults_namespace_and_labels_and_sets_the_owner() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let mut want = desired("web", 2);
    want["status"] = json!({"replicas": 9});
    want["metadata"]["uid"] = json!("echoed");
    want["metadata"]["annotations"] = json!({LAST_APPLIED: "{}", "keep": "me"});
    let plan = Pass::new(&ctl, &parent).plan(vec![], response(vec![want]));
    let Op::ApplyChild {
        type_index,
        namespace,
        name,
        body,
        fingerprint,
    } = &plan.ops[0]
    else {
        panic!("{:?}", plan.ops)
    };
    assert_eq!(
        (*type_index, namespace.as_deref(), name.as_str()),
        (0, Some("shop"), "web")
    );
    // The fingerprint of the body without it goes with the body.
    let mut body = body.clone();
    let written = body["metadata"]["annotations"]
        .as_object_mut()
        .and_then(|a| a.remove(APPLIED));
    assert_eq!(written, Some(json!(format!("{fingerprint:016x}"))));
    assert_eq!(*fingerprint, crate::decide::plan::apply::fingerprint(&body));
    assert_eq!(
        body,
        json!({
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
fn a_child_carries_its_parents_shard_labels() {
    // --shard-selector names `metahook.dev/shard`: the shard's child watch
    // selects by it, so each child carries its parent's value (the hook's
    // own value, if any, does not win: it would hide the child).
    let mut ctl = hello_like();
    ctl.shard_labels = vec!["metahook.dev/shard".to_owned(), "absent".to_owned()];
    let parent = Obj::parent()
        .finalizer(FINALIZER)
        .label("metahook.dev/shard", "b")
        .0;
    let mut want = desired("web", 2);
    want["metadata"]["labels"] = json!({"metahook.dev/shard": "a", "app": "web"});
    let plan = Pass::new(&ctl, &parent).plan(vec![], response(vec![want]));
    let Op::ApplyChild { body, .. } = &plan.ops[0] else {
        panic!("{:?}", plan.ops)
    };
    assert_eq!(
        body["metadata"]["labels"],
        json!({"metahook.dev/shard": "b", "app": "web", "controller-uid": "p1"}),
        "the parent's value; a key the parent lacks is not invented"
    );
}
