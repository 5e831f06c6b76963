//! The Widget controller: a `Widget` keeps its message, repeated as many
//! times as it asks, in a ConfigMap of its own; its status says whether
//! the ConfigMap holds it. Deleted, it waits until the ConfigMap is gone.
//! The API server asks it before it stores one (`validate`): the text must
//! fit in one ConfigMap, which the schema cannot say.
//!
//! Each hook is a plain function from what is observed to what should
//! exist; metahook serves it, drives it and renders it (`src/main.rs`).
#![forbid(unsafe_code)]

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResource;
use metahook::admission::{Admission, FieldError, Verdict};
use metahook::{Answer, Conditions, Controller, Request, condition_false, condition_true};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A Widget: `message`, `copies` times, in a ConfigMap.
#[derive(CustomResource, Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "example.metahook.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
pub struct WidgetSpec {
    pub message: String,
    /// How many times the message is written (0 to 10).
    #[schemars(range(min = 0, max = 10))]
    pub copies: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
pub struct WidgetStatus {
    /// What the ConfigMap holds now.
    #[serde(default)]
    pub written: String,
    #[serde(default)]
    pub conditions: Conditions,
}

/// What the hooks are given: the Widget and its ConfigMaps. The type says
/// which children the controller owns: ConfigMaps, updated in place.
pub type WidgetRequest = Request<Widget, ConfigMap>;

/// The text the ConfigMap should hold.
fn text(spec: &WidgetSpec) -> String {
    vec![spec.message.as_str(); spec.copies.min(10) as usize].join(" ")
}

/// The most text one ConfigMap holds: the API server refuses one whose
/// data (keys included: `text`) passes 1 MiB.
pub const MAX_TEXT_BYTES: usize = 1024 * 1024 - "text".len();

/// What the schema cannot say: the text, `copies` times the message, must
/// fit in the ConfigMap. `validate` refuses such a Widget before it is
/// stored; `sync` reports one stored before the webhook was installed.
pub fn check(spec: &WidgetSpec) -> Result<(), FieldError> {
    let copies = spec.copies.min(10) as usize;
    let bytes = spec
        .message
        .len()
        .saturating_mul(copies)
        .saturating_add(copies.saturating_sub(1));
    if bytes > MAX_TEXT_BYTES {
        return Err(FieldError::new(
            "spec.message",
            format!("{copies} copies take {bytes} bytes; a ConfigMap holds {MAX_TEXT_BYTES}"),
        ));
    }
    Ok(())
}

/// The `validate` hook: refuses a Widget whose text would not fit. A spec
/// that does not fit the type never gets here (the schema refuses it
/// first), and is allowed.
pub fn validate(admission: &Admission<Widget>) -> Verdict {
    match admission.object.as_ref().map(|widget| &widget.spec) {
        Some(Ok(spec)) => Verdict::refusing(check(spec).err()),
        _ => Verdict::allow(),
    }
}

fn config_map(name: &str, text: String) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("text".to_owned(), text)])),
        ..ConfigMap::default()
    }
}

/// What the observed ConfigMap holds.
fn written(req: &WidgetRequest) -> String {
    req.children
        .get(&req.parent.metadata.name)
        .and_then(|c| c.data.as_ref()?.get("text").cloned())
        .unwrap_or_default()
}

/// The ConfigMap, and a status saying whether it holds the message.
pub fn sync(req: &WidgetRequest) -> Answer<WidgetStatus> {
    let name = &req.parent.metadata.name;
    let written = written(req);
    let checked = req.parent.spec.as_ref().map_err(ToString::to_string);
    let checked = checked.and_then(|spec| check(spec).map(|()| spec).map_err(|e| e.to_string()));
    let (want, ready) = match checked {
        Ok(spec) if written == text(spec) => (
            Some(text(spec)),
            condition_true("Ready", "Written").message("the ConfigMap holds the message"),
        ),
        Ok(spec) => (
            Some(text(spec)),
            condition_false("Ready", "Writing").message("the ConfigMap is being written"),
        ),
        Err(why) => (
            None,
            condition_false("Ready", "InvalidSpec").message(format!("the spec is invalid: {why}")),
        ),
    };
    let status = WidgetStatus {
        conditions: req.conditions([ready]),
        written: written.clone(),
    };
    match want {
        Some(want) => Answer::new(status).child(config_map(name, want)),
        // Nothing is lost: an invalid spec keeps what is there.
        None if req.children.is_empty() => Answer::new(status),
        None => Answer::new(status).child(config_map(name, written)),
    }
}

/// Desires nothing, and lets the Widget go once its ConfigMap is gone.
pub fn finalize(req: &WidgetRequest) -> Answer<WidgetStatus> {
    let deleting = condition_false("Ready", "Deleting").message("the Widget is being deleted");
    let status = WidgetStatus {
        written: written(req),
        conditions: req.conditions([deleting]),
    };
    Answer::new(status).finalized(req.children.is_empty())
}

/// The Widget controller, declared. Its revision is the crate's version:
/// each reconcile record names the version that answered its Widget.
pub fn controller() -> Controller {
    Controller::composite::<Widget>("widget")
        .revision(env!("CARGO_PKG_VERSION"))
        .sync(sync)
        .finalize(finalize)
        .validate(validate)
        .build()
}
