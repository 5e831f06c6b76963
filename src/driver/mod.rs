//! The bundled driver: a small Metacontroller for the CompositeControllers
//! in `metacontroller/` (docs/metacontroller.md §2–§5: the subset it supports).
//!
//! - [`config`]: the CompositeController subset, validated before any
//!   cluster connection;
//! - [`plan`]: every decision, pure; [`execute`]: performs a plan;
//! - [`wire`]: hook requests and responses as Metacontroller builds and
//!   reads them; [`hook_call`]: in-process or over HTTP; [`related`]:
//!   customize rules;
//! - [`cache`], [`queue`], [`worker`]: watching, queueing, reconciling;
//! - [`run`]: start-up and shutdown; [`throttle`]: the client-side budget
//!   for API requests; [`leader`], [`metrics`]: several replicas, and being
//!   seen.

pub mod cache;
pub mod config;
pub mod discovery;
pub mod events;
pub mod execute;
pub mod hook_call;
pub mod leader;
pub mod memory;
pub mod metrics;
pub mod model;
pub mod plan;
pub mod queue;
pub mod related;
pub mod responses;
pub mod run;
pub mod selector;
pub mod throttle;
pub mod wire;
pub mod worker;

#[cfg(test)]
pub(crate) mod execute_tests;
#[cfg(test)]
mod pipeline_tests;
#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod worker_tests;
