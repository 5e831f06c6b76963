//! Why a plan stopped, and why one parent has no plan.

use crate::decide::plan::PlanError;
use crate::decide::related::RelatedError;
use crate::hook::call::HookCallError;
use crate::hook::wire::DecodeResponseError;
use crate::start::discovery::DiscoveryError;
use crate::start::run::DriveError;
use metahook_core::HookKind;

/// Why the plan stopped.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// A controller's types could not be resolved through discovery.
    #[error("resolving the controller's types failed")]
    Resolve(#[source] Box<DriveError>),
    /// A list of parents, children or related objects failed.
    #[error("listing {resource} failed")]
    List {
        /// The list's path.
        resource: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// A parent's plan could not be handed on (its output failed).
    #[error("writing the plan failed")]
    Output(#[source] std::io::Error),
}

/// Why one parent has no plan.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    /// The parent or a child as listed did not decode.
    #[error("an object as listed could not be read")]
    Cached(#[source] serde_json::Error),
    /// The planner refused what it was given.
    #[error("planning failed")]
    Plan(#[from] PlanError),
    /// A hook request could not be written.
    #[error("the hook request could not be written")]
    Request(#[source] serde_json::Error),
    /// The hook failed, refused the request, or panicked.
    #[error(transparent)]
    Hook(#[from] HookCallError),
    /// The hook's answer is not one the driver takes.
    #[error("the {hook} hook's answer could not be decoded")]
    Answer {
        /// The hook.
        hook: HookKind,
        /// Why.
        #[source]
        source: DecodeResponseError,
    },
    /// A customize rule cannot select.
    #[error("a related rule is invalid")]
    Rule(#[from] RelatedError),
    /// A customize rule names a type the API server does not serve.
    #[error("a related rule's type could not be resolved")]
    Discovery(#[source] Box<DiscoveryError>),
    /// A related type could not be listed.
    #[error("reading the related objects failed")]
    Related(#[source] Box<LiveError>),
}
