//! The convergence check passes the parent through the controller's own
//! admission hooks, as the API server would: defaulted, then validated, on
//! the create and on each change.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::CustomResource;
use metahook_core::admission::{Admission, FieldError, Operation, Verdict};
use metahook_core::{Answer, Controller, HookKind, ParentMeta, Request};
use metahook_testing::{Converge, ConvergeError, Refused};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A Board shows its text in a ConfigMap, in as many copies as asked.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Board",
    namespaced,
    status = "BoardStatus"
)]
pub struct BoardSpec {
    text: String,
    /// Absent, the `default` hook makes it the text's length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    copies: Option<u32>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
pub struct BoardStatus {
    #[serde(default)]
    shown: u32,
}

fn sync(req: &Request<Board, ConfigMap>) -> Answer<BoardStatus> {
    let spec = req.parent.spec.as_ref().ok();
    let copies = spec.and_then(|s| s.copies).unwrap_or(0);
    let text = spec
        .map(|s| s.text.repeat(copies as usize))
        .unwrap_or_default();
    Answer::new(BoardStatus { shown: copies }).child(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": req.parent.metadata.name},
        "data": {"text": text},
    }))
}

fn defaults(_: &ParentMeta, spec: &mut BoardSpec) {
    if spec.copies.is_none() {
        spec.copies = Some(spec.text.len() as u32);
    }
}

fn validate(admission: &Admission<Board>) -> Verdict {
    let Some(Ok(spec)) = admission.object.as_ref().map(|o| o.spec.as_ref()) else {
        return Verdict::allow();
    };
    let mut verdict = Verdict::allow();
    if spec.text.is_empty() {
        verdict = verdict.refuse("spec.text", "must not be empty");
    }
    if spec.copies.is_some_and(|c| c > 5) {
        verdict = verdict.refuse("spec.copies", "more than 5");
    }
    let old = admission.old.as_ref().and_then(|o| o.spec.as_ref().ok());
    if old.is_some_and(|old| old.text != spec.text) {
        verdict = verdict.warn("a new text replaces every copy");
    }
    verdict
}

fn boards() -> Controller {
    Controller::composite::<Board>("board")
        .sync(sync)
        .defaults(defaults)
        .validate(validate)
        .build()
}

fn board(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Board",
           "metadata": {"name": "hall", "namespace": "shop"}, "spec": spec})
}

#[test]
fn the_default_hook_fills_in_the_parent_before_it_is_stored_and_the_controller_reads_it() {
    let settled = Converge::new(boards())
        .unwrap()
        .parent(board(json!({"text": "hi"})))
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let parent = settled.parent().unwrap();
    assert_eq!(parent["spec"], json!({"text": "hi", "copies": 2}));
    assert_eq!(parent["status"]["shown"], 2, "sync read the defaulted spec");
    assert_eq!(parent["metadata"]["generation"], 1);
    let shown = settled.object::<ConfigMap>("hall").unwrap();
    assert_eq!(shown["data"]["text"], "hihi");
    assert!(settled.warnings().is_empty(), "{:?}", settled.warnings());
}

#[test]
fn a_create_the_validate_hook_refuses_is_an_error_naming_the_fields_and_nothing_runs() {
    let error = Converge::new(boards())
        .unwrap()
        .parent(board(json!({"text": "", "copies": 9})))
        .run()
        .err()
        .expect("refused");
    let ConvergeError::Refused(refused) = &error else {
        panic!("not a refusal: {error}");
    };
    assert_eq!(
        *refused,
        Refused {
            hook: HookKind::Validate,
            operation: Operation::Create,
            object: "Board shop/hall".to_owned(),
            message: "spec.text: must not be empty; spec.copies: more than 5".to_owned(),
            fields: vec![
                FieldError::new("spec.text", "must not be empty"),
                FieldError::new("spec.copies", "more than 5"),
            ],
            warnings: Vec::new(),
        }
    );
    assert_eq!(
        error.to_string(),
        "the validate hook refused the create of Board shop/hall: \
         spec.text: must not be empty; spec.copies: more than 5"
    );
}

#[test]
fn the_validate_hook_sees_the_defaulted_parent() {
    // Eight characters: eight copies by default, more than the hook allows.
    let error = Converge::new(boards())
        .unwrap()
        .parent(board(json!({"text": "12345678"})))
        .run()
        .err()
        .expect("refused");
    let ConvergeError::Refused(refused) = error else {
        panic!("not a refusal: {error}");
    };
    assert_eq!(
        refused.fields,
        [FieldError::new("spec.copies", "more than 5")]
    );
}

#[test]
fn a_change_is_defaulted_validated_and_warned_about_and_a_refused_one_is_an_error() {
    let settled = Converge::new(boards())
        .unwrap()
        .parent(board(json!({"text": "hi", "copies": 1})))
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let passes = settled.passes();
    // A new text, its copies dropped: defaulted again from the text.
    let changed = settled
        .change(|p| p["spec"] = json!({"text": "hey"}))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(changed.parent().unwrap()["spec"]["copies"], 3);
    assert_eq!(changed.parent().unwrap()["metadata"]["generation"], 2);
    assert_eq!(changed.warnings(), ["a new text replaces every copy"]);
    assert_eq!(
        changed.object::<ConfigMap>("hall").unwrap()["data"]["text"],
        "heyheyhey"
    );
    assert!(
        changed.history_since(passes + 1).len() >= 2,
        "it reconciled"
    );

    let error = changed
        .change(|p| p["spec"] = json!({"text": "", "copies": 7}))
        .err()
        .expect("refused");
    let ConvergeError::Refused(refused) = &error else {
        panic!("not a refusal: {error}");
    };
    assert_eq!(refused.operation, Operation::Update);
    assert_eq!(
        refused.fields,
        [
            FieldError::new("spec.text", "must not be empty"),
            FieldError::new("spec.copies", "more than 5"),
        ]
    );
    assert_eq!(refused.warnings, ["a new text replaces every copy"]);
}

#[test]
fn a_controller_without_admission_hooks_stores_the_parent_as_given() {
    let plain = Controller::composite::<Board>("board").sync(sync).build();
    let settled = Converge::new(plain)
        .unwrap()
        .parent(board(json!({"text": ""})))
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(settled.parent().unwrap()["spec"], json!({"text": ""}));
}
