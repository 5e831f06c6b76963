//! Metacontroller's `bluegreen` example on metahook: a
//! `BlueGreenDeployment` (`ctl.enisoc.com/v1`) runs its pods in one of two
//! ReplicaSets, `<name>-blue` and `<name>-green`, behind one Service. A
//! change to its pod template goes to the idle ReplicaSet; the Service
//! moves there once every new pod is available, and the old ReplicaSet is
//! then scaled to zero.
//!
//! ```text
//! BlueGreenDeployment ──sync──→ ReplicaSet <name>-blue   (color=blue)
//!                              ReplicaSet <name>-green  (color=green)
//!                              Service (selector + color=<active>)
//! ```
//!
//! - [`resource`]: the CRD's types; [`color`]: the two ReplicaSets;
//! - [`plan`]: the decision, pure; [`children`]: the objects it makes;
//! - [`sync`]: the hook; [`template_hash`]: which template a ReplicaSet runs.
#![forbid(unsafe_code)]

pub mod children;
pub mod color;
pub mod plan;
pub mod resource;
pub mod sync;
pub mod template_hash;

use metahook::Controller;
pub use resource::{BlueGreenDeployment, BlueGreenDeploymentSpec, BlueGreenDeploymentStatus};

/// The controller, named as the example's CompositeController
/// (`bluegreen-controller`): its hooks are served at
/// `/bluegreen-controller/sync`.
pub fn controller() -> Controller {
    Controller::composite::<BlueGreenDeployment>("bluegreen-controller")
        // The example's manifest: children are found by the parent's own
        // spec.selector, and both kinds (the hook's) are updated in place.
        .generate_selector(false)
        .sync(sync::sync)
        .build()
}

// `controller.json`: the example's `manifest/bluegreen-controller.yaml` in Metacontroller,
// its webhooks left out.
#[cfg(test)]
#[path = "../../shared/declared.rs"]
mod declared;
