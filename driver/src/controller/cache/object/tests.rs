use super::*;
use serde_json::json;

fn deployment() -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "u1",
            "resourceVersion": "42",
            "labels": {"app": "web"},
            "annotations": {"a": "1", "b": "two"},
            "ownerReferences": [{"apiVersion": "example.com/v1", "kind": "Hello",
                "name": "h", "uid": "p1", "controller": true}],
            "managedFields": [{"manager": "kubectl", "operation": "Apply",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]
        },
        "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "web"}}}},
        "status": {"readyReplicas": 1, "ratio": 0.5, "text": "a \"quoted\" \u{e9}"}
    })
}

#[test]
fn decodes_to_the_object_it_was_read_from_without_managed_fields() {
    let cached: CachedObject = serde_json::from_value(deployment()).unwrap();
    let decoded = cached.decode().unwrap();
    let mut expected: DynamicObject = serde_json::from_value(deployment()).unwrap();
    expected.metadata.managed_fields = None;
    assert_eq!(
        serde_json::to_value(&decoded).unwrap(),
        serde_json::to_value(&expected).unwrap()
    );
    assert_eq!(
        (&cached.metadata.labels, &cached.metadata.annotations),
        (&None, &None),
        "kept as text"
    );
    assert_eq!(Some(cached.labels()), expected.metadata.labels);
    assert_eq!(cached.label_map().as_ref(), &cached.labels());
    assert_eq!(cached.labels_text(), r#"{"app":"web"}"#);
    assert_eq!(Some(cached.annotations()), expected.metadata.annotations);
    assert_eq!(cached.annotations_text(), r#"{"a":"1","b":"two"}"#);
    assert!(cached.rest().starts_with(r#"{"spec":{"replicas":2"#));
}

#[test]
fn one_copy_of_a_type_for_every_object() {
    let a: CachedObject = serde_json::from_value(deployment()).unwrap();
    let b: CachedObject = serde_json::from_str(&deployment().to_string()).unwrap();
    let (a, b) = (a.types.unwrap(), b.types.unwrap());
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(
        (a.api_version.as_str(), a.kind.as_str()),
        ("apps/v1", "Deployment")
    );
}

#[test]
fn a_listed_item_gets_its_type() {
    let mut item = deployment();
    let object = item.as_object_mut().unwrap();
    object.remove("apiVersion");
    object.remove("kind");
    let mut cached: CachedObject = serde_json::from_value(item).unwrap();
    assert!(cached.types.is_none());
    cached.set_type_if_missing("apps/v1", "Deployment");
    let decoded = cached.decode().unwrap();
    assert_eq!(decoded.types.unwrap().kind, "Deployment");
}

#[test]
fn an_object_with_nothing_but_metadata() {
    let cached: CachedObject =
        serde_json::from_str(r#"{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"a"}}"#)
            .unwrap();
    assert_eq!(cached.rest(), "{}");
    assert_eq!(cached.decode().unwrap().data, json!({}));
}

#[test]
fn what_is_not_an_object_is_refused() {
    assert!(serde_json::from_str::<CachedObject>("[1]").is_err());
    assert!(serde_json::from_str::<CachedObject>(r#"{"metadata":3}"#).is_err());
}

#[test]
fn the_observed_generation_is_read_from_the_kept_text() {
    let mut object = deployment();
    object["status"] = json!({"observedGeneration": 3, "replicas": 2});
    let cached: CachedObject = serde_json::from_value(object.clone()).unwrap();
    assert_eq!(cached.observed_generation(), Some(3));
    object["status"] = json!({"replicas": 2});
    let cached: CachedObject = serde_json::from_value(object.clone()).unwrap();
    assert_eq!(cached.observed_generation(), None);
    object.as_object_mut().unwrap().remove("status");
    let cached: CachedObject = serde_json::from_value(object).unwrap();
    assert_eq!(cached.observed_generation(), None);
}
