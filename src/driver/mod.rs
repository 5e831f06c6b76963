//! The bundled driver: a small Metacontroller for the CompositeControllers
//! in `metacontroller/` (METACONTROLLER.md §2–§5, the subset of issue 7).
//!
//! - [`config`]: the CompositeController subset, validated before any
//!   cluster connection;
//! - [`plan`]: every decision, pure; [`execute`]: performs a plan;
//! - [`wire`]: hook requests and responses as Metacontroller builds and
//!   reads them; [`hook_call`]: in-process or over HTTP;
//! - [`cache`], [`queue`], [`worker`]: watching, queueing, reconciling;
//! - [`leader`], [`metrics`]: running several replicas, and being seen.

pub mod config;
pub mod model;
pub mod plan;
pub mod selector;
pub mod wire;

pub mod cache;
pub mod execute;
pub mod hook_call;
pub mod memory;
pub mod metrics;
pub mod queue;
pub mod related;
pub mod worker;

#[cfg(test)]
mod execute_tests;
#[cfg(test)]
mod plan_tests;
