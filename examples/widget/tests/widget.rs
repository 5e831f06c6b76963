//! The Widget controller's hooks answered whole — a recorded request and a
//! situation built from typed objects, snapshot with insta (read every new
//! snapshot before accepting it: `cargo insta review`) — and the controller
//! driven to a settled cluster and deleted through finalize, with no
//! cluster at all (metahook-testing).

use k8s_openapi::api::core::v1::ConfigMap;
use metahook::HookKind;
use metahook_testing::{Converge, ConvergeError, Situation};
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
fn a_widget_asks_for_its_config_map_and_says_when_it_holds_the_text() {
    let spec = widget_operator::WidgetSpec {
        message: "hi".to_owned(),
        copies: 2,
    };
    let mut widget = widget_operator::Widget::new("hello", spec);
    widget.metadata.namespace = Some("shop".to_owned());
    let controller = widget_operator::controller();
    // Before its ConfigMap exists: it asks for one, and is not Ready.
    let first = Situation::of(&widget).sent_by(&controller);
    let answer = widget_operator::sync(&first.request(now()).unwrap());
    let [config_map] = &answer.desired_of::<ConfigMap>().unwrap()[..] else {
        panic!("one ConfigMap: {:?}", answer.desired())
    };
    let text = config_map.data.as_ref().and_then(|d| d.get("text"));
    assert_eq!(text.map(String::as_str), Some("hi hi"));
    assert!(answer.status().conditions.is_false("Ready"));
    // With it observed as asked for (the engine's label and owner added):
    // Ready.
    let second = Situation::of(&widget)
        .child(config_map)
        .sent_by(&controller);
    let answer = widget_operator::sync(&second.request(now()).unwrap());
    assert_eq!(answer.status().written, "hi hi");
    assert!(answer.status().conditions.is_true("Ready"));
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

/// The text the Widget's ConfigMap holds, as the cluster has it.
fn text(settled: &metahook_testing::Converged) -> Option<String> {
    let config_map = settled.get::<ConfigMap>("hello")?;
    config_map.data?.get("text").cloned()
}

#[test]
fn a_changed_spec_settles_again_and_an_invalid_one_changes_nothing() {
    let settled = Converge::new(widget_operator::controller())
        .unwrap()
        .parent(widget(2))
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(text(&settled).as_deref(), Some("hi hi"));
    // 2 copies become 4: written again, and settled.
    let passes = settled.passes();
    let changed = settled
        .change(|widget| widget["spec"]["copies"] = json!(4))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(text(&changed).as_deref(), Some("hi hi hi hi"));
    assert!(
        changed.history_since(passes + 1).len() <= 3,
        "{:#?}",
        changed.history()
    );
    let status = changed
        .parent_as::<widget_operator::Widget>()
        .unwrap()
        .status
        .unwrap();
    assert!(status.conditions.is_true("Ready"), "{status:?}");
    // A spec that does not fit its type: the ConfigMap is kept as it is,
    // and the status says why.
    let invalid = changed
        .change(|widget| widget["spec"]["copies"] = json!("many"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(text(&invalid).as_deref(), Some("hi hi hi hi"));
    assert_eq!(invalid.all::<ConfigMap>().len(), 1);
    let ready = &invalid.parent().unwrap()["status"]["conditions"][0];
    assert_eq!(ready["reason"], "InvalidSpec", "{ready}");
}

#[test]
fn a_widget_whose_text_would_not_fit_its_config_map_is_refused() {
    // What the schema cannot say: 10 copies of 200,000 bytes pass 1 MiB.
    let mut big = widget(10);
    big["spec"]["message"] = json!("x".repeat(200_000));
    // Converge asks the validate hook before it stores the Widget, as the
    // API server does.
    let refused = Converge::new(widget_operator::controller())
        .unwrap()
        .parent(big)
        .run();
    let Err(ConvergeError::Refused(refused)) = refused else {
        panic!("a Widget whose text does not fit was stored");
    };
    assert_eq!(refused.fields[0].field, "spec.message");
    assert!(
        refused.message.contains("a ConfigMap holds"),
        "{}",
        refused.message
    );
}
