//! The Widget's hooks answered whole (insta snapshots, read before
//! accepting), and the controller driven to a settled cluster and deleted
//! through finalize, with no cluster, at every size a Widget may ask for.

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

/// Every size a Widget may ask for settles within three passes, and
/// goes through finalize with its ConfigMap.
#[test]
fn widgets_of_every_size_settle_and_go() {
    for copies in 0..=10 {
        let settled = Converge::new(widget_operator::controller())
            .and_then(|check| check.parent(widget(copies)).max_passes(3).run())
            .unwrap_or_else(|e| panic!("{copies} copies: {e}"));
        let want = vec!["hi"; copies as usize].join(" ");
        let config_map = settled.object::<ConfigMap>("hello").expect("its ConfigMap");
        assert_eq!(config_map["data"], json!({"text": want}));
        let status = &settled.parent().expect("the Widget")["status"];
        assert_eq!(status["written"], want, "{copies} copies");
        let ready = &status["conditions"][0];
        let ready = [&ready["type"], &ready["status"], &ready["reason"]];
        assert_eq!(ready, ["Ready", "True", "Written"], "{copies} copies");
        let gone = settled
            .delete()
            .unwrap_or_else(|e| panic!("{copies} copies: {e}"));
        assert_eq!(
            (gone.parent(), gone.objects::<ConfigMap>().len()),
            (None, 0)
        );
    }
}
