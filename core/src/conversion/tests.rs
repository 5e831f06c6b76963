use crate::conversion::ConversionWebhook;
use crate::test_types::{Note, NoteStatus, v2};
use crate::{Answer, Controller, HookError, HookKind, Request, Webhooks};
use serde_json::{Value, json};

fn notes() -> Controller {
    Controller::composite::<Note>("note")
        .sync(|_: &Request<Note>| Answer::new(NoteStatus::default()))
        .version::<v2::Note>()
        .build()
}

fn convert(desired: &str, objects: Value) -> Result<Value, HookError> {
    let review = json!({
        "kind": "ConversionReview",
        "apiVersion": "apiextensions.k8s.io/v1",
        "request": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "desiredAPIVersion": desired, "objects": objects},
    });
    let hook = notes().hook(HookKind::Convert).expect("a convert hook");
    let answer = hook(review.to_string().as_bytes(), jiff::Timestamp::UNIX_EPOCH)?;
    Ok(serde_json::from_slice(&answer).expect("JSON"))
}

/// Metadata as the API server sends it: more than a hook reads, in an
/// order no type would write.
fn metadata(name: &str) -> Value {
    json!({
        "uid": format!("uid-{name}"), "name": name, "namespace": "ns",
        "resourceVersion": "42", "generation": 2, "creationTimestamp": "2026-11-22T03:00:00Z",
        "labels": {"b": "2", "a": "1"}, "annotations": {"note": "kept"},
        "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "example.com/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}],
    })
}

fn v1(name: &str, text: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Note", "metadata": metadata(name),
           "spec": {"text": text}, "status": {"copies": 2, "conditions": []}})
}

fn v2(name: &str, text: &str) -> Value {
    json!({"apiVersion": "example.com/v2", "kind": "Note", "metadata": metadata(name),
           "spec": {"body": {"text": text}}, "status": {"copies": 2, "conditions": []}})
}

#[test]
fn a_list_is_converted_in_order_through_the_hub() {
    let answer = convert("example.com/v2", json!([v1("a", "one"), v1("b", "two")])).unwrap();
    assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(answer["kind"], "ConversionReview");
    assert_eq!(
        answer["response"]["uid"],
        "705ab4f5-6393-11e8-b7cc-42010a800002"
    );
    assert_eq!(answer["response"]["result"], json!({"status": "Success"}));
    assert_eq!(
        answer["response"]["convertedObjects"],
        json!([v2("a", "one"), v2("b", "two")])
    );
    let back = convert(
        "example.com/v1",
        answer["response"]["convertedObjects"].clone(),
    )
    .unwrap();
    assert_eq!(
        back["response"]["convertedObjects"],
        json!([v1("a", "one"), v1("b", "two")])
    );
}

#[test]
fn metadata_is_sent_back_byte_for_byte() {
    // Keys out of order and spaced: a type would sort or drop them.
    let object = r#"{"apiVersion":"example.com/v1","kind":"Note","metadata":{"namespace":"ns", "name":"a","zz":{"y":1,"x":[]}},"spec":{"text":"t"}}"#;
    let review = format!(
        r#"{{"request":{{"uid":"u","desiredAPIVersion":"example.com/v2","objects":[{object}]}}}}"#
    );
    let hook = notes().hook(HookKind::Convert).unwrap();
    let answer =
        String::from_utf8(hook(review.as_bytes(), jiff::Timestamp::UNIX_EPOCH).unwrap()).unwrap();
    assert!(
        answer.contains(r#""metadata":{"namespace":"ns", "name":"a","zz":{"y":1,"x":[]}}"#),
        "{answer}"
    );
}

#[test]
fn an_object_at_the_desired_version_is_passed_as_sent() {
    let answer = convert("example.com/v2", json!([v2("a", "one"), v1("b", "two")])).unwrap();
    assert_eq!(
        answer["response"]["convertedObjects"],
        json!([v2("a", "one"), v2("b", "two")])
    );
}

#[test]
fn no_objects_is_a_success() {
    let answer = convert("example.com/v1", json!([])).unwrap();
    assert_eq!(answer["response"]["result"]["status"], "Success");
    assert_eq!(answer["response"]["convertedObjects"], json!([]));
}

#[test]
fn an_object_of_an_unknown_version_fails_the_review_naming_it() {
    let mut stray = v1("b", "two");
    stray["apiVersion"] = json!("example.com/v3");
    let answer = convert("example.com/v2", json!([v1("a", "one"), stray])).unwrap();
    assert_eq!(answer["response"]["result"]["status"], "Failure");
    assert_eq!(
        answer["response"]["result"]["message"],
        "objects[1] (ns/b) is at example.com/v3, not a version served (example.com/v1, example.com/v2)"
    );
    assert_eq!(answer["response"]["convertedObjects"], json!([]));
}

#[test]
fn an_object_that_does_not_decode_fails_the_review_with_its_path() {
    let mut bad = v2("a", "one");
    bad["spec"]["body"] = json!({"text": 7});
    let answer = convert("example.com/v1", json!([bad])).unwrap();
    assert_eq!(answer["response"]["result"]["status"], "Failure");
    let message = answer["response"]["result"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("objects[0] (ns/a) does not decode as example.com/v2: unexpected request shape at `objects[0].spec.body.text`: invalid type: integer `7`"),
        "{message}"
    );
    let answer = convert("example.com/v1", json!([{"kind": "Note"}])).unwrap();
    let message = answer["response"]["result"]["message"].as_str().unwrap();
    assert!(
        message.contains("`objects[0]`: missing field `apiVersion`"),
        "{message}"
    );
}

#[test]
fn an_unknown_desired_version_fails_the_review() {
    let answer = convert("example.com/v9", json!([v1("a", "one")])).unwrap();
    assert_eq!(
        answer["response"]["result"]["message"],
        "cannot convert to example.com/v9: the versions served are example.com/v1, example.com/v2"
    );
}

#[test]
fn a_review_that_is_not_one_is_a_decode_error() {
    let hook = notes().hook(HookKind::Convert).unwrap();
    let answer = hook(br#"{"request": {"uid": "u"}}"#, jiff::Timestamp::UNIX_EPOCH);
    assert!(
        matches!(&answer, Err(HookError::Decode(e)) if e.to_string().contains("desiredAPIVersion")),
        "{answer:?}"
    );
}

#[test]
fn the_crd_with_conversion_serves_every_version_and_stores_the_hub() {
    let notes = notes();
    let webhook = ConversionWebhook::url("https://127.0.0.1:8443/").ca_bundle(b"PEM".to_vec());
    let crds = notes.crds_with_conversion(&webhook).unwrap();
    assert_eq!(crds.len(), 1);
    let crd = serde_json::to_value(&crds[0]).unwrap();
    let versions = crd["spec"]["versions"].as_array().unwrap();
    let names: Vec<_> = versions
        .iter()
        .map(|v| (v["name"].clone(), v["served"].clone(), v["storage"].clone()))
        .collect();
    assert_eq!(
        names,
        [
            (json!("v1"), json!(true), json!(true)),
            (json!("v2"), json!(true), json!(false))
        ]
    );
    for version in versions {
        let status = &version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"];
        assert!(status["observedGeneration"].is_object(), "{version}");
    }
    assert_eq!(
        crd["spec"]["conversion"],
        json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "https://127.0.0.1:8443/note/convert", "caBundle": "UEVN"},
            "conversionReviewVersions": ["v1"],
        }})
    );
    let in_cluster = notes
        .crds_with_conversion(&ConversionWebhook::service(&Webhooks::default()))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&in_cluster[0].spec.conversion).unwrap()["webhook"]["clientConfig"],
        json!({"service": {"name": "metahook", "namespace": "metahook", "path": "/note/convert", "port": 80}})
    );
    // What `crds` prints and the chart installs keeps to the hub.
    assert_eq!(notes.crds()[0].spec.versions.len(), 1);
    assert!(notes.crds()[0].spec.conversion.is_none());
}

#[test]
fn a_controller_of_one_version_has_no_convert_hook() {
    let one = Controller::composite::<Note>("note")
        .sync(|_: &Request<Note>| Answer::new(NoteStatus::default()))
        .build();
    assert!(one.hook(HookKind::Convert).is_none());
    let webhook = ConversionWebhook::url("https://127.0.0.1:8443");
    assert_eq!(one.crds_with_conversion(&webhook).unwrap(), one.crds());
}

#[test]
fn the_convert_hook_is_not_metacontrollers() {
    let manifest = notes().manifest(&Webhooks::default());
    assert!(
        manifest["spec"]["hooks"].get("convert").is_none(),
        "{manifest}"
    );
    assert!(notes().check().is_ok());
}

#[test]
fn a_version_declared_twice_is_a_declaration_error() {
    let twice = Controller::composite::<Note>("note")
        .sync(|_: &Request<Note>| Answer::new(NoteStatus::default()))
        .version::<v2::Note>()
        .version::<v2::Note>()
        .version::<Note>()
        .build();
    assert_eq!(
        twice.check().unwrap_err().problems,
        [
            "its parent's version example.com/v2 is declared twice",
            "its parent's version example.com/v1 is declared twice",
        ]
    );
}
