//! When a failed reconcile runs again: kube's applier asks
//! [`error_policy`], which answers from the error and the parent's
//! backoff.

use super::error::ReconcileError;
use crate::controller::cache::CachedObject;
use crate::controller::context::Context;
use crate::controller::queue::ParentKey;
use crate::controller::triggers::parent_key;
use crate::observe::records::Requeue;
use kube::runtime::controller::Action;
use std::sync::Arc;
use std::time::Duration;

/// The longest wait between tries of a parent whose children the API
/// server refused, not knowing its kind yet: it learns it within 30 s of
/// the CRD's install, and the backoff would by then wait as long again.
pub(super) const OWNER_KIND_RETRY: Duration = Duration::from_secs(2);

/// Failures in a row for which that refusal is waited out: the backoff's
/// first steps, then `OWNER_KIND_RETRY` apart, span more than those
/// 30 s. After them it is a failure like any other (a Warning, the whole
/// backoff): the kind may never be known.
pub(super) const OWNER_KIND_TRIES: u32 = 30;

/// Whether `err` is the API server still learning the parent's kind, within
/// [`OWNER_KIND_TRIES`] of `key`'s failures.
pub(super) fn learning_owner_kind(ctx: &Context, key: &ParentKey, err: &ReconcileError) -> bool {
    err.is_owner_kind_unknown() && ctx.backoff.failures(key) < OWNER_KIND_TRIES
}

/// When a failed reconcile of `parent` runs again (docs/metacontroller.md
/// §3.10): after the hook's `Retry-After` for a 429, with no backoff step;
/// otherwise after the parent's next backoff step, at most
/// `OWNER_KIND_RETRY` while the API server learns a new CRD's kind.
pub fn error_policy(parent: Arc<CachedObject>, err: &ReconcileError, ctx: Arc<Context>) -> Action {
    let key = parent_key(&ctx.driven, parent.as_ref());
    let (after, reason) = match err.retry_after() {
        Some(after) => (after, "retryAfter"),
        None if learning_owner_kind(&ctx, &key, err) => (
            ctx.backoff.next(&key).min(OWNER_KIND_RETRY),
            "ownerKindUnknown",
        ),
        None => (ctx.backoff.next(&key), "backoff"),
    };
    ctx.records
        .update(&key, |r| r.requeue = Some(Requeue::new(after, reason)));
    ctx.metrics
        .longest_backoff(ctx.name(), ctx.backoff.longest());
    Action::requeue(after)
}
