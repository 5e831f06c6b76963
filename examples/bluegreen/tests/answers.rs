//! Every request in `fixtures/` (hook v1, as Metacontroller sends them at
//! each step of the example's test.sh) through the sync hook, as the hook
//! service calls it, at a pinned time. Each whole answer — or the hook's
//! error — is an insta snapshot in `tests/snapshots/` (read each before
//! accepting it); the tests after it check the steps that matter without
//! a snapshot.

use metahook::{Controller, HookKind};
use metahook_testing::Recorded;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// Declared once: building its CRD's schema is most of a test's time.
fn controller() -> &'static Controller {
    static CONTROLLER: OnceLock<Controller> = OnceLock::new();
    CONTROLLER.get_or_init(metahook_example_bluegreen::controller)
}

fn fixtures() -> Recorded {
    Recorded::in_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures"))
}

/// The sync hook's answer to `fixtures/<name>.json`, or `{"error": ...}`.
fn answer(name: &str) -> Value {
    let now = "2026-11-22T03:00:00Z".parse().expect("a time");
    match fixtures().answer(controller(), HookKind::Sync, name, now) {
        Ok(answer) => answer,
        Err(e) => json!({"error": e.to_string()}),
    }
}

#[test]
fn every_fixture_answers_as_its_snapshot() {
    let names = fixtures().names().expect("fixtures/");
    assert!(names.len() >= 8, "fixtures missing: {names:?}");
    for name in names.iter().map(String::as_str) {
        insta::assert_json_snapshot!(name, answer(name));
    }
}

/// The children by kind and name.
fn child<'a>(answer: &'a Value, kind: &str, name: &str) -> &'a Value {
    answer["children"]
        .as_array()
        .expect("children")
        .iter()
        .find(|c| c["kind"] == kind && c["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in {answer}"))
}

fn service_color(answer: &Value) -> &Value {
    &child(answer, "Service", "nginx-frontend")["spec"]["selector"]["color"]
}

fn replicas<'a>(answer: &'a Value, color: &str) -> &'a Value {
    &child(answer, "ReplicaSet", &format!("nginx-{color}"))["spec"]["replicas"]
}

#[test]
fn the_service_moves_only_once_every_new_pod_is_available() {
    for step in ["rollout-started", "rollout-not-yet-available"] {
        let a = answer(step);
        assert_eq!(service_color(&a), "blue", "{step}");
        assert_eq!(a["status"]["activeColor"], "blue", "{step}");
        assert_eq!(replicas(&a, "green"), 3, "{step}");
    }
    let a = answer("rollout-available");
    assert_eq!(service_color(&a), "green");
    assert_eq!(a["status"]["activeColor"], "green");
    assert_eq!(a["status"]["active"]["availableReplicas"], 3);
    // The old pods keep serving until the Service has moved.
    assert_eq!(replicas(&a, "blue"), 3);
}

#[test]
fn the_old_replicaset_is_scaled_down_once_the_service_has_moved() {
    let a = answer("rollout-switched");
    assert_eq!(service_color(&a), "green");
    assert_eq!(replicas(&a, "blue"), 0);
    assert_eq!(replicas(&a, "green"), 3);
}

#[test]
fn the_new_template_waits_until_the_idle_replicaset_runs_no_old_pod() {
    let a = answer("rollout-waits-for-old-pods");
    let blue = child(&a, "ReplicaSet", "nginx-blue");
    assert_eq!(blue["spec"]["replicas"], 0);
    let labels = &blue["spec"]["template"]["metadata"]["labels"];
    assert!(labels.get("new2").is_none(), "{labels}");
}

#[test]
fn an_unreadable_spec_is_a_failed_hook_that_says_where() {
    let error = answer("unreadable-spec")["error"].to_string();
    assert!(error.contains("spec.replicas"), "{error}");
}
