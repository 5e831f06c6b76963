//! Plans one reconcile: every write the driver makes, as a pure function of
//! what it observed and what the hook answered.
//!
//! Metacontroller decides and writes in the same loop; here the deciding is
//! apart (docs/metacontroller.md §3.3), so that each rule is a test on small
//! built objects, with no API server. The executor (`write/execute.rs`) performs
//! the planned [`Op`]s in order and decides nothing.
//!
//! A reconcile is planned in two halves around the hook call, because the
//! hook must see the parent after the finalizer is added and the children
//! after the claim. In order:
//!
//! 1. [`prelude`], before the hook (steps 1–4, and the choice of hook in
//!    step 6):
//!    - the parent's label filter: a parent that is not this controller's,
//!      and holds none of its finalizer, is left alone ([`Next::Stop`]);
//!    - the finalizer, added when the controller has a finalize hook (never
//!      to a terminating parent), removed when it has none;
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
//!      (`applied.rs`);
//!    - the status written, then an Event per changed condition
//!      (`status.rs`) — or left for a later pass when the caller says the
//!      API budget is short ([`StatusPace`]);
//!    - the requeue, from `resyncAfterSeconds`.
//!
//! A DecoratorController's pass (docs/metacontroller.md §6) shares the
//! prelude, with no claim: its attachments are the objects it created
//! (`decorate.rs`). Its answer is planned by [`decorate`]: the object's
//! status, labels and annotations, the finalizer, then the attachments
//! through the same `children.rs`.

mod applied;
mod apply;
mod children;
mod claim;
mod decorate;
mod desired;
mod rolling;
mod status;
#[cfg(test)]
mod tests;

pub use applied::{Applied, AppliedMemory, NoMemory, WrittenMetadata};
pub use apply::{APPLIED, LAST_APPLIED, owner_reference};
pub use children::contains;
pub use claim::child_selector;
pub use decorate::{DECORATOR_ANNOTATION, decorate};
pub use rolling::{Claims, Revision, Rolled, claim_revisions, revisions, roll, rolls};

use crate::decide::model::Driven;
use crate::decide::selector::SelectorError;
use crate::hook::wire::HookResponse;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::core::DynamicObject;
use metahook_core::HookKind;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Finalizers with which the garbage collector is working on a parent:
/// children are left to it.
const GC_FINALIZERS: &[&str] = &["foregroundDeletion", "orphan"];

/// An object the plan touches, named precisely enough for a precondition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub type_index: usize,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteReason {
    /// Observed, owned, not in the hook's desired set.
    NotDesired,
    /// Differs from desired under the `Recreate` strategy: deleted now,
    /// created again once it is gone.
    Recreate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

/// One API operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Set the parent's finalizers from `before` (a precondition) to `after`.
    AddFinalizer {
        before: Option<Vec<String>>,
        after: Vec<String>,
    },
    RemoveFinalizer {
        before: Option<Vec<String>>,
        after: Vec<String>,
    },
    /// Read the parent from the API server (not the cache) and stop unless it
    /// exists with the same UID and is not being deleted: done once before
    /// adopting anything.
    VerifyParent,
    /// Set a child's owner references from `before` (a precondition) to
    /// `after`: adopting adds the parent as controller.
    Adopt {
        child: Target,
        before: Option<Vec<OwnerReference>>,
        after: Vec<OwnerReference>,
    },
    /// Remove the parent's owner reference from a child that no longer
    /// matches the selector.
    Release {
        child: Target,
        before: Option<Vec<OwnerReference>>,
        after: Vec<OwnerReference>,
    },
    /// Delete with a UID precondition and background propagation.
    DeleteChild { child: Target, reason: DeleteReason },
    /// Server-side apply (field manager `metahook`, forced).
    ApplyChild {
        type_index: usize,
        namespace: Option<String>,
        name: String,
        body: Value,
        fingerprint: u64,
    },
    /// A ControllerRevision's write (rolling updates, `rolling.rs`):
    /// every one before any child's; a failure stops the reconcile.
    Revision(RevisionWrite),
    /// Replace `.status` through the status subresource.
    WriteStatus { status: Value },
    /// A decorator's edit of the object itself: a JSON patch (guarded by a
    /// `test` of the UID) of the label and annotation keys that change, one
    /// by one (and of its status, for a type with no status subresource);
    /// `changed` names what changes, for the record.
    PatchObject {
        patch: Vec<Value>,
        changed: Vec<String>,
    },
    /// A Kubernetes Event on the parent; one that tells of a write is
    /// published only if that write went through.
    Event {
        kind: EventType,
        reason: String,
        note: String,
        after: Option<Written>,
    },
}

/// The write an Event tells of: a child's apply or delete, or the status.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Written {
    Child { type_index: usize, name: String },
    Status,
}

/// One write of a parent's ControllerRevisions.
#[derive(Debug, Clone, PartialEq)]
pub enum RevisionWrite {
    /// Create it; it exists already when the cache is behind: the
    /// reconcile stops.
    Create { body: Value },
    /// Replace its `children`, if it is still at `resource_version` (else
    /// the reconcile stops: the cache is behind).
    Update {
        name: String,
        resource_version: String,
        children: Value,
    },
    /// Delete one that claims no child any more (UID precondition).
    Delete { name: String, uid: String },
    /// Set its owner references from `before` (a precondition, with its
    /// UID) to `after`: an orphan that matches is adopted (`adopt`), one
    /// the parent controls that no longer matches is released.
    SetOwners {
        name: String,
        uid: String,
        before: Option<Vec<OwnerReference>>,
        after: Vec<OwnerReference>,
        adopt: bool,
    },
}

/// What a prelude leads to.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Nothing more this time (the parent is not this controller's).
    Stop,
    /// Call `hook` with the claimed children, one list per child type.
    CallHook {
        hook: HookKind,
        observed: Vec<Vec<Arc<DynamicObject>>>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Prelude {
    pub ops: Vec<Op>,
    pub next: Next,
}

/// Whether a changed status is written in this pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusPace {
    /// Written whenever it changed.
    Now,
    /// Waits for a later pass if this pass changes a child's content: the
    /// child's own status is about to move (a Deployment just created or
    /// scaled reports its replicas moments later), and the status written
    /// once it has is one write instead of one per step.
    Settle,
    /// The API budget is short: a status change may wait for a later pass,
    /// which will have caught up with the children written meanwhile (one
    /// status write instead of two). Never deferred: a change worth a
    /// Warning, or a parent being deleted or losing our finalizer.
    Deferrable,
}

/// The rest of a reconcile, once the hook has answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub ops: Vec<Op>,
    /// The status changed but was left for a later pass
    /// ([`StatusPace::Settle`], [`StatusPace::Deferrable`]): `Some(catching_up)`, which the caller
    /// remembers so that the pass that writes it judges its conditions as
    /// this one would have ([`AppliedMemory::deferred_while_catching_up`]).
    pub deferred_status: Option<bool>,
    /// `resyncAfterSeconds`, when positive.
    pub resync_after: Option<Duration>,
    /// The reconcile fails once `ops` are done. Only when `finalized` meets
    /// desired children that break the rules: Metacontroller removes the
    /// finalizer (docs/metacontroller.md §3.3 step 9) before it checks them
    /// (step 10).
    pub failure: Option<PlanError>,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum PlanError {
    #[error(".spec.selector must have either matchLabels, matchExpressions, or both")]
    NoSelector,
    #[error(".spec.selector is invalid")]
    BadSelector(#[source] SelectorError),
    #[error("desired child {index}: {message}")]
    BadChild { index: usize, message: String },
    #[error(
        "labels on desired child {kind} {name} don't match the parent's selector (nothing was applied)"
    )]
    SelectorMismatch { kind: String, name: String },
    #[error(
        "desired child {index} is a {api_version} {kind}, which is not one of the controller's childResources"
    )]
    UndeclaredChild {
        index: usize,
        api_version: String,
        kind: String,
    },
    #[error("ControllerRevision {name}: {message}")]
    BadRevision { name: String, message: String },
    #[error("rolling update: {0}")]
    Rolling(String),
}

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
/// use metahook_driver::config::{self, UpdateStrategy};
/// use metahook_driver::decide::model::{ApiType, ChildType, Driven};
/// use metahook_driver::decide::plan::{self, Next, Op};
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
///     parent: ApiType::new("example.com", "v1", "Greeter", "greeters", true),
///     children: vec![ChildType {
///         resource: ApiType::new("", "v1", "ConfigMap", "configmaps", true),
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
/// saw; `existing` every cached object of each child type in scope (claimed
/// or not), so that a desired child whose name is taken by an object this
/// parent does not own is left alone, as Metacontroller's create meets
/// `AlreadyExists`. `memory` says what was applied last, so that an apply
/// that would change nothing is not repeated.
pub fn after_hook(
    ctl: &Driven,
    parent: &DynamicObject,
    observed: &[Vec<Arc<DynamicObject>>],
    existing: &[Vec<Arc<DynamicObject>>],
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
        ops.push(remove_finalizer(parent, &finalizer));
        // The finalizer's removal fails the whole pass if it fails.
        ops.push(Op::Event {
            kind: EventType::Normal,
            reason: "Finalized".to_owned(),
            note: format!("The {} hook finalized it", HookKind::Finalize),
            after: None,
        });
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
    let gc_finalizer = parent
        .finalizers()
        .iter()
        .any(|f| GC_FINALIZERS.contains(&f.as_str()));
    // Children are managed unless the parent is going and this controller's
    // finalizer no longer holds it (or the garbage collector has it).
    let mut content_changes = false;
    if !is_deleting(parent) || (has && !gc_finalizer) {
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
    if old_status != Some(&status) {
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

fn is_deleting(obj: &DynamicObject) -> bool {
    obj.metadata.deletion_timestamp.is_some()
}

fn has_finalizer(obj: &DynamicObject, name: &str) -> bool {
    obj.finalizers().iter().any(|f| f == name)
}

/// The parent's finalizers without this controller's, the rest in order;
/// `before` is the precondition.
fn remove_finalizer(parent: &DynamicObject, finalizer: &str) -> Op {
    Op::RemoveFinalizer {
        before: parent.metadata.finalizers.clone(),
        after: parent
            .finalizers()
            .iter()
            .filter(|f| *f != finalizer)
            .cloned()
            .collect(),
    }
}

fn target(type_index: usize, obj: &DynamicObject) -> Target {
    Target {
        type_index,
        namespace: obj.namespace(),
        name: obj.name_any(),
        uid: obj.uid().unwrap_or_default(),
    }
}
