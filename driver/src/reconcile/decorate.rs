//! Steps 3 and 4 of a DecoratorController's reconcile
//! (docs/metacontroller.md §6): its hook called with the object and its
//! attachments, its answer planned by `plan::decorate` and executed. The
//! prelude, the related objects and the report are the composite's. The
//! request is built by [`request`], which `plan --live`
//! (`observe/live/decorate.rs`) builds its own with.

use super::error::ReconcileError;
use super::hook::object_maps;
use super::trace::{Again, Trace};
use crate::controller::context::Context;
use crate::decide::model::{Driven, ResolvedType};
use crate::decide::plan;
use crate::hook::call::HookTarget;
use crate::hook::wire;
use crate::observe::records::{Condition, Step};
use crate::write::execute::ExecuteErrors;
use kube::api::DynamicObject;
use metahook_core::HookKind;
use std::sync::Arc;

/// What the prelude and the related objects left for the hook.
pub(crate) struct Observed<'a> {
    pub parent: DynamicObject,
    pub hook: HookKind,
    /// The attachments, one list per attachment type.
    pub attachments: &'a [Vec<Arc<DynamicObject>>],
    pub related: &'a [(ResolvedType, Vec<Arc<DynamicObject>>)],
    pub namespace: Option<&'a str>,
}

/// Calls the decorator's hook and performs what its answer says. `Ok`
/// carries the requested resync.
pub(super) async fn hook_and_apply(
    ctx: &Arc<Context>,
    seen: Observed<'_>,
    trace: &mut Trace,
) -> Result<Option<Again>, ReconcileError> {
    let ctl = &ctx.driven;
    let target = ctx.hooks.for_pass(seen.hook);
    let request = request(ctl, target, &seen)?;
    let Observed {
        parent,
        hook,
        attachments,
        ..
    } = seen;
    let called = std::time::Instant::now();
    let answer = ctx.caller.call(ctx.name(), target, request).await;
    trace.hook = Some(called.elapsed());
    let answer = wire::decorator::decode_response(&answer?, target.strict)
        .map_err(|source| ReconcileError::Decode { hook, source })?;
    trace.desired = Some(answer.attachments.len());
    trace.revision = target.revision.clone();
    trace.conditions = Condition::read(answer.status.as_ref().and_then(|s| s.get("conditions")));

    let memory = ctx.executor.memory();
    let plan = plan::decorate(
        ctl,
        &parent,
        attachments,
        &crate::controller::cache::ChildCaches(ctx.children.as_slice()),
        answer,
        memory.as_ref(),
    )?;
    trace
        .steps
        .extend(plan.ops.iter().map(|op| Step::of(op, ctl, attachments)));
    let executed = ctx.executor.execute(ctl, parent, plan.ops).await?;
    if !executed.errors.is_empty() {
        return Err(ReconcileError::Children(ExecuteErrors(executed.errors)));
    }
    Ok(plan.resync_after.map(|after| Again {
        after,
        reason: "resyncAfterSeconds",
    }))
}

/// The decorator hook's request for what `seen` holds, its maps keyed as
/// `target`'s version keys them: what the driver sends, and what `plan
/// --live` sends.
pub(crate) fn request(
    ctl: &Driven,
    target: &HookTarget,
    seen: &Observed<'_>,
) -> Result<Vec<u8>, serde_json::Error> {
    let (attachments, related) =
        object_maps(ctl, seen.attachments, seen.related, target, seen.namespace);
    wire::decorator::request(
        &ctl.config.object,
        &seen.parent,
        &attachments,
        &related,
        seen.hook == HookKind::Finalize,
    )
}
