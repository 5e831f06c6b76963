//! metahook's controllers as pure functions: a Metacontroller hook request
//! and the time in, the response out.
//!
//! Everything here is data in, data out: the CRD types, Metacontroller's hook
//! protocol, and one module per controller. This crate has no I/O
//! dependencies (no tokio, no actix, no kube client, no clock): the binary
//! reads the clock and moves the bytes, and passes `now` in. So a
//! controller's whole behaviour is one module, exercised without a cluster
//! by the requests under `fixtures/` and their accepted answers.
//!
//! - [`registry`]: the table of controllers and their hooks, the one place
//!   the service, the driver and `metahook render` look a hook up, and
//!   [`registry::call`], which runs one and catches its panic;
//! - [`protocol`]: Metacontroller's sync, finalize and customize requests
//!   and responses; [`decode`]: requests decoded with errors a person can
//!   act on ([`DecodeError`]); [`objects`]: read-side views of the objects
//!   in a request;
//! - [`children`]: builders for desired children; [`conditions`]: status
//!   conditions as Kubernetes keeps them;
//! - [`hello`], [`hikawa`], [`foo`]: the controllers, one module each.
//!
//! ## Example
//!
//! Hello's sync hook, looked up and called as the service calls it:
//!
//! ```
//! use metahook_hooks::{HookKind, Timestamp, registry};
//!
//! let sync = registry::controller("hello")
//!     .and_then(|hello| hello.hook(HookKind::Sync))
//!     .ok_or("hello has a sync hook")?;
//! let request = serde_json::json!({
//!     "parent": {
//!         "apiVersion": "fraim.co.jp/v1",
//!         "kind": "Hello",
//!         "metadata": {"name": "web", "namespace": "shop", "uid": "u-1"},
//!         "spec": {"replicas": 2},
//!     },
//!     "children": {},
//! });
//! let now: Timestamp = "2026-11-22T03:00:00Z".parse()?;
//! let answer = registry::call(&sync, request.to_string().as_bytes(), now)??;
//! let answer: serde_json::Value = serde_json::from_slice(&answer)?;
//! // One Deployment of two replicas is desired.
//! assert_eq!(answer["children"][0]["kind"], "Deployment");
//! assert_eq!(answer["children"][0]["spec"]["replicas"], 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

pub mod answer;
pub mod children;
pub mod collection;
pub mod conditions;
pub mod controller;
pub mod decode;
pub mod foo;
pub mod hello;
pub mod hikawa;
pub mod object;
pub mod objects;
pub mod protocol;
pub mod registry;
pub mod request;

pub use answer::{Answer, CustomizeAnswer, DecoratorAnswer, IntoAnswer};
pub use collection::{And, Nothing, ObjectSet, Objects, ObjectsBy};
pub use conditions::Wanted;
pub use controller::{
    ChildType, Composite, Controller, DeclarationError, Decorator, Shape, UpdateStrategy, Webhooks,
};
pub use decode::DecodeError;
pub use jiff::Timestamp;
pub use object::{Object, TypeRef};
pub use protocol::RelatedResourceRule;
pub use registry::{Handler, HookError, HookKind, controllers};
pub use request::{Customize, Decorate, HasConditions, Parent, ParentType, Request};
