use super::*;
use crate::protocol::RelatedResourceRule;
use serde::Serialize;
use serde_json::json;

/// A `sync` or `finalize` response as serde writes it from a struct
/// (docs/metacontroller.md §1.4, §1.5): what [`Answer::to_json`] must
/// write, byte for byte.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SyncResponse<S, C> {
    status: S,
    children: Vec<C>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resync_after_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    finalized: Option<bool>,
}

#[test]
fn a_related_rule_names_its_type_as_the_type_does() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Namespace;
    let every = RelatedResourceRule::of::<Namespace>();
    assert_eq!(
        serde_json::to_value(&every).unwrap(),
        json!({"apiVersion": "v1", "resource": "namespaces", "labelSelector": {}})
    );
    let one = RelatedResourceRule::of::<Deployment>()
        .in_namespace("shop")
        .named(["web"]);
    assert_eq!(
        serde_json::to_value(&one).unwrap(),
        json!({"apiVersion": "apps/v1", "resource": "deployments", "namespace": "shop", "names": ["web"]})
    );
}

#[test]
fn an_answer_is_the_bytes_serde_writes_for_the_protocols_response() {
    let children = [
        json!({"kind": "A", "n": 1}),
        json!({"kind": "B", "s": "é\"x"}),
    ];
    for (resync, finalized) in [
        (None, None),
        (Some(1.5), None),
        (None, Some(true)),
        (Some(0.25), Some(false)),
    ] {
        let mut answer = Answer::new(json!({"ready": true})).children(children.iter());
        if let Some(seconds) = resync {
            answer = answer.resync_after_seconds(seconds);
        }
        if let Some(done) = finalized {
            answer = answer.finalized(done);
        }
        let expected = serde_json::to_vec(&SyncResponse {
            status: json!({"ready": true}),
            children: children.to_vec(),
            resync_after_seconds: resync,
            finalized,
        })
        .unwrap();
        assert_eq!(answer.to_json().unwrap(), expected);
        assert_eq!(
            answer.desired(),
            [r#"{"kind":"A","n":1}"#, r#"{"kind":"B","s":"é\"x"}"#]
        );
    }
    let none = Answer::new(json!({}));
    assert_eq!(none.to_json().unwrap(), br#"{"status":{},"children":[]}"#);
    assert!(none.desired().is_empty());
}
