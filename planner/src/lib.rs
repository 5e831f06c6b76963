//! The pure part of metahook's driver: what it decides, with no I/O — no
//! tokio, hyper, rustls or kube client in its tree (kube's types only).
//! The driver (metahook-driver) runs it against a cluster; the convergence
//! check (metahook-testing) and `metahook render --plan` run it in memory.
//!
//! | module | holds |
//! | --- | --- |
//! | [`config`] | the CompositeController and DecoratorController manifests, read and checked offline |
//! | [`decide`] | the planner ([`decide::plan`]), the controller as driven ([`decide::model`]), selectors, related objects, ControllerRevisions |
//! | [`wire`] | a hook's request and response, as Metacontroller's webhooks carry them |
//! | [`steps`] | one operation of a plan as a person reads it (records, previews) |
//! | [`preview`] | `metahook render --plan`: the planner on one recorded request |
#![forbid(unsafe_code)]

pub mod config;
pub mod decide;
pub mod preview;
pub mod steps;
pub mod wire;

#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod test_support;
