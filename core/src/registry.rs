//! The table of controllers and their hooks: the one place the service, the
//! `render` command and the driver look a hook up. A new controller is one
//! module plus one entry here (and one manifest in `chart/metacontroller/`).

pub use crate::hook::{Panicked, call, run};

use crate::hook::{Handler, HookKind};

use crate::controller::Controller;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// Why a `(controller, hook)` pair names no hook. The messages list what
/// does exist, so a typo is easy to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// No controller has that name.
    #[error("unknown controller {name:?}; known controllers: {known}")]
    UnknownController {
        /// The name asked for.
        name: String,
        /// Every controller's name, comma-separated.
        known: String,
    },
    /// The controller has no hook of that name.
    #[error("controller {controller:?} has no {hook:?} hook; it has: {known}")]
    UnknownHook {
        /// The controller.
        controller: String,
        /// The hook asked for.
        hook: String,
        /// The hooks it has, comma-separated.
        known: String,
    },
}

/// Finds `controller`'s `hook` in `table`.
pub fn lookup<'t>(
    table: &'t [Controller],
    controller: &str,
    hook: &str,
) -> Result<(&'t Controller, HookKind, Handler), LookupError> {
    let found = table
        .iter()
        .find(|c| c.name() == controller)
        .ok_or_else(|| LookupError::UnknownController {
            name: controller.to_owned(),
            known: table
                .iter()
                .map(Controller::name)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    HookKind::parse(hook)
        .and_then(|kind| found.hook(kind).map(|handler| (found, kind, handler)))
        .ok_or_else(|| LookupError::UnknownHook {
            controller: controller.to_owned(),
            hook: hook.to_owned(),
            known: found
                .hook_kinds()
                .map(HookKind::as_str)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Every CRD of every controller of `table`, in its order.
pub fn all_crds(table: &[Controller]) -> Vec<CustomResourceDefinition> {
    table.iter().flat_map(Controller::crds).collect()
}
