//! The Widget controller: a `Widget` keeps its message, repeated as many
//! times as it asks, in a ConfigMap of its own; its status says whether
//! the ConfigMap holds it. Deleted, it waits until the ConfigMap is gone.
//!
//! What `metahook new` writes does the same with k8s-openapi's types; this
//! one shows the other way, for a controller whose children are large or
//! many: it reads its ConfigMaps through a view of the one field it needs
//! ([`Written`], an [`Object`] of its own: nothing else of a ConfigMap is
//! kept), and desires them as plain JSON.
#![forbid(unsafe_code)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use metahook::objects::Meta;
use metahook::{
    Answer, Controller, HasConditions, Object, Request, TypeRef, UpdateStrategy, Wanted,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

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
    #[serde(default, deserialize_with = "metahook::conditions::firsts")]
    pub conditions: Vec<Condition>,
}

impl HasConditions for WidgetStatus {
    fn conditions(&self) -> &[Condition] {
        &self.conditions
    }
}

/// A ConfigMap as the hooks read it: its name and namespace, and the text
/// it holds. Its other keys, labels and annotations are checked as they
/// are decoded and not kept.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Written {
    pub metadata: Meta,
    pub data: Text,
}

/// The one key of a ConfigMap's `data` the hooks write.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Text {
    pub text: Option<String>,
}

impl Object for Written {
    fn type_ref() -> TypeRef {
        TypeRef::new("v1", "ConfigMap", "configmaps")
    }

    fn name(&self) -> &str {
        &self.metadata.name
    }

    fn namespace(&self) -> Option<&str> {
        self.metadata.namespace.as_deref()
    }
}

pub type Sync = Request<Widget, Written>;

/// The ConfigMap named `name`, holding `text`: a child is any JSON object
/// of a declared type.
fn config_map(name: &str, text: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"text": text},
    })
}

/// What the observed ConfigMap holds, and whether there is one.
fn observed(req: &Sync) -> (String, bool) {
    let written = req.children.of::<Written>();
    let text = written
        .get(&req.parent.metadata.name)
        .and_then(|c| c.data.text.clone())
        .unwrap_or_default();
    (text, !written.is_empty())
}

/// `Ready` as the spec and the observed text make it, and the text the
/// ConfigMap should hold (none while the spec is invalid).
fn ready(
    spec: &Result<WidgetSpec, metahook::SpecError>,
    written: &str,
) -> (Wanted, Option<String>) {
    let spec = match spec {
        Ok(spec) => spec,
        Err(why) => {
            let why = format!("the spec is invalid: {why}");
            return (Wanted::new("Ready", false, "InvalidSpec", why), None);
        }
    };
    let want = vec![spec.message.as_str(); spec.copies.min(10) as usize].join(" ");
    let ready = if written == want {
        let holds = "the ConfigMap holds the message".to_owned();
        Wanted::new("Ready", true, "Written", holds)
    } else {
        let writing = "the ConfigMap is being written".to_owned();
        Wanted::new("Ready", false, "Writing", writing)
    };
    (ready, Some(want))
}

pub fn sync(req: &Sync) -> Answer<WidgetStatus> {
    let name = &req.parent.metadata.name;
    let (written, exists) = observed(req);
    let (ready, want) = ready(&req.parent.spec, &written);
    let status = WidgetStatus {
        conditions: req.conditions([ready]),
        written: written.clone(),
    };
    match want {
        Some(want) => Answer::new(status).child(config_map(name, &want)),
        // Nothing is lost: an invalid spec keeps what is there.
        None if exists => Answer::new(status).child(config_map(name, &written)),
        None => Answer::new(status),
    }
}

/// Desires nothing, and lets the Widget go once its ConfigMap is gone.
pub fn finalize(req: &Sync) -> Answer<WidgetStatus> {
    let (written, exists) = observed(req);
    let deleting = "the Widget is being deleted".to_owned();
    let status = WidgetStatus {
        written,
        conditions: req.conditions([Wanted::new("Ready", false, "Deleting", deleting)]),
    };
    Answer::new(status).finalized(!exists)
}

pub fn controller() -> Controller {
    Controller::composite::<Widget>("widget")
        .child::<Written>(UpdateStrategy::InPlace)
        .sync(sync)
        .finalize(finalize)
        .crd_of::<Widget>()
        .build()
}
