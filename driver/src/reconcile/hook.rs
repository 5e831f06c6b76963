//! Step 3 of a reconcile: the sync (or finalize) hook called with the
//! parent, its children and the related objects, as Metacontroller builds
//! the request; its answer decoded.

use super::error::ReconcileError;
use crate::controller::context::Context;
use crate::decide::model::{Driven, ResolvedType};
use crate::hook::call::HookTarget;
use crate::hook::wire::{self, TypedObjects};
use kube::api::DynamicObject;
use metahook_core::HookKind;
use std::sync::Arc;
use std::time::Duration;

/// Calls the sync (or finalize) hook with `parent`, its children and
/// related objects; the answer, and how long it took.
pub(super) async fn call_hook(
    ctx: &Context,
    parent: &DynamicObject,
    hook: HookKind,
    observed: &[Vec<Arc<DynamicObject>>],
    related: &[(ResolvedType, Vec<Arc<DynamicObject>>)],
    namespace: Option<&str>,
) -> Result<(wire::HookResponse, Duration), ReconcileError> {
    let ctl = &ctx.driven;
    let target = ctx.hooks.for_pass(hook);
    let (children_map, related_map) = object_maps(ctl, observed, related, target, namespace);
    let request = wire::sync_request(
        &ctl.config.object,
        parent,
        &children_map,
        &related_map,
        hook == HookKind::Finalize,
    )?;
    let called = std::time::Instant::now();
    let answer = ctx.caller.call(ctx.name(), target, request).await;
    let took = called.elapsed();
    let response = wire::decode_sync_response(&answer?, target.strict)
        .map_err(|source| ReconcileError::Decode { hook, source })?;
    Ok((response, took))
}

/// A request's `children` (or `attachments`) and `related` maps, keyed as
/// `target`'s version keys them.
pub(crate) fn object_maps<'a>(
    ctl: &'a Driven,
    observed: &'a [Vec<Arc<DynamicObject>>],
    related: &'a [(ResolvedType, Vec<Arc<DynamicObject>>)],
    target: &HookTarget,
    namespace: Option<&str>,
) -> (wire::ObjectMapJson<'a>, wire::ObjectMapJson<'a>) {
    let children: Vec<TypedObjects<'_>> = ctl
        .children
        .iter()
        .zip(observed)
        .map(|(t, objects)| TypedObjects {
            resource: &t.resource,
            objects,
        })
        .collect();
    let related: Vec<TypedObjects<'_>> = related
        .iter()
        .map(|(resource, objects)| TypedObjects { resource, objects })
        .collect();
    (
        wire::object_map(&children, target.version, namespace),
        wire::object_map(&related, target.version, namespace),
    )
}
