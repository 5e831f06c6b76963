//! Kubernetes controllers as pure functions: metahook's library without
//! the I/O. A controller is a value ([`Controller`]) declaring its parent
//! type, its child types and its hooks — plain functions from a typed
//! [`Request`] to an [`Answer`]. This crate has no I/O dependencies (no
//! tokio, no actix, no kube client, no clock): the `metahook` crate serves,
//! drives and renders what is declared here, and passes the time in, so
//! the same request always gives the same answer.
//!
//! - the declaration: [`Controller::composite`], [`Controller::decorator`],
//!   and the CompositeController manifest it writes;
//! - what a hook is given: [`Request`], [`Customize`], [`Decorate`], with
//!   the objects by type ([`Objects`], [`Of`]) of the types a request may
//!   hold ([`Object`]);
//! - what a hook answers: [`Answer`], [`CustomizeAnswer`],
//!   [`DecoratorAnswer`];
//! - [`admission`] and [`conversion`]: the hooks the API server calls,
//!   to admit a parent and to convert it between its versions;
//! - [`conditions`]: status conditions as Kubernetes keeps them;
//!   [`objects`]: the metadata and parent views every request reads,
//!   bounded, and [`objects::first_where`] for a view of your own;
//!   [`names`]: Kubernetes' rules for names;
//! - [`registry`]: a hook as bytes in, bytes out ([`Handler`]), looked up
//!   by path and called with its panic caught; [`protocol`]: Metacontroller's
//!   wire format; [`DecodeError`]: errors a person can act on.
//!
//! An item's path is the root's, or one of those modules'; the few
//! in both are the conditions a status writes and the metadata views a
//! hook reads most.
//!
//! ## Example
//!
//! A controller declared, and its hook called as the service calls it:
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::CustomResource;
//! use metahook_core::{Answer, Controller, HookKind, Request, UpdateStrategy};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Note", namespaced, status = "NoteStatus")]
//! pub struct NoteSpec { text: String }
//!
//! #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
//! pub struct NoteStatus { copies: usize }
//!
//! fn sync(req: &Request<Note, ConfigMap>) -> Answer<NoteStatus> {
//!     Answer::new(NoteStatus { copies: req.children.of::<ConfigMap>().len() })
//! }
//!
//! let notes = Controller::composite::<Note>("note")
//!     .sync(sync)
//!     .build();
//! let request = serde_json::json!({
//!     "parent": {
//!         "apiVersion": "example.com/v1", "kind": "Note",
//!         "metadata": {"name": "n", "namespace": "ns", "uid": "u-1"},
//!         "spec": {"text": "hi"},
//!     },
//!     "children": {"ConfigMap.v1": {"ns/n": {"metadata": {"name": "n", "namespace": "ns"}}}},
//! });
//! let sync = notes.hook(HookKind::Sync).ok_or("a sync hook")?;
//! let answer = metahook_core::registry::call(&sync, request.to_string().as_bytes(), "2026-11-22T03:00:00Z".parse()?)??;
//! let answer: serde_json::Value = serde_json::from_slice(&answer)?;
//! assert_eq!(answer["status"]["copies"], 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

// Every item of these is re-exported below, by name: one path each.
mod answer;
mod collection;
mod controller;
mod decode;
mod error_chain;
mod hook;
mod object;
mod request;

// Toolboxes a controller names by module: conditions and their helpers,
// name checks, the observed objects' views, the wire's own types, and the
// hook table the runtime serves.
pub mod admission;
pub mod conditions;
pub mod conversion;
pub mod names;
pub mod objects;
pub mod protocol;
pub mod registry;
#[cfg(any(test, feature = "test-types"))]
#[doc(hidden)]
pub mod test_types;

pub use answer::{Answer, CustomizeAnswer, DecoratorAnswer, IntoAnswer};
pub use collection::{Contains, Member, ObjectSet, Objects, ObjectsBy, Of};
pub use conditions::{
    Conditions, WantedCondition, condition_false, condition_true, condition_unknown,
};
pub use controller::{
    ChildType, Composite, Controller, DeclarationError, Decorator, Shape, UpdateStrategy, Webhooks,
};
pub use decode::DecodeError;
pub use error_chain::{error_chain, error_chain_with};
pub use hook::{Handler, HookError, HookKind};
pub use jiff::Timestamp;
pub use object::{DEFAULT_MAX_OBJECTS, Object, Scope, TypeRef};
pub use protocol::RelatedResourceRule;
pub use request::{Customize, Decorate, Meta, Parent, ParentMeta, ParentType, Request, SpecError};
