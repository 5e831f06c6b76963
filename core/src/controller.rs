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
//!     .sync(sync)
//!     .into();
//! assert_eq!(notes.name(), "note");
//! assert!(notes.check().is_ok());
//! ```

mod builders;
mod declaration;
mod handler;
mod manifest;
mod shape;
mod status_schema;
mod types;
mod versions;
mod webhooks;

pub use builders::{Composite, Decorator};
pub use declaration::{Controller, DeclarationError};
pub use shape::{ChildType, Shape, UpdateStrategy, Webhooks};

#[cfg(test)]
mod tests;
