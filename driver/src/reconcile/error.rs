//! Why a reconcile failed, and which failures are quiet retries (a stale
//! cache, a namespace being deleted, an owner kind the API server has yet
//! to learn, a hook's 429) rather than errors worth a Warning and a
//! backoff step.

use crate::decide::plan::PlanError;
use crate::decide::related::RelatedError;
use crate::hook::call::HookCallError;
use crate::hook::wire::DecodeResponseError;
use crate::write::execute::{ExecuteError, ExecuteErrors};
use metahook_core::HookKind;
use std::time::Duration;

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("planning failed")]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Execute(#[from] ExecuteError),
    #[error("managing children failed")]
    Children(#[source] ExecuteErrors),
    #[error("calling the hook failed")]
    Hook(#[from] HookCallError),
    #[error("the {hook} hook's response could not be decoded")]
    Decode {
        hook: HookKind,
        #[source]
        source: DecodeResponseError,
    },
    #[error("encoding the hook request failed")]
    Encode(#[from] serde_json::Error),
    #[error("selecting related objects failed")]
    Related(#[from] RelatedError),
    #[error("related resource {api_version} {resource} is not known to the API server")]
    UnknownRelated {
        api_version: String,
        resource: String,
    },
    #[error("the cache of {0} has not synced yet")]
    NotSynced(String),
    #[error("the cached object could not be decoded")]
    Cached(#[source] serde_json::Error),
    #[error("the reconcile panicked")]
    Panicked,
}

impl ReconcileError {
    /// Failed only because a cached object was out of date.
    pub(crate) fn is_stale_cache(&self) -> bool {
        self.only(ExecuteError::is_stale_cache)
    }

    /// Failed only because the parent's namespace is being deleted.
    pub(crate) fn is_namespace_terminating(&self) -> bool {
        self.only(ExecuteError::is_namespace_terminating)
    }

    /// Failed only because the API server does not know the parent's kind
    /// yet, a CRD just installed (`ExecuteError::is_owner_kind_unknown`).
    pub(crate) fn is_owner_kind_unknown(&self) -> bool {
        self.only(ExecuteError::is_owner_kind_unknown)
    }

    /// Failed at the API server, and every failure there was of one kind.
    fn only(&self, kind: fn(&ExecuteError) -> bool) -> bool {
        match self {
            ReconcileError::Execute(e) => kind(e),
            ReconcileError::Children(ExecuteErrors(errors)) => {
                !errors.is_empty() && errors.iter().all(kind)
            }
            _ => false,
        }
    }

    /// 429 from a hook: retry after this long, with no event and no backoff.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self {
            ReconcileError::Hook(HookCallError::TooManyRequests { retry_after, .. }) => {
                Some(*retry_after)
            }
            _ => None,
        }
    }
}
