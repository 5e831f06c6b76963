//! The Widget controller's hooks answered whole — a recorded request and a
//! situation built from typed objects, snapshot with insta (read every new
//! snapshot before accepting it: `cargo insta review`) — and the controller
//! driven to a settled cluster and deleted through finalize, with no
//! cluster at all (metahook-testing).

use k8s_openapi::api::core::v1::ConfigMap;
use metahook::HookKind;
use metahook_testing::{Converge, Situation};
use serde_json::{Value, json};

fn now() -> metahook::Timestamp {
    "2026-01-01T00:00:00Z".parse().unwrap()
}

fn widget(copies: u32) -> Value {
    json!({
        "apiVersion": "example.metahook.dev/v1", "kind": "Widget",
        "metadata": {"name": "hello", "namespace": "shop", "uid": "u-1", "generation": 1},
        "spec": {"message": "hi", "copies": copies},
    })
}

#[test]
fn a_recorded_request_is_answered_as_before() {
    // As Metacontroller sends it: tests/fixtures/sync.json.
    let request = std::fs::read("tests/fixtures/sync.json").unwrap();
    let sync = widget_operator::controller().hook(HookKind::Sync).unwrap();
    let answer: Value = serde_json::from_slice(&sync(&request, now()).unwrap()).unwrap();
    insta::assert_json_snapshot!(answer);
}

#[test]
fn a_widget_being_deleted_waits_for_its_config_map() {
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "hello", "namespace": "shop"}, "data": {"text": "hi hi"}});
    let answer = Situation::of(widget(2))
        .child(config_map)
        .finalizing()
        .answer(&widget_operator::controller(), HookKind::Finalize, now())
        .unwrap();
    insta::assert_json_snapshot!(answer);
}

#[test]
fn a_widget_settles_and_goes() {
    let settled = Converge::new(widget_operator::controller())
        .unwrap()
        .parent(widget(3))
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(settled.passes() <= 3, "{:#?}", settled.history());
    let status = &settled.parent().unwrap()["status"];
    assert_eq!(status["written"], "hi hi hi");
    assert_eq!(status["conditions"][0]["status"], "True");
    let gone = settled.delete().unwrap_or_else(|e| panic!("{e}"));
    assert!(gone.parent().is_none());
    assert!(gone.objects::<ConfigMap>().is_empty());
}
