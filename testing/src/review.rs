//! An AdmissionReview as kube-apiserver sends one
//! (`fixtures/foo/admission/`): what the convergence check and
//! [`Situation::answer`](crate::Situation::answer) ask a controller's
//! admission hooks with.

use metahook_core::admission::Operation;
use metahook_core::{Controller, Shape};
use serde_json::{Value, json};

/// The review kube-apiserver sends for `operation` on `object`.
pub(crate) fn review(
    controller: &Controller,
    uid: &str,
    operation: Operation,
    object: &Value,
    old: Option<&Value>,
) -> Value {
    let (group, version, kind, plural) = match controller.shape() {
        Shape::Composite { parent, .. } => {
            let version = parent.api_version.rsplit('/').next().unwrap_or_default();
            (parent.group(), version, &*parent.kind, &*parent.plural)
        }
        Shape::Decorator { .. } => ("", "", "", ""),
    };
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let gvr = json!({"group": group, "version": version, "resource": plural});
    let (operation_name, options) = match operation {
        Operation::Update => ("UPDATE", "UpdateOptions"),
        _ => ("CREATE", "CreateOptions"),
    };
    let mut request = json!({
        "uid": uid,
        "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "name": object["metadata"]["name"],
        "operation": operation_name,
        // kubeadm's admin, as `kubectl` on a fresh cluster asks.
        "userInfo": {"username": "kubernetes-admin",
                     "groups": ["kubeadm:cluster-admins", "system:authenticated"]},
        "object": object,
        "oldObject": old,
        "dryRun": false,
        "options": {"kind": options, "apiVersion": "meta.k8s.io/v1",
                    "fieldManager": "kubectl-client-side-apply", "fieldValidation": "Strict"},
    });
    if let Some(namespace) = object["metadata"]["namespace"].as_str() {
        request["namespace"] = json!(namespace);
    }
    json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request})
}
