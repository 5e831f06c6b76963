//! Why a plan cannot be made: the hook's answer or the parent breaks the
//! controller's contract. The reconcile reports it, and retries.

use crate::decide::selector::SelectorError;

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum PlanError {
    #[error(".spec.selector must have either matchLabels, matchExpressions, or both")]
    NoSelector,
    #[error(".spec.selector is invalid")]
    BadSelector(#[source] SelectorError),
    #[error("desired child {index}: {message}")]
    BadChild { index: usize, message: String },
    #[error(
        "labels on desired child {kind} {name} don't match the parent's selector (nothing was applied)"
    )]
    SelectorMismatch { kind: String, name: String },
    #[error(
        "desired child {index} is a {api_version} {kind}, which is not one of the controller's childResources"
    )]
    UndeclaredChild {
        index: usize,
        api_version: String,
        kind: String,
    },
    #[error("ControllerRevision {name}: {message}")]
    BadRevision { name: String, message: String },
    #[error("rolling update: {0}")]
    Rolling(String),
}
