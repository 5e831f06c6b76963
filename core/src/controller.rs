//! A controller of yours, declared as a value: its name, its parent (or
//! the type it decorates), its child types and how each is updated, its
//! hooks as plain functions, and the CRDs it owns. From this one
//! declaration metahook serves the hooks, drives them, renders them, and
//! writes the CompositeController manifest.
//!
//! ```
//! use metahook_core::{Answer, Controller, Request, UpdateStrategy};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! # use kube::CustomResource;
//! # use schemars::JsonSchema;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "Note", namespaced, status = "NoteStatus")]
//! # pub struct NoteSpec { text: String }
//! # #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
//! # pub struct NoteStatus { written: bool }
//!
//! fn sync(req: &Request<Note, ConfigMap>) -> Answer<NoteStatus> {
//!     let written = req.children.of::<ConfigMap>().get(&req.parent.metadata.name).is_some();
//!     Answer::new(NoteStatus { written })
//! }
//!
//! let notes: Controller = Controller::composite::<Note>("note")
//!     .child::<ConfigMap>(UpdateStrategy::InPlace)
//!     .sync(sync)
//!     .into();
//! assert_eq!(notes.name(), "note");
//! assert!(notes.check().is_ok());
//! ```

/// The settings both builders take, written once: `$what` is what `sync`
/// is called for, at least every resync period.
macro_rules! settings {
    ($what:literal) => {
        #[doc = concat!("Call `sync` for every ", $what, " at least this often.")]
        pub fn resync_period(mut self, period: Duration) -> Self {
            self.controller.resync_period = Some(period);
            self
        }

        /// How long Metacontroller waits for a hook's answer (default 10 s).
        pub fn hook_timeout(mut self, timeout: Duration) -> Self {
            self.controller.hook_timeout = timeout;
            self
        }

        /// A CRD this controller owns (its parent's, a child's, an
        /// attachment's): printed by `crds` and installed by the chart.
        pub fn crd(mut self, crd: CustomResourceDefinition) -> Self {
            self.controller.crds.push(Crd::Made(Box::new(crd)));
            self
        }

        /// The CRD of `K`, a `#[derive(CustomResource)]` type this controller
        /// owns: made only when asked for (`crds`, the chart), not when the
        /// controller is declared.
        pub fn crd_of<K: kube::CustomResourceExt>(mut self) -> Self {
            self.controller.crds.push(Crd::Of(K::crd));
            self
        }
    };
}

mod composite;
mod declaration;
mod decorator;
mod handler;
mod manifest;
mod shape;

pub use composite::Composite;
pub use declaration::{Controller, DeclarationError};
pub use decorator::Decorator;
pub use shape::{ChildType, Shape, UpdateStrategy, Webhooks};

#[cfg(test)]
mod tests;
