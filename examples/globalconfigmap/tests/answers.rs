//! Every request in `fixtures/` (hook v1, as Metacontroller sends them for
//! the example's GlobalConfigMap) through its hook — `customize-*` the
//! customize hook, the others sync — as the hook service calls it, at a
//! pinned time. Each whole answer — or the hook's error — is an insta
//! snapshot in `tests/snapshots/` (read each before accepting it); the
//! tests after it check what matters without a snapshot.

use metahook::{Controller, HookKind};
use metahook_testing::Recorded;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// Declared once: building its CRD's schema is most of a test's time.
fn controller() -> &'static Controller {
    static CONTROLLER: OnceLock<Controller> = OnceLock::new();
    CONTROLLER.get_or_init(metahook_example_globalconfigmap::controller)
}

fn fixtures() -> Recorded {
    Recorded::in_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures"))
}

/// The answer to `fixtures/<name>.json` — of the customize hook for
/// `customize-*`, of sync for the others — or `{"error": ...}`.
fn answer(name: &str) -> Value {
    let kind = if name.starts_with("customize") {
        HookKind::Customize
    } else {
        HookKind::Sync
    };
    let now = "2026-11-22T03:00:00Z".parse().expect("a time");
    match fixtures().answer(controller(), kind, name, now) {
        Ok(answer) => answer,
        Err(e) => json!({"error": e.to_string()}),
    }
}

#[test]
fn every_fixture_answers_as_its_snapshot() {
    let names = fixtures().names().expect("fixtures/");
    assert!(names.len() >= 7, "fixtures missing: {names:?}");
    for name in names.iter().map(String::as_str) {
        insta::assert_json_snapshot!(name, answer(name));
    }
}

/// `namespace` of each desired copy, in order.
fn copies(answer: &Value) -> Vec<&str> {
    answer["children"]
        .as_array()
        .expect("children")
        .iter()
        .map(|c| c["metadata"]["namespace"].as_str().expect("a namespace"))
        .collect()
}

#[test]
fn customize_asks_for_the_source_and_every_namespace() {
    let rules = &answer("customize")["relatedResources"];
    assert_eq!(
        rules,
        &json!([
            {"apiVersion": "v1", "resource": "configmaps", "namespace": "global", "names": ["globalsettings"]},
            {"apiVersion": "v1", "resource": "namespaces", "labelSelector": {}},
        ])
    );
}

#[test]
fn a_copy_goes_to_every_namespace_but_the_sources_and_those_leaving() {
    let a = answer("copies");
    assert_eq!(
        copies(&a),
        ["default", "first", "kube-system", "second", "third"]
    );
    assert_eq!(a["status"]["working"], "fine");
    for copy in a["children"].as_array().expect("children") {
        assert_eq!(copy["metadata"]["name"], "globalsettings");
        assert_eq!(copy["data"], json!({"some": "value", "other": "value"}));
    }
}

#[test]
fn copies_follow_the_source_and_go_with_it() {
    let changed = answer("source-changed");
    assert_eq!(changed["children"][0]["data"], json!({"some": "new value"}));
    let deleted = answer("source-deleted");
    assert!(copies(&deleted).is_empty());
    assert_eq!(
        deleted["status"]["working"],
        "no ConfigMap global/globalsettings to copy"
    );
}

#[test]
fn an_unreadable_spec_is_a_failed_hook_that_says_where() {
    let error = answer("unreadable-spec")["error"].to_string();
    assert!(error.contains("`sourceNamespace`"), "{error}");
    // Customize asks for nothing it cannot name.
    assert_eq!(
        answer("customize-unreadable-spec")["relatedResources"],
        json!([])
    );
}
