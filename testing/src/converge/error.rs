//! Why a convergence check could not run, or failed.

use metahook_core::HookError;
use metahook_core::admission::{FieldError, Operation};
use metahook_core::{DeclarationError, HookKind};
use metahook_planner::config::ConfigError;
use metahook_planner::decide::plan::PlanError;
use metahook_planner::decide::related::RelatedError;
use metahook_planner::wire::DecodeResponseError;

/// Why a convergence check could not run, or failed. Each says its cause
/// in its message (`{e}` is enough to see why).
#[derive(Debug, thiserror::Error)]
pub enum ConvergeError {
    /// The declaration has mistakes ([`Controller::check`](metahook_core::Controller::check)).
    #[error(transparent)]
    Declaration(#[from] DeclarationError),
    /// The declaration makes no manifest the driver can drive.
    #[error("the controller's declaration is not one the driver can drive: {0}")]
    Config(#[source] ConfigError),
    /// The controller, named here, is a DecoratorController.
    #[error("{0}: a DecoratorController's convergence is not checked here")]
    Decorator(String),
    /// The controller, named here, has a child type that rolls
    /// (`RollingRecreate`, `RollingInPlace`).
    #[error("{0}: a child type rolls; rolling updates are not checked here")]
    Rolling(String),
    /// No parent was given, or not one of the controller's parent type, or
    /// it is gone: what is wrong with it.
    #[error("the parent is not a Kubernetes object of the controller's parent type: {0}")]
    Parent(String),
    /// A hook gave no answer: the request is not one it reads, or it
    /// failed.
    #[error("pass {pass}: the {hook} hook failed: {source}")]
    Hook {
        /// The pass, from 1.
        pass: usize,
        /// The hook.
        hook: HookKind,
        /// Why.
        #[source]
        source: HookError,
    },
    /// A hook panicked.
    #[error("pass {pass}: the {hook} hook panicked: {message}")]
    Panicked {
        /// The pass, from 1.
        pass: usize,
        /// The hook.
        hook: HookKind,
        /// What the panic said.
        message: String,
    },
    /// A hook's answer is not one the driver takes (a key the protocol
    /// does not have, a value of the wrong type).
    #[error("pass {pass}: the driver would not take the {hook} hook's answer: {source}")]
    Answer {
        /// The pass, from 1.
        pass: usize,
        /// The hook.
        hook: HookKind,
        /// What the driver found wrong.
        #[source]
        source: DecodeResponseError,
    },
    /// The driver would not act on the answer: a desired child without a
    /// name, of a type not declared, or whose labels the parent's selector
    /// does not match.
    #[error("pass {pass}: the driver would not act on the answer: {source}")]
    Plan {
        /// The pass, from 1.
        pass: usize,
        /// What the driver found wrong.
        #[source]
        source: PlanError,
    },
    /// A rule of the customize hook's answer is invalid (names with a
    /// selector, say).
    #[error("pass {pass}: the customize hook's rules: {source}")]
    Related {
        /// The pass, from 1.
        pass: usize,
        /// What is wrong with the rule.
        #[source]
        source: RelatedError,
    },
    /// An object in the cluster (one given, or one a pass wrote) is not a
    /// Kubernetes object the driver can read.
    #[error("pass {pass}: an object the store holds is not a Kubernetes object: {source}")]
    Object {
        /// The pass, from 1.
        pass: usize,
        /// Why it could not be read.
        #[source]
        source: serde_json::Error,
    },
    /// The controller never settled.
    #[error(transparent)]
    NotSettled(#[from] NotSettled),
    /// The controller's own admission hooks refused a create or a change
    /// of the parent: nothing was stored, as `kubectl` is refused.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// An admission hook gave no answer, or one the API server would not
    /// take (its webhook fails closed: the write is refused).
    #[error("the {hook} hook did not answer the {operation} of the parent: {message}")]
    Admission {
        /// The hook: `validate` or `default`.
        hook: HookKind,
        /// `create` or `update`.
        operation: &'static str,
        /// Why.
        message: String,
    },
}

/// A write of the parent its controller's admission hooks refused: the
/// message and the fields, as `kubectl` shows them, and what they warned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the {hook} hook refused the {} of {object}: {message}",
    verb(*operation)
)]
pub struct Refused {
    /// The hook that refused: `validate` (or `default`).
    pub hook: HookKind,
    /// Create or update.
    pub operation: Operation,
    /// The parent: `Foo default/example-foo`.
    pub object: String,
    /// Every refusal in one line, as the client reads it:
    /// `spec.replicas: greater than 20`.
    pub message: String,
    /// Each field refused, and why.
    pub fields: Vec<FieldError>,
    /// What the hooks warned before refusing.
    pub warnings: Vec<String>,
}

/// A controller that kept writing: what its last pass still wrote.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the {controller} controller did not settle in {passes} passes; its last pass still wrote:\n{}",
    writes.iter().map(|w| format!("  {w}")).collect::<Vec<_>>().join("\n")
)]
pub struct NotSettled {
    /// The controller's name.
    pub controller: String,
    /// The passes it was allowed ([`Converge::max_passes`](crate::Converge::max_passes)).
    pub passes: usize,
    /// Each write of the last pass: what, and which fields made it.
    pub writes: Vec<String>,
}

/// `create`, `update`: the operation as a message names it.
pub(super) fn verb(operation: Operation) -> &'static str {
    match operation {
        Operation::Create => "create",
        Operation::Update => "update",
        Operation::Delete => "delete",
        Operation::Connect => "connect",
    }
}
