//! Kubernetes operators as pure functions, in Rust.
//!
//! Declare a controller as a value — its parent type, its child types, its
//! hooks as plain functions from what is observed to what should exist —
//! and hand your controllers to [`main`]. Your binary then has metahook's
//! whole command line for them:
//!
//! - `serve`: the hooks over HTTP for Metacontroller, with every limit,
//!   TLS and mutual TLS, a bearer token, health and Prometheus metrics;
//! - `serve --drive` / `drive`: metahook's own driver, for clusters
//!   without Metacontroller (leader election, shards, the aggregated API);
//! - `render` / `render --plan`: one hook on a request file, offline, and
//!   every API call the driver would make of its answer;
//! - `plan --live`: what the driver would do to every parent in the
//!   cluster now, with your hooks, read-only (exit 2 when something would
//!   change: a CI gate before an upgrade);
//! - `crds`: the CRDs, from your Rust types;
//! - `chart` / `manifests`: the Helm chart that installs them (both
//!   modes, TLS, shards, least-privilege RBAC), or the same as plain
//!   manifests, from their declarations;
//! - `new`, in the metahook binary only: a new crate with a controller of
//!   its own, its tests and image.
//!
//! ```no_run
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::CustomResource;
//! use metahook::{Answer, Controller, Request, UpdateStrategy};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Note", namespaced, status = "NoteStatus")]
//! pub struct NoteSpec {
//!     text: String,
//! }
//!
//! #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
//! pub struct NoteStatus {
//!     written: bool,
//! }
//!
//! /// One ConfigMap per Note, holding its text.
//! fn sync(req: &Request<Note, ConfigMap>) -> Answer<NoteStatus> {
//!     let name = &req.parent.metadata.name;
//!     let text = req.parent.spec.as_ref().map(|s| s.text.clone()).unwrap_or_default();
//!     let written = req.children.get(name).is_some();
//!     Answer::new(NoteStatus { written }).child(ConfigMap {
//!         metadata: kube::api::ObjectMeta { name: Some(name.clone()), ..Default::default() },
//!         data: Some([("text".to_owned(), text)].into()),
//!         ..Default::default()
//!     })
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     metahook::main([Controller::composite::<Note>("note")
//!         .sync(sync)])
//! }
//! ```
//!
//! The pure part — requests, answers, the declaration — is
//! [`metahook_core`], re-exported here by name: a crate of hooks can depend
//! on it alone, with no I/O in its tree. What moves bytes is in the crates
//! below, each tested alone; this crate turns arguments into their
//! settings and runs them side by side. Each arrow is a `[dependencies]`
//! edge:
//!
//! ```text
//! metahook (this crate) ──→ core, planner; with `runtime`: service, driver, apiserver
//! metahook-service   (actix-web: the hook webhooks)           ──→ core, tls
//! metahook-driver    (kube-rs: a small Metacontroller)        ──→ planner, core
//! metahook-planner   (pure: what the driver decides)          ──→ core
//! metahook-apiserver (the aggregated API: reconciles)         ──→ driver, core, tls
//! metahook-tls       (rustls: certificates, re-read; the client's, kept)
//! metahook-core      (pure: requests, answers, controllers as values)
//!
//! metahook-seeds     (Hello, Hikawa, Foo, on the public API)  ──→ core
//! the metahook binary (this crate + the seeds)
//! ```
//!
//! Public here: [`main`] and what it runs ([`run`], [`table`], the
//! command line [`cli`]), and the commands a program may call itself:
//! [`crds`] (the CRD YAML from the Rust types), [`render`] (one hook on a
//! request file, offline), [`chart`] (the Helm chart). The rest is this
//! crate's own: turning arguments into each crate's settings, the hook
//! server, driver and aggregated API side by side, `/debug/driver`,
//! logging and traces, `manifests` and `new`.
//!
//! Features: `runtime` (default) is [`main`] and everything it runs.
//! Without it the crate is the declarations and [`chart`] and [`crds`],
//! which write the chart and the CRDs from them: what a controller's tests
//! build (a crate from `metahook new` runs them with
//! `--no-default-features`, its binary with `required-features =
//! ["runtime"]`). `scaffold` adds `new`, for the metahook binary.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod chart;
pub mod crds;
mod ordered;

#[cfg(feature = "runtime")]
mod args;
#[cfg(feature = "runtime")]
pub mod cli;
#[cfg(feature = "runtime")]
mod debug;
#[cfg(feature = "runtime")]
mod manifests;
#[cfg(feature = "runtime")]
mod plan;
#[cfg(feature = "runtime")]
mod program;
#[cfg(feature = "runtime")]
pub mod render;
#[cfg(feature = "scaffold")]
mod scaffold;
#[cfg(feature = "runtime")]
mod side_by_side;
#[cfg(feature = "runtime")]
mod telemetry;

#[cfg(feature = "runtime")]
pub use program::{Error, controllers_help, main, run, table};

// What a controller's code names, by name: a change to metahook-core's
// surface does not reach this crate's unseen. `conditions` for the
// `Condition` a status's list holds; `admission` for a validate hook's
// `Admission` and `Verdict`; `conversion` for a CRD's conversion webhook.
pub use metahook_core::{
    Answer, ChildType, Composite, Conditions, Contains, Controller, Customize, CustomizeAnswer,
    DeclarationError, DecodeError, Decorate, Decorator, DecoratorAnswer, Handler, HookError,
    HookKind, IntoAnswer, Meta, Object, ObjectSet, Objects, ObjectsBy, Of, Parent, ParentMeta,
    ParentType, RelatedResourceRule, Request, Scope, Shape, SpecError, Timestamp, TypeRef,
    UpdateStrategy, WantedCondition, Webhooks, admission, condition_false, condition_true,
    condition_unknown, conditions, conversion, error_chain,
};
