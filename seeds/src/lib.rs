//! The controllers metahook ships, each from one of the seed articles, and
//! each written on metahook's public API alone — as a controller of yours
//! would be:
//!
//! - [`hello`]: a `Hello` runs one Deployment (the kube-rs Hello operator);
//! - [`hikawa`]: a `Hikawa` sings Zundoko Kiyoshi with child objects;
//! - [`foo`]: a `Foo` runs the Deployment its spec names (the Kubernetes
//!   sample-controller), with a customize hook.
//!
//! What they read the same way (a spec checked for every problem at once,
//! the Deployments among the children) is written once, in `reading`; what
//! they write alike in [`children`] (a Deployment) and [`conditions`]
//! (`SpecValid`, a Deployment's `Ready`); the Deployment as they read it in
//! [`deployment`].
//!
//! ```
//! let names: Vec<&str> = metahook_seeds::controllers().iter().map(|c| c.name()).collect();
//! assert_eq!(names, ["hello", "hikawa", "foo"]);
//! ```
#![forbid(unsafe_code)]

pub mod children;
pub mod conditions;
pub mod deployment;
pub mod foo;
pub mod hello;
pub mod hikawa;
mod reading;

use metahook_core::Controller;

/// Hello, Hikawa and Foo, declared once for the process.
pub fn controllers() -> &'static [Controller] {
    static CONTROLLERS: std::sync::OnceLock<Vec<Controller>> = std::sync::OnceLock::new();
    CONTROLLERS.get_or_init(|| vec![hello::controller(), hikawa::controller(), foo::controller()])
}

/// One of them by name.
pub fn controller(name: &str) -> Option<&'static Controller> {
    controllers().iter().find(|c| c.name() == name)
}
