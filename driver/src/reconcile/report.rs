//! Step 5 of a reconcile: what it did made visible. The outcome logged and
//! counted, a Warning Event for a failure worth one (not for a quiet retry),
//! the backoff reset on success, and the parent's record replaced.

use super::error::ReconcileError;
use super::retry::learning_owner_kind;
use super::trace::{Again, Trace};
use crate::controller::cache::CachedObject;
use crate::controller::context::Context;
use crate::controller::queue::ParentKey;
use crate::decide::plan::EventType;
use crate::observe::records::{ChildCount, Outcome, Record, Requeue};
use std::time::Duration;

pub(super) async fn reconciled(
    ctx: &Context,
    parent: &CachedObject,
    key: &ParentKey,
    trace: Trace,
    result: &Result<Option<Again>, ReconcileError>,
    took: Duration,
) {
    let learning = result
        .as_ref()
        .is_err_and(|err| learning_owner_kind(ctx, key, err));
    let outcome = outcome(&trace, result, learning);
    match result {
        Ok(_) => {
            ctx.backoff.forget(key);
            ctx.metrics
                .longest_backoff(ctx.name(), ctx.backoff.longest());
            tracing::debug!(?took, "reconciled");
        }
        Err(err) => match outcome {
            Outcome::RetryLater => {
                tracing::info!(after = ?err.retry_after(), "hook asked to retry later");
            }
            Outcome::WaitingForCache => tracing::debug!(error = %err, "waiting for a cache"),
            Outcome::StaleCache => {
                tracing::info!(error = %crate::api_error_chain(err), "cache out of date; retrying");
            }
            Outcome::NamespaceTerminating => {
                tracing::debug!(error = %crate::api_error_chain(err), "the namespace is being deleted; retrying");
            }
            Outcome::OwnerKindUnknown => {
                tracing::info!(
                    error = %crate::api_error_chain(err),
                    "the API server does not know the parent's kind yet (a CRD just installed); retrying"
                );
            }
            _ => {
                let chain = crate::api_error_chain(err);
                tracing::warn!(error = %chain, failures = ctx.backoff.failures(key), "reconcile failed");
                ctx.executor
                    .publish(
                        &ctx.driven,
                        parent,
                        EventType::Warning,
                        "SyncError".to_owned(),
                        format!("Sync error: {chain}"),
                    )
                    .await;
            }
        },
    }
    ctx.metrics
        .reconciled(ctx.name(), metric_label(outcome), took);
    record(ctx, key, trace, result, outcome, took);
}

/// `learning`: the error is the API server still learning the parent's
/// kind (`retry::learning_owner_kind`).
fn outcome(
    trace: &Trace,
    result: &Result<Option<Again>, ReconcileError>,
    learning: bool,
) -> Outcome {
    match result {
        Ok(_) if trace.steps.is_empty() => Outcome::Unchanged,
        Ok(_) => Outcome::Succeeded,
        Err(err) if err.retry_after().is_some() => Outcome::RetryLater,
        Err(ReconcileError::NotSynced(_)) => Outcome::WaitingForCache,
        Err(err) if err.is_stale_cache() => Outcome::StaleCache,
        Err(err) if err.is_namespace_terminating() => Outcome::NamespaceTerminating,
        Err(_) if learning => Outcome::OwnerKindUnknown,
        Err(_) => Outcome::Failed,
    }
}

/// The `outcome` label of `metahook_driver_reconciles_total`.
fn metric_label(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Succeeded | Outcome::Unchanged => "ok",
        Outcome::RetryLater => "retry_after",
        Outcome::WaitingForCache => "waiting",
        Outcome::StaleCache => "stale",
        Outcome::NamespaceTerminating => "namespace_terminating",
        Outcome::OwnerKindUnknown => "owner_kind_unknown",
        Outcome::Failed => "error",
    }
}

/// Keeps what this reconcile did as the parent's record.
fn record(
    ctx: &Context,
    key: &ParentKey,
    trace: Trace,
    result: &Result<Option<Again>, ReconcileError>,
    outcome: Outcome,
    took: Duration,
) {
    let Some(parent) = trace.parent else {
        return;
    };
    ctx.records.put(
        key,
        Record {
            controller: ctx.name().to_owned(),
            parent,
            last_run: jiff::Timestamp::now().to_string(),
            outcome,
            duration_seconds: took.as_secs_f64(),
            hook_seconds: trace.hook.map(|d| d.as_secs_f64()),
            plan: trace.steps,
            error: result.as_ref().err().map(|e| crate::api_error_chain(e)),
            requeue: match result {
                Ok(Some(again)) => Some(Requeue::new(again.after, again.reason)),
                _ => None,
            },
            children: ChildCount {
                desired: trace.desired,
                observed: trace.observed,
            },
            conditions: trace.conditions,
            revision: trace.revision.map(|r| r.to_string()),
            trace_id: crate::observe::otel::trace_id(&tracing::Span::current()),
        },
    );
    // A parent deleted while this reconcile ran has had its record
    // forgotten already: checked after the put, so none outlives it.
    if ctx.parents.store.get(key).is_none() {
        ctx.records.forget(key);
    }
    ctx.count_answered();
}
