//! The CompositeControllers the driver runs, read and checked offline.
//!
//! The driver supports a subset of Metacontroller's CompositeController
//! (docs/metacontroller.md §2; README, "Metacontroller features the driver
//! does not support"). The manifests come from `metacontroller/*.yaml`,
//! built into the binary, or from `--controllers DIR` ([`embedded`],
//! [`from_dir`], [`parse`]; the example is on [`parse`]). They are checked
//! before anything connects to a cluster: a field outside the subset is
//! refused by its path, so a bad file fails fast with no cluster at hand;
//! what is accepted becomes a [`ControllerConfig`], with Metacontroller's
//! defaults filled in.
//!
//! A manifest goes through three steps, one file each:
//!
//! - `load`: where the files come from, and one name per controller;
//! - `manifest`: serde's mirror of the YAML, keeping unknown keys;
//! - `check` (with `webhook`, `webhook_auth`, `endpoint` and `go_duration`
//!   for the hooks' fields): the rules beyond the types, each naming its
//!   field.

mod check;
mod endpoint;
mod error;
mod go_duration;
mod load;
mod manifest;
mod webhook;
mod webhook_auth;

#[cfg(test)]
mod tests;

pub use error::ConfigError;
pub use load::{EMBEDDED, embedded, from_dir, parse};
pub use webhook::{DEFAULT_TIMEOUT, Webhook};
pub use webhook_auth::{AuthHeader, CaBundle, ClientTls, KeyRef, ObjectRef, WebhookAuth};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;
use std::time::Duration;

/// One CompositeController, in the supported subset.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerConfig {
    pub name: String,
    /// Where it came from, for messages.
    pub source: String,
    pub parent: ParentResource,
    pub children: Vec<ChildResource>,
    pub generate_selector: bool,
    /// `resyncPeriodSeconds`, floored at one second as Metacontroller does.
    pub resync_period: Option<Duration>,
    pub hooks: Hooks,
    /// The whole object as read: sent as `controller` in every hook request.
    pub object: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ParentResource {
    pub api_version: String,
    pub resource: String,
    pub label_selector: Option<LabelSelector>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChildResource {
    pub api_version: String,
    pub resource: String,
    pub update_strategy: UpdateStrategy,
}

/// `OnDelete` (the default), `Recreate`, `InPlace`; the rolling methods are
/// outside the subset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateStrategy {
    OnDelete,
    Recreate,
    InPlace,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hooks {
    pub sync: Hook,
    pub finalize: Option<Hook>,
    pub customize: Option<Hook>,
}

/// `v1` (the default) or `v2`: how object maps are keyed, how strictly a
/// response is decoded, where related objects may come from
/// (docs/metacontroller.md §1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookVersion {
    V1,
    V2,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    pub version: HookVersion,
    pub webhook: Webhook,
}
