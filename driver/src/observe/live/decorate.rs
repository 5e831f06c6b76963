//! A DecoratorController's parent planned as the driver's reconcile plans
//! it (`reconcile/decorate.rs`): after the prelude (its finalizer, its
//! attachments: the objects it controls that carry the
//! `metacontroller.k8s.io/decorator-controller` annotation naming it), the
//! hook is called with the request the driver builds
//! ([`crate::reconcile::decorate::request`]) and its answer planned by
//! `plan::decorate` — the labels, annotations and status patched on the
//! object, the attachments applied with the object as their controller
//! owner and that annotation, or deleted, the finalizer removed — with
//! nothing remembered of an earlier apply ([`NoMemory`]).

use super::context::{Reader, Resolved};
use super::error::PassError;
use super::parent_plan::ParentPlan;
use super::parent_plan::step;
use crate::decide::model::Driven;
use crate::decide::plan::{self, Existing, NoMemory, PlanError};
use crate::hook::wire::decorator::{self, DecoratorAnswer};
use crate::observe::records::Step;
use crate::reconcile::decorate::{Observed, request};
use kube::api::DynamicObject;
use std::sync::Arc;

/// Calls the decorator's hook with what `seen` holds and adds the steps
/// its answer plans to `out`.
pub(super) async fn steps(
    reader: &Reader,
    resolved: &Resolved,
    existing: &(impl Existing + ?Sized),
    seen: Observed<'_>,
    out: &mut ParentPlan,
) -> Result<(), PassError> {
    let ctl = &resolved.driven;
    let hook = seen.hook;
    let target = resolved.hooks.for_pass(hook);
    let body = request(ctl, target, &seen).map_err(PassError::Request)?;
    let answer = reader.caller.call(&ctl.config.name, target, body).await?;
    let answer = decorator::decode_response(&answer, target.strict)
        .map_err(|source| PassError::Answer { hook, source })?;
    out.steps.extend(planned(
        ctl,
        &seen.parent,
        seen.attachments,
        existing,
        answer,
    )?);
    Ok(())
}

/// The steps `answer` plans for `parent`, whose attachments the hook saw
/// are `observed`.
fn planned(
    ctl: &Driven,
    parent: &DynamicObject,
    observed: &[Vec<Arc<DynamicObject>>],
    existing: &(impl Existing + ?Sized),
    answer: DecoratorAnswer,
) -> Result<Vec<Step>, PlanError> {
    let plan = plan::decorate(ctl, parent, observed, existing, answer, &NoMemory)?;
    Ok(plan
        .ops
        .iter()
        .map(|op| step(op, ctl, parent, observed))
        .collect())
}

#[cfg(test)]
mod tests;
