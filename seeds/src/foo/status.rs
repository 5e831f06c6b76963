//! What a Foo's status holds, the same at every version.

use metahook_core::conditions::Conditions;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the Foo's Deployment reports, and how the Foo is doing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FooStatus {
    /// The `metadata.generation` this status describes; written by
    /// Metacontroller or the driver, never by the hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Pods of the Foo's Deployment that have been ready for
    /// `minReadySeconds`, from the Deployment's status.
    #[serde(default)]
    pub available_replicas: i32,
    /// `Ready` and `SpecValid`.
    #[serde(default)]
    pub conditions: Conditions,
}
