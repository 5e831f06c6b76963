//! A controller's declaration against a CompositeController (or
//! DecoratorController) manifest written by hand — a Metacontroller
//! example's — on what an engine runs it by; the webhooks are left out,
//! since they point wherever the hooks are served.

use metahook_core::{Controller, Webhooks};
use serde_json::{Value, json};

/// Where `controller`'s manifest and `manifest` disagree, one line each;
/// none when they agree. Compared: the kind and name; the parent (or
/// decorated) resources; the child (or attachment) resources with their
/// update strategies (`OnDelete` where none is written, as Metacontroller
/// reads it); `generateSelector` (`false` where unwritten);
/// `resyncPeriodSeconds`; which hooks there are.
///
/// ```
/// # use metahook_core::{Answer, Controller, Request};
/// # use kube::CustomResource;
/// # use schemars::JsonSchema;
/// # use serde::{Deserialize, Serialize};
/// # #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
/// # #[kube(group = "example.com", version = "v1", kind = "Note", namespaced, status = "NoteStatus")]
/// # pub struct NoteSpec { text: String }
/// # #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
/// # pub struct NoteStatus { copies: usize }
/// let notes = Controller::composite::<Note>("note")
///     .sync(|_: &Request<Note>| Answer::new(NoteStatus::default()))
///     .build();
/// let written = serde_json::json!({
///     "apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
///     "metadata": {"name": "note"},
///     "spec": {
///         "parentResource": {"apiVersion": "example.com/v1", "resource": "notes"},
///         "generateSelector": true,
///         "hooks": {"sync": {"webhook": {"url": "http://notes.default/sync"}}},
///     },
/// });
/// assert_eq!(metahook_testing::disagreements(&notes, &written), Vec::<String>::new());
///
/// let mut resynced = written.clone();
/// resynced["spec"]["resyncPeriodSeconds"] = serde_json::json!(30);
/// assert_eq!(
///     metahook_testing::disagreements(&notes, &resynced),
///     ["spec.resyncPeriodSeconds: declared null, the manifest has 30"],
/// );
/// ```
pub fn disagreements(controller: &Controller, manifest: &Value) -> Vec<String> {
    let declared = essentials(&controller.manifest(&Webhooks::default()));
    essentials(manifest)
        .into_iter()
        .zip(declared)
        .filter(|((_, written), (_, declared))| written != declared)
        .map(|((what, written), (_, declared))| {
            format!("{what}: declared {declared}, the manifest has {written}")
        })
        .collect()
}

/// What an engine runs a controller by, each with where it is written.
fn essentials(manifest: &Value) -> [(&'static str, Value); 9] {
    let spec = &manifest["spec"];
    let resource = |r: &Value| json!({"apiVersion": r["apiVersion"], "resource": r["resource"]});
    let updated = |r: &Value| {
        let method = r["updateStrategy"]["method"].as_str().unwrap_or("OnDelete");
        json!({"apiVersion": r["apiVersion"], "resource": r["resource"], "method": method})
    };
    // An unwritten list is an empty one.
    let each = |list: &Value, of: &dyn Fn(&Value) -> Value| -> Value {
        let items = list.as_array().map(Vec::as_slice).unwrap_or_default();
        Value::Array(items.iter().map(of).collect())
    };
    let mut hooks: Vec<&String> = spec["hooks"]
        .as_object()
        .map(|hooks| hooks.keys().collect())
        .unwrap_or_default();
    hooks.sort();
    [
        ("kind", manifest["kind"].clone()),
        ("metadata.name", manifest["metadata"]["name"].clone()),
        ("spec.parentResource", resource(&spec["parentResource"])),
        ("spec.resources", each(&spec["resources"], &resource)),
        (
            "spec.childResources",
            each(&spec["childResources"], &updated),
        ),
        ("spec.attachments", each(&spec["attachments"], &updated)),
        (
            "spec.generateSelector",
            json!(spec["generateSelector"].as_bool().unwrap_or(false)),
        ),
        (
            "spec.resyncPeriodSeconds",
            spec["resyncPeriodSeconds"].clone(),
        ),
        ("spec.hooks", json!(hooks)),
    ]
}
