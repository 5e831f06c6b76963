//! metahook's controllers as pure functions.
//!
//! Everything here is data in, data out: the CRD types, Metacontroller's hook
//! protocol, and one module per controller. This crate has no I/O
//! dependencies (no tokio, no actix, no kube client, no clock): the binary
//! reads the clock and moves the bytes, and passes `now` in.
#![forbid(unsafe_code)]

pub mod children;
pub mod conditions;
pub mod decode;
pub mod foo;
pub mod hello;
pub mod hikawa;
pub mod objects;
pub mod protocol;
pub mod registry;

pub use decode::DecodeError;
pub use jiff::Timestamp;
pub use registry::{CONTROLLERS, Controller, HookError, HookKind};
