use super::*;
use serde_json::json;
use std::collections::BTreeMap;

/// The one annotation a test's view reads.
#[derive(Debug, Clone, PartialEq)]
struct SaidAt;

impl KeptAnnotations for SaidAt {
    const KEYS: &'static [&'static str] = &["example.com/said-at"];
}

#[test]
fn only_the_annotations_a_view_names_are_kept() {
    let annotations = json!({
        "name": "x",
        "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{\"kind\":\"X\"}",
            "metacontroller.k8s.io/last-applied-configuration": "{\"kind\":\"X\"}",
            "example.com/said-at": "2026-11-22T03:00:00Z",
            "example.com/other": "kept by nobody"
        }
    });
    let meta: Meta<SaidAt> = serde_json::from_value(annotations.clone()).unwrap();
    assert_eq!(
        meta.annotations,
        BTreeMap::from([(
            "example.com/said-at".to_owned(),
            "2026-11-22T03:00:00Z".to_owned()
        )])
    );
    let meta: Meta = serde_json::from_value(annotations).unwrap();
    assert!(meta.annotations.is_empty());
}

#[test]
fn a_parent_keeps_its_first_labels_and_annotations_but_last_applied_copies() {
    let many: serde_json::Map<String, serde_json::Value> =
        (0..100).map(|i| (format!("k{i:03}"), json!("v"))).collect();
    let meta: ParentMeta = serde_json::from_value(json!({
        "name": "p",
        "labels": many,
        "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
            "example.com/greeting": "hi"
        }
    }))
    .unwrap();
    assert_eq!(meta.labels.len(), MAX_KEPT_ENTRIES);
    assert_eq!(meta.labels.keys().next().unwrap(), "k000");
    assert_eq!(
        meta.annotations,
        BTreeMap::from([("example.com/greeting".to_owned(), "hi".to_owned())])
    );
    assert!(serde_json::from_value::<ParentMeta>(json!({"labels": {"a": 1}})).is_err());
}

#[test]
fn annotations_of_the_wrong_shape_are_still_refused() {
    assert!(serde_json::from_value::<Meta>(json!({"annotations": {"a": 1}})).is_err());
    assert!(serde_json::from_value::<Meta>(json!({"annotations": null})).is_err());
    assert!(serde_json::from_value::<Meta>(json!({"annotations": []})).is_err());
}
