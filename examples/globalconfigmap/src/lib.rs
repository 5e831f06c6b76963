//! Metacontroller's `globalconfigmap` example on metahook: a
//! `GlobalConfigMap` (`examples.metacontroller.io/v1alpha1`,
//! cluster-scoped) copies one ConfigMap into every Namespace, new ones
//! included.
//!
//! ```text
//! GlobalConfigMap ──customize──→ related: ConfigMap <ns>/<name>, every Namespace
//!                 ──sync───────→ ConfigMap <name> in each Namespace but <ns>
//! ```
//!
//! - [`resource`]: the CRD's types;
//! - [`customize`]: which related objects each sync is sent;
//! - [`sync`]: the copies.
#![forbid(unsafe_code)]

pub mod customize;
pub mod resource;
pub mod sync;

use k8s_openapi::api::core::v1::ConfigMap;
use metahook::{Controller, UpdateStrategy};
pub use resource::{GlobalConfigMap, GlobalConfigMapSpec, GlobalConfigMapStatus};

/// The controller, named as the example's CompositeController
/// (`globalconfigmap-controller`): its hooks are served at
/// `/globalconfigmap-controller/{customize,sync}`.
pub fn controller() -> Controller {
    Controller::composite::<GlobalConfigMap>("globalconfigmap-controller")
        .child::<ConfigMap>(UpdateStrategy::InPlace)
        .customize(customize::customize)
        .sync(sync::sync)
        .crd_of::<GlobalConfigMap>()
        .build()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// The declaration says what the example's CompositeController says
    /// (`manifest/globalconfigmap.yaml`), which is what the engines run.
    #[test]
    fn the_declaration_is_the_examples_composite_controller() {
        let manifest = super::controller().manifest(&metahook::Webhooks::default());
        assert_eq!(manifest["metadata"]["name"], "globalconfigmap-controller");
        let spec = &manifest["spec"];
        assert_eq!(
            spec["parentResource"],
            json!({"apiVersion": "examples.metacontroller.io/v1alpha1", "resource": "globalconfigmaps"})
        );
        assert_eq!(
            spec["childResources"],
            json!([{"apiVersion": "v1", "resource": "configmaps", "updateStrategy": {"method": "InPlace"}}])
        );
        assert_eq!(spec["generateSelector"], true);
        let mut hooks: Vec<&String> = spec["hooks"].as_object().expect("hooks").keys().collect();
        hooks.sort();
        assert_eq!(hooks, ["customize", "sync"]);
    }
}
