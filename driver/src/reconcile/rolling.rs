//! Step 3 when a child type rolls (docs/metacontroller.md §4.3): the
//! parent's revisions claimed from the ControllerRevision cache (orphans
//! adopted, as children are), the hook called
//! once per revision (concurrently, each with its own parent and related
//! objects, all with the same children), the rollout planned
//! (`decide/plan/rolling/`) and its ControllerRevisions written — before any
//! child is touched. What follows is a single answer, as without rolling.

use super::error::ReconcileError;
use super::hook::call_hook;
use super::related;
use super::trace::Trace;
use crate::controller::cache::CachedObject;
use crate::controller::context::Context;
use crate::decide::model::ResolvedType;
use crate::decide::plan;
use crate::hook::wire::HookResponse;
use crate::observe::records::Step;
use futures::future::try_join_all;
use kube::api::DynamicObject;
use metahook_core::HookKind;
use std::sync::Arc;
use std::time::Duration;

/// What the pass has seen by step 3.
pub(super) struct Observed<'a> {
    pub parent: &'a DynamicObject,
    pub hook: HookKind,
    pub children: &'a [Vec<Arc<DynamicObject>>],
    /// The latest revision's related objects (the parent's own).
    pub related: &'a [(ResolvedType, Vec<Arc<DynamicObject>>)],
    pub namespace: Option<&'a str>,
}

/// The one answer the rest of the pass follows, and the longest hook call.
pub(super) async fn hook_and_roll(
    ctx: &Arc<Context>,
    seen: Observed<'_>,
    trace: &mut Trace,
) -> Result<(HookResponse, Duration), ReconcileError> {
    let ctl = &ctx.driven;
    let cache = ctx
        .revisions
        .as_ref()
        .filter(|c| c.is_synced())
        .ok_or_else(|| ReconcileError::NotSynced("ControllerRevision".to_owned()))?;
    // Its own revisions and the orphans: what it may claim.
    let uid = seen.parent.metadata.uid.as_deref().unwrap_or_default();
    let candidates = CachedObject::decode_all(&cache.candidates(seen.namespace, uid))
        .map_err(ReconcileError::Cached)?;
    let (theirs, mut ops) = plan::claim_revisions(ctl, seen.parent, &candidates)?;
    let revisions = plan::revisions(ctl, seen.parent, &theirs)?;
    let calls = revisions.iter().enumerate().map(|(i, rev)| async move {
        let own;
        let related = if i == 0 {
            seen.related
        } else {
            own = related::objects(ctx, &rev.parent).await?;
            &own[..]
        };
        call_hook(
            ctx,
            &rev.parent,
            seen.hook,
            seen.children,
            related,
            seen.namespace,
        )
        .await
    });
    let answers = try_join_all(calls).await?;
    let took = answers.iter().map(|(_, t)| *t).max().unwrap_or_default();
    let responses = answers.into_iter().map(|(r, _)| r).collect();
    let rolled = plan::roll(ctl, seen.parent, revisions, responses, seen.children)?;
    // Claims first: an adopted revision's update then fails on its old
    // resourceVersion, a stale cache, and the next pass writes it.
    ops.extend(rolled.ops);
    trace
        .steps
        .extend(ops.iter().map(|op| Step::of(op, ctl, &[])));
    ctx.executor.execute(ctl, seen.parent.clone(), ops).await?;
    Ok((rolled.response, took))
}
