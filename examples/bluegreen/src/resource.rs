//! The BlueGreenDeployment resource (`ctl.enisoc.com/v1`), as the
//! example's CRD (`v1/crdv1.yaml` in Metacontroller's example) defines it:
//! these types read every object that CRD admits.

use crate::color::Color;
use k8s_openapi::api::apps::v1::{ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{PodTemplateSpec, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The pods, how many, and the Service in front of them. A change to
/// `template` runs a second ReplicaSet beside the first, and the Service
/// moves to it once all its pods are available.
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "ctl.enisoc.com",
    version = "v1",
    kind = "BlueGreenDeployment",
    namespaced,
    status = "BlueGreenDeploymentStatus",
    doc = "A Deployment that rolls out blue-green: two ReplicaSets, one Service moved between them."
)]
#[serde(rename_all = "camelCase")]
pub struct BlueGreenDeploymentSpec {
    /// Pods of the active ReplicaSet (and of the new one, while it rolls out).
    pub replicas: i32,
    /// Seconds a pod must have been ready to count as available.
    pub min_ready_seconds: i32,
    /// Selects the pods; each ReplicaSet adds its `color` to it.
    pub selector: LabelSelector,
    /// The pods to run; changing it starts a rollout.
    pub template: PodTemplateSpec,
    /// The Service in front of the active ReplicaSet's pods.
    pub service: ServiceTemplate,
}

/// A Service as the parent describes it; its selector gets the active
/// color.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServiceTemplate {
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: ServiceSpec,
}

/// Which ReplicaSet serves, and what both report. `observedGeneration` is
/// the engine's to write (Metacontroller and the driver set it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlueGreenDeploymentStatus {
    /// The ReplicaSet the Service selects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_color: Option<Color>,
    /// The active ReplicaSet's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<ReplicaCounts>,
    /// The other ReplicaSet's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inactive: Option<ReplicaCounts>,
    /// Pods of both ReplicaSets.
    #[serde(default)]
    pub replicas: i32,
    /// Ready pods of both ReplicaSets.
    #[serde(default)]
    pub ready_replicas: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// A ReplicaSet's status, with exactly the fields the example's CRD keeps:
/// a field it would prune (a newer API server's `terminatingReplicas`)
/// would make every status write differ from what is read back, and the
/// engine write it again at each sync.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaCounts {
    pub replicas: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fully_labeled_replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<ReplicaSetCondition>>,
}

impl From<&ReplicaSetStatus> for ReplicaCounts {
    fn from(status: &ReplicaSetStatus) -> Self {
        ReplicaCounts {
            replicas: status.replicas,
            fully_labeled_replicas: status.fully_labeled_replicas,
            ready_replicas: status.ready_replicas,
            available_replicas: status.available_replicas,
            observed_generation: status.observed_generation,
            conditions: status.conditions.clone(),
        }
    }
}
