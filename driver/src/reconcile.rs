//! One reconcile of one parent (docs/metacontroller.md §3.3): plan the
//! prelude, execute it, call the hook, plan what follows from its answer,
//! execute that. What happens after (requeue, backoff, events) is
//! `worker.rs`'s.

use crate::execute::{ExecuteError, ExecuteErrors};
use crate::hook_call::HookCallError;
use crate::model::split_key;
use crate::plan::{self, Next, PlanError};
use crate::records::{Condition, ParentRef, Step};
use crate::related::RelatedError;
use crate::wire::{self, DecodeResponseError, TypedObjects};
use crate::worker::ControllerRuntime;
use kube::api::DynamicObject;
use metahook_hooks::HookKind;
use std::sync::Arc;
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

/// What one reconcile did, for its record: filled in as it goes, so a
/// failure leaves what was done before it.
#[derive(Debug, Default)]
pub struct Trace {
    pub parent: Option<ParentRef>,
    pub steps: Vec<Step>,
    pub hook: Option<Duration>,
    pub desired: Option<usize>,
    pub observed: usize,
    pub conditions: Vec<Condition>,
}

impl ControllerRuntime {
    /// docs/metacontroller.md §3.3 for one key. `Ok` carries the requested resync.
    pub async fn reconcile(
        self: &Arc<Self>,
        key: &str,
    ) -> Result<Option<Duration>, ReconcileError> {
        self.reconcile_traced(key, &mut Trace::default()).await
    }

    /// [`Self::reconcile`], telling `trace` what it does.
    pub async fn reconcile_traced(
        self: &Arc<Self>,
        key: &str,
        trace: &mut Trace,
    ) -> Result<Option<Duration>, ReconcileError> {
        let (namespace, name) = split_key(key);
        let Some(cached) = self.parents.get(namespace, name) else {
            return Ok(None);
        };
        let ctl = &self.driven;
        trace.parent = Some(ParentRef::of(ctl, &cached));
        let candidates: Vec<Vec<Arc<DynamicObject>>> = self
            .children
            .iter()
            .map(|c| {
                let ns = if ctl.parent.namespaced {
                    namespace
                } else {
                    None
                };
                c.list(ns)
            })
            .collect();
        // Listed once: the hook sees these (claimed), and the planner checks
        // desired names against them (taken by someone else).
        let prelude = plan::prelude(ctl, &cached, &candidates)?;
        trace
            .steps
            .extend(prelude.ops.iter().map(|op| Step::of(op, ctl, &[])));
        let outcome = self
            .executor
            .execute(ctl, (*cached).clone(), prelude.ops)
            .await?;
        if !outcome.errors.is_empty() {
            return Err(ReconcileError::Children(ExecuteErrors(outcome.errors)));
        }
        let parent = outcome.parent;
        let Next::CallHook { hook, observed } = prelude.next else {
            return Ok(None);
        };
        trace.observed = observed.iter().map(Vec::len).sum();
        let related = self.related(&parent).await?;
        let target = match hook {
            HookKind::Finalize => self.hooks.finalize.as_ref().unwrap_or(&self.hooks.sync),
            _ => &self.hooks.sync,
        };
        let parent_ns = if ctl.parent.namespaced {
            parent.metadata.namespace.as_deref()
        } else {
            None
        };
        let children_types: Vec<TypedObjects<'_>> = ctl
            .children
            .iter()
            .zip(&observed)
            .map(|(t, objects)| TypedObjects {
                resource: &t.resource,
                objects,
            })
            .collect();
        let children_map = wire::object_map(&children_types, target.version, parent_ns);
        let related_types: Vec<TypedObjects<'_>> = related
            .iter()
            .map(|(resource, objects)| TypedObjects { resource, objects })
            .collect();
        let related_map = wire::object_map(&related_types, target.version, parent_ns);
        let request = wire::sync_request(
            &ctl.config.object,
            &parent,
            children_map,
            related_map,
            hook == HookKind::Finalize,
        )?;
        let called = std::time::Instant::now();
        let answer = self.caller.call(self.name(), target, request).await;
        trace.hook = Some(called.elapsed());
        let response = wire::decode_sync_response(&answer?, target.strict())
            .map_err(|source| ReconcileError::Decode { hook, source })?;
        trace.desired = Some(response.children.len());
        trace.conditions =
            Condition::read(response.status.as_ref().and_then(|s| s.get("conditions")));
        let plan = plan::after_hook(
            ctl,
            &parent,
            &observed,
            &candidates,
            response,
            self.executor.memory().as_ref(),
        )?;
        trace
            .steps
            .extend(plan.ops.iter().map(|op| Step::of(op, ctl, &observed)));
        let outcome = self.executor.execute(ctl, parent, plan.ops).await?;
        if let Some(failure) = plan.failure {
            return Err(ReconcileError::Plan(failure));
        }
        if !outcome.errors.is_empty() {
            return Err(ReconcileError::Children(ExecuteErrors(outcome.errors)));
        }
        Ok(plan.resync_after)
    }
}
