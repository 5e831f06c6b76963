//! The ValidatingWebhookConfiguration and MutatingWebhookConfiguration a
//! controller with admission hooks writes of itself, as the API server
//! reads them: one webhook each, for its parent's resource, at the hook
//! service.

use super::declaration::Controller;
use super::shape::{Shape, Webhooks};
use crate::hook::HookKind;
use serde_json::{Value, json};

impl Controller {
    /// A configuration per admission hook (`validate`: a
    /// ValidatingWebhookConfiguration; `default`: a
    /// MutatingWebhookConfiguration), named `{controller}-{hook}` and
    /// calling `webhooks`' Service at `/{controller}/{hook}`, for creates
    /// and updates of the parent (not its status). Without a `caBundle`:
    /// who installs it adds the CA that signed the service's certificate.
    /// Objects in `webhooks.namespace` (the operator's own) are left out,
    /// so a broken operator never blocks its own namespace. Elsewhere a
    /// write the API server cannot ask about is refused (`failurePolicy:
    /// Fail`): safer than an unchecked one; the chart's
    /// `admission.failurePolicy` says otherwise where wanted.
    pub fn webhook_configurations(&self, webhooks: &Webhooks) -> Vec<Value> {
        let Shape::Composite { parent, .. } = &self.shape else {
            return Vec::new();
        };
        let (group, version) = match parent.api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", parent.api_version.as_ref()),
        };
        self.hook_kinds()
            .filter(|kind| kind.is_admission())
            .map(|kind| {
                let config_kind = match kind {
                    HookKind::Default => "MutatingWebhookConfiguration",
                    _ => "ValidatingWebhookConfiguration",
                };
                let mut webhook = json!({
                    // A webhook's name must be a qualified name of three
                    // parts or more: the parent's group makes it one.
                    "name": format!("{kind}.{}.{}", self.name, if group.is_empty() { "core.k8s.io" } else { group }),
                    "clientConfig": {
                        "service": {
                            "name": webhooks.service,
                            "namespace": webhooks.namespace,
                            "port": webhooks.port,
                            "path": format!("/{}/{kind}", self.name),
                        },
                    },
                    "rules": [{
                        "apiGroups": [group],
                        "apiVersions": [version],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": [parent.plural],
                        "scope": if parent.namespaced { "Namespaced" } else { "Cluster" },
                    }],
                    "namespaceSelector": {"matchExpressions": [{
                        "key": "kubernetes.io/metadata.name",
                        "operator": "NotIn",
                        "values": [webhooks.namespace],
                    }]},
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "failurePolicy": "Fail",
                    "timeoutSeconds": self.hook_timeout.as_secs().min(30),
                });
                if kind == HookKind::Default {
                    webhook["reinvocationPolicy"] = json!("Never");
                }
                json!({
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": config_kind,
                    "metadata": {"name": format!("{}-{kind}", self.name)},
                    "webhooks": [webhook],
                })
            })
            .collect()
    }
}
