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

use metahook::Controller;
pub use resource::{GlobalConfigMap, GlobalConfigMapSpec, GlobalConfigMapStatus};

/// The controller, named as the example's CompositeController
/// (`globalconfigmap-controller`): its hooks are served at
/// `/globalconfigmap-controller/{customize,sync}`.
pub fn controller() -> Controller {
    Controller::composite::<GlobalConfigMap>("globalconfigmap-controller")
        .customize(customize::customize)
        .sync(sync::sync)
        .build()
}

// `controller.json`: the example's `manifest/globalconfigmap.yaml` in Metacontroller,
// its webhooks left out.
#[cfg(test)]
#[path = "../../shared/declared.rs"]
mod declared;
