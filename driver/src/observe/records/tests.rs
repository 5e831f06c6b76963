use super::*;
use crate::decide::plan::Op;
use serde_json::json;
use std::sync::Arc;

#[test]
fn an_apply_names_the_fields_it_changes() {
    let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 5, "template": {"spec": {"containers": [{"name": "c", "image": "b"}]}}}});
    let current = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "paused": false,
                 "template": {"spec": {"containers": [{"name": "c", "image": "a"}]}}}});
    let changed = changed_fields(&desired, &current);
    let paths: Vec<&str> = changed.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["spec.replicas", "spec.template.spec.containers"]);
    assert_eq!((&changed[0].from, &changed[0].to), (&json!(2), &json!(5)));
    assert!(changed_fields(&current, &current).is_empty());
}

/// A Secret child's values never reach a record; its paths do. Other
/// kinds keep theirs.
#[test]
fn a_secret_childs_values_are_redacted_and_its_paths_kept() {
    use crate::decide::model::DrivenChild;
    use crate::test_support::{Demo, api_type};
    let mut ctl = Demo::default().build();
    ctl.children.push(DrivenChild {
        resource: api_type("", "v1", "Secret", true),
        strategy: crate::config::UpdateStrategy::InPlace,
    });
    ctl.children.push(DrivenChild {
        resource: api_type("example.com", "v1", "Secret", true),
        strategy: crate::config::UpdateStrategy::InPlace,
    });
    let current = |api_version: &str| {
        serde_json::from_value::<DynamicObject>(json!({
            "apiVersion": api_version, "kind": "Secret",
            "metadata": {"name": "db", "namespace": "shop"},
            "data": {"password": "b2xk"}, "stringData": {"token": "old-token"}}))
        .unwrap()
    };
    let observed = vec![
        vec![],
        vec![Arc::new(current("v1"))],
        vec![Arc::new(current("example.com/v1"))],
    ];
    let apply = |type_index: usize, api_version: &str| Op::ApplyChild {
        type_index,
        namespace: Some("shop".to_owned()),
        name: "db".to_owned(),
        body: json!({"apiVersion": api_version, "kind": "Secret",
            "metadata": {"name": "db"},
            "data": {"password": "bmV3"}, "stringData": {"token": "new-token"}}),
        fingerprint: 0,
    };
    let step = Step::of(&apply(1, "v1"), &ctl, &observed);
    let paths: Vec<&str> = step.changed.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["data.password", "stringData.token"]);
    for field in &step.changed {
        assert_eq!(
            (&field.from, &field.to),
            (&json!(REDACTED), &json!(REDACTED))
        );
    }
    let shown = serde_json::to_string(&step).unwrap();
    for value in ["b2xk", "bmV3", "old-token", "new-token"] {
        assert!(!shown.contains(value), "{value} in {shown}");
    }
    // A kind named Secret in another group is not core's.
    let step = Step::of(&apply(2, "example.com/v1"), &ctl, &observed);
    assert_eq!(step.changed[0].to, json!("bmV3"));
}

#[test]
fn records_are_one_per_parent_and_go_with_it() {
    let records = Records::default();
    let record = |name: &str, ns: &str| Record {
        controller: "hello".to_owned(),
        parent: ParentRef {
            api_version: "fraim.co.jp/v1".to_owned(),
            kind: "Hello".to_owned(),
            namespace: Some(ns.to_owned()),
            name: name.to_owned(),
            uid: format!("uid-{name}"),
            generation: Some(1),
            labels: BTreeMap::new(),
        },
        last_run: "2026-11-23T00:00:00Z".to_owned(),
        outcome: Outcome::Unchanged,
        duration_seconds: 0.001,
        hook_seconds: None,
        plan: Vec::new(),
        error: None,
        requeue: None,
        children: ChildCount::default(),
        conditions: Vec::new(),
        trace_id: None,
        revision: None,
    };
    let key = |name: &str, ns: &str| {
        ParentKey::new_with(
            name,
            crate::controller::cache::SharedType::of(
                &crate::test_support::api_type("fraim.co.jp", "v1", "Hello", true).api,
            ),
        )
        .within(ns)
    };
    records.put(&key("x", "a"), record("x", "a"));
    records.put(&key("x", "a"), record("x", "a"));
    records.put(&key("y", "b"), record("y", "b"));
    assert_eq!(records.len(), 2, "one per parent");
    assert_eq!(records.list(Some("b")).len(), 1);
    records.update(&key("y", "b"), |r| r.outcome = Outcome::Failed);
    assert_eq!(
        records.get(&key("y", "b")).map(|r| r.outcome),
        Some(Outcome::Failed)
    );
    records.forget(&key("x", "a"));
    assert_eq!(records.list(None).len(), 1);
}

#[test]
fn a_record_names_the_revision_that_last_answered_and_records_count_them() {
    let records = Records::default();
    let key = |name: &str| {
        ParentKey::new_with(
            name,
            crate::controller::cache::SharedType::of(
                &crate::test_support::api_type("example.com", "v1", "Widget", true).api,
            ),
        )
        .within("shop")
    };
    let answered_by = |name: &str, revision: Option<&str>| Record {
        controller: "widget".to_owned(),
        parent: ParentRef {
            api_version: "example.com/v1".to_owned(),
            kind: "Widget".to_owned(),
            namespace: Some("shop".to_owned()),
            name: name.to_owned(),
            uid: format!("uid-{name}"),
            generation: Some(1),
            labels: BTreeMap::new(),
        },
        last_run: "2026-11-30T00:00:00Z".to_owned(),
        outcome: Outcome::Unchanged,
        duration_seconds: 0.001,
        hook_seconds: None,
        plan: Vec::new(),
        error: None,
        requeue: None,
        children: ChildCount::default(),
        conditions: Vec::new(),
        trace_id: None,
        revision: revision.map(str::to_owned),
    };
    records.put(&key("a"), answered_by("a", Some("0.1.0")));
    records.put(&key("b"), answered_by("b", Some("0.1.0")));
    records.put(&key("c"), answered_by("c", None));
    assert_eq!(records.answered_by("0.1.0"), 2);
    // The new revision answers `a`; `b`'s next reconcile stops before its
    // hook (a cache not synced): `b` was last answered by 0.1.0 still.
    records.put(&key("a"), answered_by("a", Some("0.2.0")));
    records.put(&key("b"), answered_by("b", None));
    assert_eq!(
        records.get(&key("b")).and_then(|r| r.revision),
        Some("0.1.0".to_owned())
    );
    assert_eq!(
        (records.answered_by("0.1.0"), records.answered_by("0.2.0")),
        (1, 1)
    );
    records.update(&key("b"), |r| r.revision = None);
    assert_eq!(records.answered_by("0.1.0"), 1, "an update keeps it");
    records.forget(&key("b"));
    records.forget(&key("a"));
    assert_eq!(
        (records.answered_by("0.1.0"), records.answered_by("0.2.0")),
        (0, 0),
        "gone with their parents"
    );
    let shown = serde_json::to_value(answered_by("a", Some("0.2.0"))).unwrap();
    assert_eq!(shown["revision"], "0.2.0");
    assert!(
        serde_json::to_value(answered_by("a", None))
            .unwrap()
            .get("revision")
            .is_none()
    );
}
