//! The CompositeControllers and DecoratorControllers the driver runs, read
//! and checked offline.
//!
//! The driver supports a subset of Metacontroller's CompositeController
//! (docs/metacontroller.md §2;
//! docs/driver.md#metacontroller-features-the-driver-does-not-support). The manifests come from the controllers declared in
//! Rust and built into the binary, or from `--controllers DIR`
//! ([`from_controllers`], [`from_dir`], [`parse`]; the example is on
//! [`parse`]). They are checked
//! before anything connects to a cluster: a field outside the subset is
//! refused by its path, so a bad file fails fast with no cluster at hand;
//! what is accepted becomes a [`ControllerConfig`], with Metacontroller's
//! defaults filled in.
//!
//! A manifest goes through three steps, one file each:
//!
//! - `load`: where the files come from, and one name per controller;
//! - `manifest`: serde's mirror of the YAML, keeping unknown keys;
//! - `document`: the rules beyond the types, each naming its field (the
//!   refusals in `check`), with `composite` and `decorator` for each kind's
//!   own fields, and `hooks`, `webhook`, `webhook_auth`, `endpoint` and
//!   `go_duration` for the hooks' fields.
//!
//! What comes out is in `controller`: [`ControllerConfig`] and its parts.

/// The Lease the driver's replicas elect their leader with, unless
/// `--leader-election-lease` names another; its Role is in the generated
/// RBAC.
pub const LEASE_NAME: &str = "metahook-driver";

mod check;
mod composite;
mod controller;
mod decorator;
mod document;
mod endpoint;
mod error;
mod go_duration;
mod hooks;
mod load;
mod manifest;
mod webhook;
mod webhook_auth;

#[cfg(test)]
mod tests;

pub use composite::DEFAULT_REVISION_FIELD_PATHS;
pub use controller::{
    ChildResource, ConditionCheck, ControllerConfig, ControllerKind, Hook, HookVersion, Hooks,
    ParentResource, REVISION_ANNOTATION, UpdateStrategy, UpdateStrategyExt, for_pass,
};
pub use error::ConfigError;
pub use load::{from_controllers, from_dir, parse};
pub use webhook::{DEFAULT_TIMEOUT, Etag, Webhook};
pub use webhook_auth::{AuthHeader, CaBundle, ClientTls, KeyRef, ObjectRef, WebhookAuth};
