//! One controller at run time: the caches' changes turned into queued
//! parents (`triggers.rs`), the loop that reconciles them, and the periodic
//! resync (docs/metacontroller.md §3.2).
//!
//! The loop is kube's `applier` (the runtime under
//! `kube::runtime::Controller`): it coalesces requests, never runs one
//! parent twice at once, lets the earliest requeue win and bounds
//! concurrency. Its requests come from the driver's own caches (`cache.rs`:
//! shared between controllers, relisting with readiness), not from watches
//! of its own. What one reconcile does is `reconcile/`.

use crate::controller::cache::{CachedObject, Change};
use crate::controller::context::Context;
use crate::controller::queue::{self, ParentKey};
use crate::controller::triggers;
use crate::decide::model::key_of;
use crate::decide::order::{self, Urgency};
use crate::reconcile::{self, ReconcileError, error_policy};
use futures::StreamExt;
use futures::future::BoxFuture;
use kube::ResourceExt;
use kube::runtime::controller::{Action, Error as ApplierError, ReconcileRequest, applier};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Metacontroller replays every cached parent this often (its
/// `--cache-flush-interval` default) unless `resyncPeriodSeconds` is shorter.
pub const DEFAULT_RESYNC: Duration = Duration::from_secs(30 * 60);

/// Queues parents as their caches change: a parent's own change, a child's,
/// and (set up by the reconcile, once a customize rule names a type) a
/// related object's.
pub fn subscribe(ctx: &Arc<Context>) {
    let weak = Arc::downgrade(ctx);
    ctx.parents.subscribe(Arc::new(move |change| {
        let Some(ctx) = weak.upgrade() else { return };
        if let Change::Deleted(gone) = change {
            let key = triggers::parent_key(&ctx.driven, gone.as_ref());
            let uid = gone.uid().unwrap_or_default();
            ctx.customized.forget(&uid);
            ctx.executor.memory().forget_parent(&uid);
            ctx.backoff.forget(&key);
            ctx.records.forget(&key);
            ctx.count_answered();
            ctx.status_changes.forget(&uid);
        }
        if let Change::Applied(parent) | Change::Listed(parent) = change {
            ctx.executor.memory().parent_seen(
                &parent.uid().unwrap_or_default(),
                parent.resource_version().as_deref().unwrap_or_default(),
            );
        }
        if let Change::Applied(parent) | Change::Listed(parent) = change
            && ctx.driven.config.parent.ignore_status_changes
            && !ctx.status_changes.passes(parent.as_ref())
        {
            return;
        }
        if let Some(key) = triggers::parent_changed(&ctx.driven, change) {
            // Listed: as urgent as its own fields say, as at a start.
            let urgency = match change {
                Change::Listed(parent) => own_urgency(parent),
                Change::Applied(_) | Change::Deleted(_) => Urgency::Changed,
            };
            ctx.enqueue_as(key, urgency);
        }
    }));
    for (type_index, cache) in ctx.children.iter().enumerate() {
        let weak = Arc::downgrade(ctx);
        cache.subscribe(Arc::new(move |change| {
            let Some(ctx) = weak.upgrade() else { return };
            if let Change::Deleted(obj) = change {
                // Whoever deleted it (we, the garbage collector, a user),
                // the last apply no longer describes it.
                ctx.executor.memory().forget(
                    type_index,
                    obj.metadata.namespace.as_deref(),
                    &obj.name_any(),
                );
            }
            let urgency = change.urgency_for_parents();
            for key in triggers::child_changed(&ctx.driven, change, ctx.parents.as_ref()) {
                ctx.enqueue_as(key, urgency);
            }
        }));
    }
}

/// Starts leading (at a start, or a warm standby's takeover): the parents
/// a standby saw change within its window first, then every other
/// ([`enqueue_all`]).
pub fn start_leading(ctx: &Context) {
    for key in ctx.standby.take_over(tokio::time::Instant::now()) {
        ctx.enqueue_as(key, Urgency::Changed);
    }
    enqueue_all(ctx);
}

/// Queues every cached parent the controller handles (start, takeover,
/// resync), those whose own fields say the cluster is behind them first;
/// counts them (`metahook_driver_parents`).
pub fn enqueue_all(ctx: &Context) {
    let mut handled = 0;
    for parent in ctx.parents.list(None) {
        if triggers::handles(&ctx.driven, parent.as_ref()) {
            handled += 1;
            let urgency = own_urgency(&parent);
            ctx.enqueue_as(triggers::parent_key(&ctx.driven, parent.as_ref()), urgency);
        }
    }
    ctx.metrics.parents(ctx.name(), handled);
}

/// What a parent's own fields say of it (`order::urgency_of`).
fn own_urgency(parent: &CachedObject) -> Urgency {
    order::urgency_of(
        parent.metadata.deletion_timestamp.is_some(),
        parent.metadata.generation,
        parent.observed_generation(),
    )
}

/// Waits until the parent and child caches have listed once.
pub async fn wait_synced(ctx: &Context) {
    ctx.parents.wait_synced().await;
    for c in &ctx.children {
        c.wait_synced().await;
    }
}

/// How the loop runs: reconciles at once, and how long a parent's triggers
/// are gathered into one reconcile (kube's trailing-edge debounce: a child
/// that passes through several states in a row, as a Deployment rolling
/// out does, costs one reconcile and one status write instead of one per
/// state).
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    pub workers: usize,
    pub debounce: Duration,
}

/// Reconciles queued parents as `pace` says, and every cached parent again
/// each `resync`, until `stop`; then lets the reconciles in progress finish.
/// Runs once per context.
pub async fn run(ctx: Arc<Context>, pace: Pace, resync: Duration, stop: CancellationToken) {
    if !ctx.queue.start_streaming() {
        return;
    }
    let bound = queue::hand_off_bound(pace.workers.max(1));
    let from_queue = Arc::clone(&ctx);
    let requests =
        futures::stream::poll_fn(move |cx| from_queue.queue.poll_next(cx, bound).map(Some))
            .map(|key| Ok::<_, std::convert::Infallible>(ReconcileRequest::from(key)))
            .take_until(stop.clone().cancelled_owned());
    let config = kube::runtime::Config::default()
        .concurrency(u16::try_from(pace.workers.max(1)).unwrap_or(u16::MAX))
        .debounce(pace.debounce);
    let results = applier(
        |parent, ctx| -> BoxFuture<'static, Result<Action, ReconcileError>> {
            Box::pin(reconcile_isolated(parent, ctx))
        },
        error_policy,
        Arc::clone(&ctx),
        ctx.parents.store.clone(),
        requests,
        config,
    )
    .for_each(|result| {
        // A parent deleted after it was queued: nothing to do.
        if let Err(ApplierError::ObjectNotFound(gone)) = &result {
            ctx.dequeued(&crate::controller::queue::key_of_erased(gone));
        }
        std::future::ready(())
    });
    let resyncs = async {
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + resync, resync);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = ticker.tick() => enqueue_all(&ctx),
            }
        }
    };
    futures::join!(results, resyncs);
}

/// A reconcile taken from the queue, with a panic counted as a failed
/// reconcile: a bug in one reconcile must not stop the controller.
///
/// It works on the parent as the cache holds it once the key has left the
/// queue, not on the copy the applier read when it took the key: a change
/// that lands in between finds the key still waiting and sends nothing
/// (`queue.rs`), so it would be lost until the next event. Found on the
/// real node: a Hello relabelled into a shard and scaled 15 ms later kept
/// its old scale for minutes.
pub(crate) async fn reconcile_isolated(
    handed: Arc<CachedObject>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let key: ParentKey = triggers::parent_key(&ctx.driven, handed.as_ref());
    ctx.dequeued(&key);
    // Gone meanwhile (deleted, or no longer this shard's): nothing to do,
    // as when the applier finds no object for a key.
    let Some(parent) = ctx.parents.store.get(&key) else {
        return Ok(Action::await_change());
    };
    let name = key_of(key.namespace.as_deref(), &key.name);
    let span = tracing::info_span!(
        "reconcile",
        controller = %ctx.name(),
        parent = %name,
        trace_id = tracing::field::Empty,
    );
    if let Some(id) = crate::observe::otel::trace_id(&span) {
        span.record("trace_id", id);
    }
    let run = std::panic::AssertUnwindSafe(
        reconcile::reconcile(parent, Arc::clone(&ctx)).instrument(span),
    );
    match futures::FutureExt::catch_unwind(run).await {
        Ok(result) => result,
        Err(_) => {
            tracing::error!(controller = %ctx.name(), parent = %name, "reconcile panicked");
            ctx.metrics.reconciled(ctx.name(), "error", Duration::ZERO);
            Err(ReconcileError::Panicked)
        }
    }
}

#[cfg(test)]
mod tests;
