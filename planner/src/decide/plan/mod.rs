//! Plans one reconcile: every write the driver makes, as a pure function of
//! what it observed and what the hook answered.
//!
//! Metacontroller decides and writes in the same loop; here the deciding is
//! apart (docs/metacontroller.md §3.3), so that each rule is a test on small
//! built objects, with no API server. The executor (`write/execute/`)
//! performs the planned [`Op`]s (`op.rs`) in order and decides nothing.
//!
//! A reconcile is planned in two halves around the hook call, because the
//! hook must see the parent after the finalizer is added and the children
//! after the claim. In order:
//!
//! 1. [`prelude`], before the hook (steps 1–4, and the choice of hook in
//!    step 6):
//!    - the parent's label filter: a parent that is not this controller's,
//!      and holds none of its finalizer, is left alone ([`Next::Stop`]);
//!    - the finalizer (`finalizer.rs`), added when the controller has a
//!      finalize hook (never to a terminating parent), removed when it has
//!      none;
//!    - the claim (`claim.rs`): matching orphans adopted after one
//!      [`Op::VerifyParent`], owned children that no longer match released;
//!    - which hook: `finalize` for a parent going away (deleted, or out of
//!      the filter) when there is one, else `sync`.
//! 2. [`after_hook`], once the hook answered (steps 7–12):
//!    - the finalizer removed when the hook says `finalized`;
//!    - the desired children checked and defaulted (`desired.rs`);
//!    - children not desired deleted, then desired ones created or updated
//!      per update strategy (`children.rs`), with server-side apply bodies
//!      (`apply.rs`), skipping what is unchanged since the last apply
//!      (`compare.rs`, with what was applied: `applied.rs`);
//!    - the status written, then an Event per changed condition
//!      (`status.rs`) — or left for a later pass when the caller says the
//!      API budget is short ([`StatusPace`]);
//!    - the requeue, from `resyncAfterSeconds`.
//!
//! A child type that rolls (`rolling/`) is answered once per revision
//! before [`after_hook`]: [`roll`] makes one answer of them.
//!
//! A DecoratorController's pass (docs/metacontroller.md §6) shares the
//! prelude, with no claim: its attachments are the objects it created
//! (`decorate.rs`). Its answer is planned by [`decorate`]: the object's
//! status, labels and annotations, the finalizer, then the attachments
//! through the same `children.rs`.
//!
//! This file holds the two halves; the rest is declared and re-exported
//! here, and no file below reaches back into it.

mod applied;
mod apply;
mod children;
mod claim;
mod compare;
mod decorate;
mod desired;
mod error;
mod existing;
mod finalizer;
mod op;
mod rolling;
mod status;
#[cfg(test)]
mod tests;

pub use applied::{Applied, AppliedMemory, NoMemory, WrittenMetadata};
pub use apply::{APPLIED, LAST_APPLIED, owner_reference};
pub use claim::child_selector;
pub use compare::contains;
pub use decorate::decorate;
pub use desired::DECORATOR_ANNOTATION;
pub use error::PlanError;
pub use existing::Existing;
pub use op::{
    DeleteReason, EventType, Next, Op, Plan, Prelude, RevisionWrite, StatusPace, Target, Written,
};
pub use rolling::{Claims, Revision, Rolled, claim_revisions, revisions, roll, rolls};

use crate::decide::model::Driven;
use crate::wire::HookResponse;
use finalizer::{finalized, gc_holds, has_finalizer, is_deleting, remove_finalizer};
use kube::ResourceExt;
use kube::core::DynamicObject;
use metahook_core::HookKind;
use std::sync::Arc;
use std::time::Duration;

/// Steps 1–4 and the choice of hook in step 6 of docs/metacontroller.md §3.3.
/// `candidates` holds, per child type, the cached objects the parent could
/// own (the caller may pass every object of the type: the scope filter is
/// applied here).
///
/// # Example
///
/// A new parent of a controller with a finalize hook: the finalizer goes on
/// before anything else, then the sync hook is called with no children.
///
/// ```
/// use metahook_planner::config::{self, UpdateStrategy};
/// use metahook_planner::decide::model::{ResolvedType, DrivenChild, Driven};
/// use metahook_planner::decide::plan::{self, Next, Op};
/// use metahook_core::HookKind;
///
/// let config = config::parse(
///     "greeter.yaml",
///     r#"
/// apiVersion: metacontroller.k8s.io/v1alpha1
/// kind: CompositeController
/// metadata: {name: greeter}
/// spec:
///   parentResource: {apiVersion: example.com/v1, resource: greeters}
///   childResources:
///     - {apiVersion: v1, resource: configmaps}
///   generateSelector: true
///   hooks:
///     sync: {version: v2, webhook: {url: "http://hooks/greeter/sync"}}
///     finalize: {version: v2, webhook: {url: "http://hooks/greeter/finalize"}}
/// "#,
/// )?;
/// let ctl = Driven {
///     config,
///     parent: ResolvedType::new("example.com", "v1", "Greeter", "greeters", true),
///     children: vec![DrivenChild {
///         resource: ResolvedType::new("", "v1", "ConfigMap", "configmaps", true),
///         strategy: UpdateStrategy::InPlace,
///     }],
///     shard_labels: Vec::new(),
///     status_subresource: true,
/// };
/// let parent = serde_json::from_value(serde_json::json!({
///     "apiVersion": "example.com/v1", "kind": "Greeter",
///     "metadata": {"name": "hi", "namespace": "shop", "uid": "u1"},
/// }))?;
///
/// let prelude = plan::prelude(&ctl, &parent, &[vec![]])?;
/// assert_eq!(
///     prelude.ops,
///     [Op::AddFinalizer {
///         before: None,
///         after: vec!["metacontroller.io/compositecontroller-greeter".to_owned()],
///     }]
/// );
/// assert_eq!(
///     prelude.next,
///     Next::CallHook { hook: HookKind::Sync, observed: vec![vec![]] }
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn prelude(
    ctl: &Driven,
    parent: &DynamicObject,
    candidates: &[Vec<Arc<DynamicObject>>],
) -> Result<Prelude, PlanError> {
    let finalizer = ctl.finalizer();
    let has = has_finalizer(parent, &finalizer);
    let deleting = is_deleting(parent);
    let label_match = claim::parent_matches_label_filter(ctl, parent)?;
    // Step 2: not ours.
    if !has && !label_match {
        return Ok(Prelude {
            ops: Vec::new(),
            next: Next::Stop,
        });
    }
    let mut ops = Vec::new();
    let finalize_hook = ctl.config.hooks.finalize.is_some();
    let mut has_after = has;
    if finalize_hook && !has && !deleting {
        // Added before anything else, never to a terminating object.
        let mut after = parent.finalizers().to_vec();
        after.push(finalizer.clone());
        ops.push(Op::AddFinalizer {
            before: parent.metadata.finalizers.clone(),
            after,
        });
        has_after = true;
    } else if !finalize_hook && has {
        ops.push(remove_finalizer(parent, &finalizer));
        has_after = false;
        // Step 2 again, on the parent without the finalizer.
        if !label_match {
            return Ok(Prelude {
                ops,
                next: Next::Stop,
            });
        }
    }
    let observed = if ctl.is_decorator() {
        decorate::attachments(ctl, parent, candidates)
    } else {
        let selector = child_selector(ctl, parent)?;
        claim::claim(ctl, parent, candidates, &selector, &mut ops)
    };
    let hook = if finalize_hook && (deleting || (has_after && !label_match)) {
        HookKind::Finalize
    } else {
        HookKind::Sync
    };
    Ok(Prelude {
        ops,
        next: Next::CallHook { hook, observed },
    })
}

/// Steps 7–12 of docs/metacontroller.md §3.3 for one hook response. `parent`
/// is the parent the hook was called with; `observed` the claimed children it
/// saw; `existing` finds any cached object of a child type by name (claimed
/// or not), so that a desired child whose name is taken by an object this
/// parent does not own is left alone, as Metacontroller's create meets
/// `AlreadyExists`. `memory` says what was applied last, so that an apply
/// that would change nothing is not repeated.
pub fn after_hook(
    ctl: &Driven,
    parent: &DynamicObject,
    observed: &[Vec<Arc<DynamicObject>>],
    existing: &(impl Existing + ?Sized),
    response: HookResponse,
    memory: &dyn AppliedMemory,
    pace: StatusPace,
) -> Result<Plan, PlanError> {
    let resync_after = (response.resync_after_seconds > 0.0)
        .then(|| Duration::try_from_secs_f64(response.resync_after_seconds).ok())
        .flatten();
    let mut ops = Vec::new();
    let finalizer = ctl.finalizer();
    let mut has = has_finalizer(parent, &finalizer);
    if response.finalized && has {
        ops.extend(finalized(parent, &finalizer));
        has = false;
    }
    let desired = match desired::check_desired(ctl, parent, &response.children) {
        Ok(desired) => desired,
        Err(err) if !ops.is_empty() => {
            return Ok(Plan {
                ops,
                deferred_status: None,
                resync_after,
                failure: Some(err),
            });
        }
        Err(err) => return Err(err),
    };
    // Children are managed unless the parent is going and this controller's
    // finalizer no longer holds it (or the garbage collector has it).
    let mut content_changes = false;
    if !is_deleting(parent) || (has && !gc_holds(parent)) {
        content_changes =
            children::manage_children(ctl, parent, observed, existing, &desired, memory, &mut ops);
    }
    let status = status::with_generation(parent, response.status);
    let uid = parent.metadata.uid.as_deref().unwrap_or_default();
    // Our own last write, if the cache has not caught up with it yet.
    let written = memory.written_status(
        uid,
        parent
            .metadata
            .resource_version
            .as_deref()
            .unwrap_or_default(),
    );
    let old_status = written.as_ref().or_else(|| parent.data.get("status"));
    let mut deferred_status = None;
    // A deleting parent whose last finalizer this pass removes is gone once
    // it is removed: a status write after it would only meet a 404.
    let gone = is_deleting(parent)
        && ops
            .iter()
            .any(|op| matches!(op, Op::RemoveFinalizer { after, .. } if after.is_empty()));
    if old_status != Some(&status) && !gone {
        // A summary condition falls while its object catches up: with a
        // child's content changed in this pass (or in one whose status
        // write was deferred), or while it is deleted.
        let catching_up =
            is_deleting(parent) || content_changes || memory.deferred_while_catching_up(uid);
        let events = status::condition_events(old_status, &status, catching_up);
        let warns = events.iter().any(|e| {
            matches!(
                e,
                Op::Event {
                    kind: EventType::Warning,
                    ..
                }
            )
        });
        let finalizing = ops
            .iter()
            .any(|op| matches!(op, Op::RemoveFinalizer { .. }));
        let may_wait = match pace {
            StatusPace::Now => false,
            StatusPace::Settle => content_changes,
            StatusPace::Deferrable => true,
        };
        if may_wait && !warns && !is_deleting(parent) && !finalizing {
            deferred_status = Some(catching_up);
        } else {
            ops.extend(events);
            ops.push(Op::WriteStatus { status });
        }
    }
    // Events go last: they never hold up the writes that matter.
    ops.sort_by_key(|op| matches!(op, Op::Event { .. }));
    Ok(Plan {
        ops,
        deferred_status,
        resync_after,
        failure: None,
    })
}
