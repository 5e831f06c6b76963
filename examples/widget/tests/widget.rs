//! The Widget's hooks answered whole (insta snapshots, read before
//! accepting), and the controller driven to a settled cluster and deleted
//! through finalize, with no cluster.

use k8s_openapi::api::core::v1::ConfigMap;
use metahook::HookKind;
use metahook_testing::{Converge, Situation};
use serde_json::json;

fn widget(copies: u32) -> serde_json::Value {
    json!({
        "apiVersion": "example.metahook.dev/v1", "kind": "Widget",
        "metadata": {"name": "hello", "namespace": "shop", "uid": "u-1", "generation": 1},
        "spec": {"message": "hi", "copies": copies},
    })
}

fn now() -> jiff::Timestamp {
    "2026-11-22T03:00:00Z".parse().unwrap()
}

#[test]
fn a_new_widget_desires_its_config_map() {
    let answer = Situation::of(widget(2))
        .answer(&widget_operator::controller(), HookKind::Sync, now())
        .unwrap();
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
