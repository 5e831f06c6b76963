use super::defaults::spec_patch;
use super::*;
use crate::hook::{HookError, HookKind};
use crate::test_types::{Note, NoteStatus};
use crate::{Answer, Controller, DecodeError, Request, Timestamp};
use serde_json::{Value, json};

/// An AdmissionReview as kube-apiserver sends it for a Note.
fn review(operation: &str, object: Value, old: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "example.com", "version": "v1", "kind": "Note"},
            "resource": {"group": "example.com", "version": "v1", "resource": "notes"},
            "requestKind": {"group": "example.com", "version": "v1", "kind": "Note"},
            "requestResource": {"group": "example.com", "version": "v1", "resource": "notes"},
            "name": "shopping",
            "namespace": "home",
            "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": object,
            "oldObject": old,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }))
    .unwrap()
}

fn note(text: &str) -> Value {
    json!({
        "apiVersion": "example.com/v1", "kind": "Note",
        "metadata": {"name": "shopping", "namespace": "home", "uid": "u-1", "generation": 1},
        "spec": {"text": text},
    })
}

fn sync(_: &Request<Note>) -> Answer<NoteStatus> {
    Answer::new(NoteStatus::default())
}

/// Text shorter than 10 characters, and no change of it once stored.
fn validate(admission: &Admission<Note>) -> Verdict {
    let text = |p: &Option<crate::Parent<Note>>| {
        p.as_ref()
            .and_then(|p| p.spec.as_ref().ok())
            .map(|s| s.text.clone())
    };
    let mut verdict = Verdict::allow();
    if let Some(new) = text(&admission.object) {
        if new.len() >= 10 {
            verdict = verdict.refuse("spec.text", "10 characters or more");
        }
        if new.is_empty() {
            verdict = verdict.warn("an empty note");
        }
    }
    if admission.operation == Operation::Update && text(&admission.object) != text(&admission.old) {
        verdict = verdict.refuse("spec.text", "cannot change once written");
    }
    verdict
}

fn call(controller: &Controller, kind: HookKind, body: &[u8]) -> Result<Value, HookError> {
    let hook = controller.hook(kind).expect("the hook");
    let answer = hook(body, Timestamp::UNIX_EPOCH)?;
    Ok(serde_json::from_slice(&answer).unwrap())
}

fn notes() -> Controller {
    Controller::composite::<Note>("note")
        .sync(sync)
        .validate(validate)
        .defaults(|meta, spec| {
            if spec.text.is_empty() {
                spec.text = format!("about {}", meta.name);
            }
        })
        .build()
}

#[test]
fn an_allowed_create_answers_the_review_it_was_asked() {
    let answer = call(
        &notes(),
        HookKind::Validate,
        &review("CREATE", note("milk"), Value::Null),
    )
    .unwrap();
    assert_eq!(
        answer,
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": true},
        })
    );
}

#[test]
fn a_refusal_names_each_field_and_the_api_server_shows_the_message() {
    let answer = call(
        &notes(),
        HookKind::Validate,
        &review("UPDATE", note("milk and eggs"), note("milk")),
    )
    .unwrap();
    assert_eq!(
        answer["response"],
        json!({
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "allowed": false,
            "status": {
                "code": 422,
                "reason": "Invalid",
                "message": "spec.text: 10 characters or more; spec.text: cannot change once written",
                "details": {"causes": [
                    {"reason": "FieldValueInvalid", "field": "spec.text", "message": "10 characters or more"},
                    {"reason": "FieldValueInvalid", "field": "spec.text", "message": "cannot change once written"},
                ]},
            },
        })
    );
}

#[test]
fn warnings_reach_the_client_when_allowed() {
    let answer = call(
        &notes(),
        HookKind::Validate,
        &review("CREATE", note(""), Value::Null),
    )
    .unwrap();
    assert_eq!(answer["response"]["allowed"], true);
    assert_eq!(answer["response"]["warnings"], json!(["an empty note"]));
}

#[test]
fn a_delete_has_only_the_old_object() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let record = seen.clone();
    let controller = Controller::composite::<Note>("note")
        .sync(sync)
        .validate(move |a: &Admission<Note>| {
            *record.lock().unwrap() = Some((
                a.operation,
                a.object.is_none(),
                a.old.as_ref().map(|o| o.metadata.name.clone()),
                a.user.username.clone(),
            ));
            Verdict::allow()
        })
        .build();
    call(
        &controller,
        HookKind::Validate,
        &review("DELETE", Value::Null, note("milk")),
    )
    .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        Some((
            Operation::Delete,
            true,
            Some("shopping".to_owned()),
            "alice".to_owned()
        ))
    );
}

#[test]
fn an_object_of_another_shape_is_a_decode_error_with_its_path() {
    let mut bad = note("milk");
    bad["metadata"]["name"] = json!(7);
    let err = call(
        &notes(),
        HookKind::Validate,
        &review("CREATE", bad, Value::Null),
    )
    .unwrap_err();
    match err {
        HookError::Decode(DecodeError::Shape { path, .. }) => {
            assert_eq!(path, "request.object.metadata.name");
        }
        other => panic!("expected a shape error, got {other:?}"),
    }
}

#[test]
fn defaults_answer_a_json_patch_of_the_spec_only() {
    let answer = call(
        &notes(),
        HookKind::Default,
        &review("CREATE", note(""), Value::Null),
    )
    .unwrap();
    let response = &answer["response"];
    assert_eq!(response["allowed"], true);
    assert_eq!(response["patchType"], "JSONPatch");
    let patch: k8s_openapi::ByteString = serde_json::from_value(response["patch"].clone()).unwrap();
    let ops: Value = serde_json::from_slice(&patch.0).unwrap();
    assert_eq!(
        ops,
        json!([{"op": "replace", "path": "/spec/text", "value": "about shopping"}])
    );
}

#[test]
fn defaults_that_change_nothing_send_no_patch() {
    let answer = call(
        &notes(),
        HookKind::Default,
        &review("UPDATE", note("milk"), note("milk")),
    )
    .unwrap();
    assert_eq!(
        answer["response"],
        json!({"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": true})
    );
}

#[test]
fn a_patch_leaves_alone_what_the_type_writes_differently() {
    // The type writes `replicas: null` for an absent field and knows no
    // `extra`; the hook set `image` only.
    let given = json!({"extra": {"kept": true}, "name": "web"});
    let before = json!({"name": "web", "replicas": null, "image": null});
    let after = json!({"name": "web", "replicas": null, "image": "nginx"});
    let patch = spec_patch(Some(given), &before, &after).unwrap().unwrap();
    let ops: Value = serde_json::from_slice(&patch).unwrap();
    assert_eq!(
        ops,
        json!([{"op": "add", "path": "/spec/image", "value": "nginx"}])
    );
}

#[test]
fn a_patch_adds_a_spec_the_object_lacked_and_removes_what_the_hook_removed() {
    let patch = spec_patch(None, &json!({}), &json!({"size": 3}))
        .unwrap()
        .unwrap();
    let ops: Value = serde_json::from_slice(&patch).unwrap();
    assert_eq!(
        ops,
        json!([{"op": "add", "path": "/spec", "value": {"size": 3}}])
    );
    let given = json!({"old": {"a": 1}, "nested": {"x": 1, "y": 2}});
    let before = json!({"old": {"a": 1}, "nested": {"x": 1, "y": 2}});
    let after = json!({"nested": {"x": 1, "y": 5}});
    let patch = spec_patch(Some(given.clone()), &before, &after)
        .unwrap()
        .unwrap();
    let ops: Vec<json_patch::PatchOperation> = serde_json::from_slice(&patch).unwrap();
    let mut applied = json!({ "spec": given });
    json_patch::patch(&mut applied, &ops).unwrap();
    assert_eq!(applied, json!({"spec": {"nested": {"x": 1, "y": 5}}}));
}

#[test]
fn admission_hooks_are_not_in_the_compositecontroller() {
    let controller = notes();
    assert_eq!(
        controller.hook_kinds().collect::<Vec<_>>(),
        [HookKind::Sync, HookKind::Validate, HookKind::Default]
    );
    let manifest = controller.manifest(&crate::Webhooks::default());
    let hooks = manifest["spec"]["hooks"].as_object().unwrap();
    assert_eq!(hooks.keys().collect::<Vec<_>>(), ["sync"]);
}

#[test]
fn each_admission_hook_has_a_webhook_configuration_at_the_service() {
    let webhooks = crate::Webhooks {
        service: "notes".to_owned(),
        namespace: "ops".to_owned(),
        port: 443,
    };
    let configs = notes().webhook_configurations(&webhooks);
    let kinds: Vec<_> = configs.iter().map(|c| c["kind"].clone()).collect();
    assert_eq!(
        kinds,
        [
            json!("ValidatingWebhookConfiguration"),
            json!("MutatingWebhookConfiguration")
        ]
    );
    let validate = &configs[0]["webhooks"][0];
    assert_eq!(validate["name"], "validate.note.example.com");
    assert_eq!(
        validate["clientConfig"]["service"],
        json!({"name": "notes", "namespace": "ops", "port": 443, "path": "/note/validate"})
    );
    assert_eq!(
        validate["rules"],
        json!([{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                "resources": ["notes"], "scope": "Namespaced"}])
    );
    assert_eq!(
        validate["namespaceSelector"]["matchExpressions"][0]["values"],
        json!(["ops"])
    );
    assert_eq!(
        configs[1]["webhooks"][0]["clientConfig"]["service"]["path"],
        "/note/default"
    );
    // Without admission hooks, none.
    let plain = Controller::composite::<Note>("note").sync(sync).build();
    assert!(plain.webhook_configurations(&webhooks).is_empty());
}
