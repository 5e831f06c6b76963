//! The CompositeController (or DecoratorController) manifest a controller
//! writes of itself, as Metacontroller reads it.

use super::declaration::Controller;
use super::shape::{ChildType, Shape, Webhooks};
use crate::hook::HookKind;
use serde_json::{Value, json};

impl Controller {
    /// The CompositeController (or DecoratorController) manifest that
    /// Metacontroller reads, its webhooks at `webhooks`' Service.
    pub fn manifest(&self, webhooks: &Webhooks) -> Value {
        let hook = |kind: HookKind| {
            json!({
                "version": "v2",
                "webhook": {
                    "service": {
                        "name": webhooks.service,
                        "namespace": webhooks.namespace,
                        "port": webhooks.port,
                    },
                    "path": format!("/{}/{}", self.name, kind),
                    "timeout": format!("{}s", self.hook_timeout.as_secs()),
                },
            })
        };
        let mut hooks = serde_json::Map::new();
        for kind in self.hook_kinds().filter(|k| !k.called_by_api_server()) {
            hooks.insert(kind.as_str().to_owned(), hook(kind));
        }
        let children = |types: &[ChildType]| -> Vec<Value> {
            types
                .iter()
                .map(|c| {
                    json!({
                        "apiVersion": c.type_ref.api_version,
                        "resource": c.type_ref.plural,
                        "updateStrategy": {"method": c.update.method()},
                    })
                })
                .collect()
        };
        let (kind, mut spec) = match &self.shape {
            Shape::Composite {
                parent,
                children: types,
                generate_selector,
            } => (
                "CompositeController",
                json!({
                    "parentResource": {"apiVersion": parent.api_version, "resource": parent.plural},
                    "childResources": children(types),
                    "generateSelector": generate_selector,
                    "hooks": hooks,
                }),
            ),
            Shape::Decorator {
                resource,
                attachments,
            } => (
                "DecoratorController",
                json!({
                    "resources": [{"apiVersion": resource.api_version, "resource": resource.plural}],
                    "attachments": children(attachments),
                    "hooks": hooks,
                }),
            ),
        };
        if let Some(period) = self.resync_period {
            spec["resyncPeriodSeconds"] = json!(period.as_secs());
        }
        json!({
            "apiVersion": "metacontroller.k8s.io/v1alpha1",
            "kind": kind,
            "metadata": {"name": self.name},
            "spec": spec,
        })
    }
}
