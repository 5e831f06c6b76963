//! Foo `v1`: the Deployment's name and replicas under one `deployment`
//! object (`spec.deployment.name`, `spec.deployment.replicas`). Served
//! beside `v1alpha1`, which stays the hub: the hooks read v1alpha1 and the
//! API server stores it, so seed 004's manifests apply unchanged and a v1
//! Foo is converted on its way in and out by the `convert` hook
//! (`seeds/src/foo/convert.rs`).

use super::status::FooStatus;
use kube::CustomResource;
use metahook_core::names::DNS_SUBDOMAIN_PATTERN;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A Foo runs `deployment.replicas` copies of nginx in the Deployment
/// named `deployment.name`.
// Each `printcolumn(...)` repeats the same keys; clippy reads that as a
// duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "samplecontroller.k8s.io",
    version = "v1",
    kind = "Foo",
    singular = "foo",
    plural = "foos",
    category = "metahook",
    namespaced,
    status = "FooStatus",
    doc = "A Foo runs spec.deployment.replicas copies of nginx in the Deployment named spec.deployment.name.",
    printcolumn(
        name = "Deployment",
        type_ = "string",
        json_path = ".spec.deployment.name"
    ),
    printcolumn(
        name = "Desired",
        type_ = "integer",
        json_path = ".spec.deployment.replicas"
    ),
    printcolumn(
        name = "Available",
        type_ = "integer",
        json_path = ".status.availableReplicas"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
pub struct FooSpec {
    /// The Deployment the Foo runs.
    pub deployment: FooDeployment,
}

/// The Deployment a v1 Foo runs: v1alpha1's `deploymentName` and
/// `replicas`, together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FooDeployment {
    /// Its name (a DNS-1123 subdomain). A Deployment of this name that the
    /// Foo does not control is left alone and reported. Changing it
    /// replaces the old Deployment with a new one.
    /// Absent, the Foo's own name (v1alpha1's `deploymentName`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(min = 1, max = 253), pattern(DNS_SUBDOMAIN_PATTERN))]
    pub name: String,
    /// How many pods it runs; 1 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub replicas: Option<i32>,
}
