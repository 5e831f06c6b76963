//! A DecoratorController's hook request and response, as Metacontroller
//! builds and reads them (docs/metacontroller.md §6): the object is
//! `object`, its children `attachments` (grouped by `Kind.group/version`
//! as a composite's children), and the answer edits labels and
//! annotations key by key.

use super::{DecodeResponseError, ObjectMapJson, body, field, objects, top_level};
use kube::core::DynamicObject;
use metahook_core::protocol::decorator::DecoratorResponse;
use serde_json::{Map, Value};

/// A decorator's answer as the driver reads it: `status` `None` leaves the
/// object's status alone.
pub type DecoratorAnswer = DecoratorResponse<Map<String, Value>, Value>;

const KEYS: &[&str] = &[
    "labels",
    "annotations",
    "status",
    "attachments",
    "resyncAfterSeconds",
    "finalized",
];

/// A decorator's sync or finalize request.
pub fn request(
    controller: &Value,
    object: &DynamicObject,
    attachments: &ObjectMapJson<'_>,
    related: &ObjectMapJson<'_>,
    finalizing: bool,
) -> Result<Vec<u8>, serde_json::Error> {
    body(
        ("attachments", attachments),
        controller,
        finalizing,
        ("object", object),
        related,
    )
}

/// Decodes a 200 body. `strict` (v2) rejects unknown top-level keys;
/// absent and `null` fields take Go's zero values, as Metacontroller's
/// decoding gives them.
pub fn decode_response(body: &[u8], strict: bool) -> Result<DecoratorAnswer, DecodeResponseError> {
    let Some(map) = top_level(body, strict, KEYS)? else {
        return Ok(DecoratorAnswer::default());
    };
    let attachments = objects(&map, "attachments")?;
    let resync: f64 = field(&map, "resyncAfterSeconds")?;
    let finalized: bool = field(&map, "finalized")?;
    Ok(DecoratorAnswer {
        labels: field(&map, "labels")?,
        annotations: field(&map, "annotations")?,
        status: field(&map, "status")?,
        attachments,
        resync_after_seconds: Some(resync),
        finalized: Some(finalized),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_removes_a_label_and_absent_status_is_none() {
        let answer = decode_response(
            br#"{"labels": {"a": "1", "b": null}, "attachments": [{"kind": "Service"}]}"#,
            true,
        )
        .unwrap();
        assert_eq!(answer.labels.get("a"), Some(&Some("1".to_owned())));
        assert_eq!(answer.labels.get("b"), Some(&None));
        assert_eq!(answer.status, None);
        assert_eq!(answer.attachments.len(), 1);
        assert_eq!(answer.finalized, Some(false));
    }

    #[test]
    fn v2_refuses_a_composite_key_and_v1_ignores_it() {
        let body = br#"{"children": [], "finalized": true}"#;
        assert!(matches!(
            decode_response(body, true),
            Err(DecodeResponseError::UnknownKey(k)) if k == "children"
        ));
        assert_eq!(decode_response(body, false).unwrap().finalized, Some(true));
    }

    #[test]
    fn a_label_value_that_is_not_a_string_is_refused() {
        assert!(matches!(
            decode_response(br#"{"labels": {"a": 1}}"#, false),
            Err(DecodeResponseError::WrongType { key: "labels", .. })
        ));
    }

    #[test]
    fn the_request_names_the_object_object_and_its_children_attachments() {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "shop"},
        }))
        .unwrap();
        let attachments: ObjectMapJson = [("Service.v1".to_owned(), Default::default())].into();
        let body = request(
            &json!({"kind": "DecoratorController"}),
            &object,
            &attachments,
            &ObjectMapJson::new(),
            false,
        )
        .unwrap();
        let sent: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(sent["object"]["metadata"]["name"], "web-0");
        assert_eq!(sent["attachments"], json!({"Service.v1": {}}));
        assert_eq!(sent["controller"]["status"], json!({}));
        assert_eq!(sent["finalizing"], false);
        assert!(sent.get("parent").is_none() && sent.get("children").is_none());
    }
}
