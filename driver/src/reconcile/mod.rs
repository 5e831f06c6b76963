//! One reconcile of one parent, in order (docs/metacontroller.md §3.3).
//!
//! kube's applier calls [`reconcile`] with the parent from the cache and the
//! controller's [`Context`]; after a failure it asks [`error_policy`]
//! (`retry`) when to try again. One reconcile:
//!
//! 1. plans the prelude from the cached parent and children (the finalizer,
//!    adopting and releasing children) and executes it;
//! 2. gathers the related objects the customize hook's rules select
//!    (`related`);
//! 3. calls the sync hook (the finalize hook for a parent being deleted)
//!    with the parent, its children and the related objects (`hook`;
//!    once per revision when a child type rolls, `rolling`);
//! 4. plans what follows from the answer (children to apply and delete, the
//!    status, the finalizer's removal) and executes it — a status change
//!    may wait for a later pass: after a pass that changed a child, for
//!    `--status-settle-ms`; while the API budget holds back converging
//!    writes ([`crate::client::pressure`]), at most [`STATUS_DEFERRAL`];
//! 5. reports: log, metrics, a Warning Event for a failure worth one, the
//!    parent's record (`report`, from what `trace` gathered).
//!
//! A DecoratorController's pass shares steps 1, 2 and 5; its hook and what
//! follows from its answer are `decorate`'s.
//!
//! Deciding is the planner's (`plan/`, pure); acting is the executor's.
//! Which changes queue a parent, and the loop, are `controller/worker.rs`'s.

pub(crate) mod decorate;
mod error;
pub(crate) mod hook;
mod related;
mod report;
mod retry;
pub(crate) mod rolling;
mod trace;

pub use error::ReconcileError;
pub use retry::error_policy;

use hook::call_hook;
use trace::{Again, Trace};

use crate::controller::cache::{CachedObject, ChildCaches};
use crate::controller::context::Context;
use crate::controller::triggers::parent_key;
use crate::decide::plan::{self, Next, StatusPace};
use crate::observe::records::{Condition, ParentRef, Step};
use crate::write::execute::ExecuteErrors;
use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The longest a parent's status change waits for the budget: past it, the
/// status is written however short the budget is, so a steady stream of
/// new children cannot keep a status stale.
pub const STATUS_DEFERRAL: Duration = Duration::from_secs(30);

/// When a parent whose status was deferred is looked at again (sooner if
/// something changes).
const DEFERRED_STATUS_RETRY: Duration = Duration::from_secs(1);

/// Reconciles `parent` (as the applier hands it over, from the cache).
/// `Ok` says when to come back after a success: the hook's
/// `resyncAfterSeconds`, soon for a deferred status, or on the next change.
pub async fn reconcile(
    parent: Arc<CachedObject>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let key = parent_key(&ctx.driven, parent.as_ref());
    let started = Instant::now();
    let mut trace = Trace::default();
    let result = match parent.decode() {
        Ok(decoded) => sync(&decoded, &ctx, &mut trace).await,
        Err(err) => Err(ReconcileError::Cached(err)),
    };
    report::reconciled(
        &ctx,
        parent.as_ref(),
        &key,
        trace,
        &result,
        started.elapsed(),
    )
    .await;
    result.map(|again| again.map_or_else(Action::await_change, |a| Action::requeue(a.after)))
}

/// Steps 1–4. `Ok` carries the requested resync.
async fn sync(
    cached: &DynamicObject,
    ctx: &Arc<Context>,
    trace: &mut Trace,
) -> Result<Option<Again>, ReconcileError> {
    let ctl = &ctx.driven;
    trace.parent = Some(ParentRef::of(ctl, cached));
    let namespace = if ctl.parent.namespaced {
        cached.metadata.namespace.as_deref()
    } else {
        None
    };
    // What the parent may claim: its own children and the orphans, not
    // every object of the type (a desired name another object holds is
    // looked up in the cache itself).
    let parent_uid = cached.metadata.uid.as_deref().unwrap_or_default();
    let candidates = ctx
        .children
        .iter()
        .map(|c| CachedObject::decode_all(&c.candidates(namespace, parent_uid)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(ReconcileError::Cached)?;

    // 1. The prelude.
    let prelude = plan::prelude(ctl, cached, &candidates)?;
    trace
        .steps
        .extend(prelude.ops.iter().map(|op| Step::of(op, ctl, &[])));
    let executed = ctx
        .executor
        .execute(ctl, cached.clone(), prelude.ops)
        .await?;
    if !executed.errors.is_empty() {
        return Err(ReconcileError::Children(ExecuteErrors(executed.errors)));
    }
    let parent = executed.parent;
    let Next::CallHook { hook, observed } = prelude.next else {
        return Ok(None);
    };
    trace.observed = observed.iter().map(Vec::len).sum();

    // 2. Related objects.
    let related = related::objects(ctx, &parent).await?;

    // 3–4 for a decorator: its own request, answer and plan.
    if ctl.is_decorator() {
        let seen = decorate::Observed {
            parent,
            hook,
            attachments: &observed,
            related: &related,
            namespace,
        };
        return decorate::hook_and_apply(ctx, seen, trace).await;
    }

    // 3. The hook: once per revision when a child type rolls.
    let (response, took) = if plan::rolls(ctl, &parent) {
        let seen = rolling::Observed {
            parent: &parent,
            hook,
            children: &observed,
            related: &related,
            namespace,
        };
        rolling::hook_and_roll(ctx, seen, trace).await?
    } else {
        call_hook(ctx, &parent, hook, &observed, &related, namespace).await?
    };
    trace.hook = Some(took);
    trace.desired = Some(response.children.len());
    trace.revision = ctx.hooks.for_pass(hook).revision.clone();
    trace.conditions = Condition::read(response.status.as_ref().and_then(|s| s.get("conditions")));

    // 4. What follows from the answer.
    let memory = ctx.executor.memory();
    let uid = parent.metadata.uid.clone().unwrap_or_default();
    let pace = status_pace(
        ctx.pressure.busy(),
        ctx.status_settle,
        memory.status_deferred_for(&uid),
    );
    let plan = plan::after_hook(
        ctl,
        &parent,
        &observed,
        &ChildCaches(ctx.children.as_slice()),
        response,
        memory.as_ref(),
        pace,
    )?;
    trace
        .steps
        .extend(plan.ops.iter().map(|op| Step::of(op, ctl, &observed)));
    let executed = ctx.executor.execute(ctl, parent, plan.ops).await?;
    if let Some(failure) = plan.failure {
        return Err(ReconcileError::Plan(failure));
    }
    if !executed.errors.is_empty() {
        return Err(ReconcileError::Children(ExecuteErrors(executed.errors)));
    }
    let resync = plan.resync_after.map(|after| Again {
        after,
        reason: "resyncAfterSeconds",
    });
    let Some(catching_up) = plan.deferred_status else {
        memory.status_settled(&uid);
        return Ok(resync);
    };
    memory.defer_status(&uid, catching_up);
    ctx.metrics.status_deferred(ctx.name());
    Ok(Some(match resync {
        Some(again) if again.after <= DEFERRED_STATUS_RETRY => again,
        _ => Again {
            after: DEFERRED_STATUS_RETRY,
            reason: "statusDeferred",
        },
    }))
}

/// Whether this pass may leave the parent's status for later: `busy`, the
/// budget holds back converging writes; `settle`, `--status-settle-ms`;
/// `waiting`, how long the status has waited already (`None`: it is not
/// waiting).
fn status_pace(busy: bool, settle: Duration, waiting: Option<Duration>) -> StatusPace {
    if busy && waiting.unwrap_or_default() < STATUS_DEFERRAL {
        return StatusPace::Deferrable;
    }
    match waiting {
        // Settling after a child's change: until the window ends.
        Some(waited) if waited < settle => StatusPace::Deferrable,
        Some(_) => StatusPace::Now,
        None if settle.is_zero() => StatusPace::Now,
        None => StatusPace::Settle,
    }
}

#[cfg(test)]
mod tests;
