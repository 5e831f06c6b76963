//! The GlobalConfigMap resource (`examples.metacontroller.io/v1alpha1`,
//! cluster-scoped), as the example's CRD (`v1/crdv1.yaml` in
//! Metacontroller's example) defines it.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which ConfigMap to copy.
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "examples.metacontroller.io",
    version = "v1alpha1",
    kind = "GlobalConfigMap",
    shortname = "gcm",
    status = "GlobalConfigMapStatus",
    doc = "One ConfigMap, copied into every namespace."
)]
#[serde(rename_all = "camelCase")]
pub struct GlobalConfigMapSpec {
    /// Name of the ConfigMap to copy (and of every copy).
    pub source_name: String,
    /// Namespace of the ConfigMap to copy.
    pub source_namespace: String,
}

/// How the copying goes. The example's CRD keeps this one field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GlobalConfigMapStatus {
    /// `fine` once the source is copied into every namespace; otherwise
    /// why not.
    #[serde(default)]
    pub working: String,
}
