//! Step 3 when a child type rolls (docs/metacontroller.md §4.3): the
//! parent's revisions claimed from the ControllerRevision cache (orphans
//! adopted, as children are), the hook called
//! once per revision (concurrently, each with its own parent and related
//! objects, all with the same children), the rollout planned
//! (`decide/plan/rolling/`) and its ControllerRevisions written — before any
//! child is touched. What follows is a single answer, as without rolling.
//! [`rollout`] is that order around the hook calls, shared with
//! `plan --live` (`observe/live/pass.rs`), which calls the hooks the same
//! way and writes nothing.

use super::error::ReconcileError;
use super::hook::call_hook;
use super::related;
use super::trace::Trace;
use crate::controller::cache::CachedObject;
use crate::controller::context::Context;
use crate::decide::model::{Driven, ResolvedType};
use crate::decide::plan::{self, Op, PlanError};
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

/// A rollout planned around its hook calls.
pub(crate) struct Rollout<T> {
    /// The revisions' claims, then the ControllerRevisions' writes: all
    /// before any child's.
    pub ops: Vec<Op>,
    /// The one answer the rest of the pass follows.
    pub response: HookResponse,
    /// What each call returned beside its answer, the latest revision's
    /// first.
    pub calls: Vec<T>,
}

/// The rollout of `parent`: its revisions claimed from `candidates` (its
/// own ControllerRevisions and the orphans of its namespace), `call`ed
/// once per revision — concurrently, with the revision's index (0: the
/// latest, the parent itself) and the parent as that revision had it —
/// and the answers planned with the `observed` children.
pub(crate) async fn rollout<T, E, F, Fut>(
    ctl: &Driven,
    parent: &DynamicObject,
    candidates: &[Arc<DynamicObject>],
    observed: &[Vec<Arc<DynamicObject>>],
    call: F,
) -> Result<Rollout<T>, E>
where
    E: From<PlanError>,
    F: Fn(usize, DynamicObject) -> Fut,
    Fut: Future<Output = Result<(HookResponse, T), E>>,
{
    let (theirs, mut ops) = plan::claim_revisions(ctl, parent, candidates)?;
    let revisions = plan::revisions(ctl, parent, &theirs)?;
    let calls = revisions
        .iter()
        .enumerate()
        .map(|(i, rev)| call(i, rev.parent.clone()));
    let answers = try_join_all(calls).await?;
    let (responses, calls) = answers.into_iter().unzip();
    let rolled = plan::roll(ctl, parent, revisions, responses, observed)?;
    // Claims first: an adopted revision's update then fails on its old
    // resourceVersion, a stale cache, and the next pass writes it.
    ops.extend(rolled.ops);
    Ok(Rollout {
        ops,
        response: rolled.response,
        calls,
    })
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
    let seen = &seen;
    let rolled = rollout(
        ctl,
        seen.parent,
        &candidates,
        seen.children,
        |i, parent| async move {
            let own;
            let related = if i == 0 {
                seen.related
            } else {
                own = related::objects(ctx, &parent).await?;
                &own[..]
            };
            call_hook(
                ctx,
                &parent,
                seen.hook,
                seen.children,
                related,
                seen.namespace,
            )
            .await
        },
    )
    .await?;
    let took = rolled.calls.iter().max().copied().unwrap_or_default();
    trace
        .steps
        .extend(rolled.ops.iter().map(|op| Step::of(op, ctl, &[])));
    ctx.executor
        .execute(ctl, seen.parent.clone(), rolled.ops)
        .await?;
    Ok((rolled.response, took))
}
