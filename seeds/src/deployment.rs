//! An observed `apps/v1` Deployment, as far as the hooks read it.

use metahook_core::objects::{Meta, first_where};
use serde::{Deserialize, Deserializer};

/// An observed `apps/v1` Deployment, as far as the hooks read it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, expecting = "a Deployment")]
pub struct ObservedDeployment {
    /// `apiVersion`: `apps/v1`.
    pub api_version: String,
    /// `kind`: `Deployment`.
    pub kind: String,
    /// Its metadata, no annotation kept.
    pub metadata: Meta,
    /// What it is asked to run.
    pub spec: ObservedDeploymentSpec,
    /// What its controller reports of its pods (all zero before the first
    /// report).
    pub status: ObservedDeploymentStatus,
}

impl metahook_core::Object for ObservedDeployment {
    fn type_ref() -> metahook_core::TypeRef {
        metahook_core::TypeRef::new("apps/v1", "Deployment", "deployments")
    }

    /// A Hello or a Foo runs one Deployment; more are only ever orphans
    /// adopted by label, and held.
    const MAX: usize = 1000;

    fn name(&self) -> &str {
        &self.metadata.name
    }

    fn namespace(&self) -> Option<&str> {
        self.metadata.namespace.as_deref()
    }
}

impl ObservedDeployment {
    /// Whether the object says it is an `apps/v1` Deployment (one
    /// decoded from another group, or made with `Default`, does not).
    pub fn is_deployment(&self) -> bool {
        self.kind == "Deployment" && self.api_version == "apps/v1"
    }

    /// The image of the first container, if there is one.
    pub fn first_image(&self) -> Option<&str> {
        self.spec
            .template
            .spec
            .first_container
            .as_ref()
            .and_then(|c| c.image.as_deref())
    }

    /// `spec.replicas` as the API server reads it: absent means 1.
    pub fn replicas(&self) -> i32 {
        self.spec.replicas.unwrap_or(1)
    }
}

/// A Deployment's spec, as far as the hooks read it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObservedDeploymentSpec {
    /// `spec.replicas`: absent means 1 ([`ObservedDeployment::replicas`]).
    pub replicas: Option<i32>,
    /// The template of its pods.
    pub template: ObservedPodTemplate,
}

/// A Deployment's pod template, as far as the hooks read it: its spec.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ObservedPodTemplate {
    /// The spec of the pods.
    pub spec: ObservedPodSpec,
}

/// A pod spec, as far as the hooks read it: its first container.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ObservedPodSpec {
    /// The first container, the only one a hook reads; every one is still
    /// checked for its type.
    #[serde(rename = "containers", deserialize_with = "first_container")]
    pub first_container: Option<ObservedContainer>,
}

/// A container, as far as the hooks read it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ObservedContainer {
    /// Its name in the pod.
    pub name: String,
    /// Its image: `nginx:1.27`.
    pub image: Option<String>,
}

/// Replica counts a Deployment reports; absent counts are zero, as in the API.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObservedDeploymentStatus {
    /// Pods it runs, of any template (`status.replicas`).
    pub replicas: i32,
    /// Pods ready to serve (`status.readyReplicas`).
    pub ready_replicas: i32,
    /// Pods ready for at least the Deployment's `minReadySeconds`
    /// (`status.availableReplicas`).
    pub available_replicas: i32,
    /// Pods of the current template (`status.updatedReplicas`).
    pub updated_replicas: i32,
    /// The generation its controller last acted on: the counts are of an
    /// older spec while it is below `metadata.generation`.
    pub observed_generation: Option<i64>,
}

fn first_container<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ObservedContainer>, D::Error> {
    first_where(d, |_| true)
}
