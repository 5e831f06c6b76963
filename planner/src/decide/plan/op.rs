//! What a plan is made of: the API operations ([`Op`]) in the order the
//! executor performs them, and what each half of the planner returns
//! ([`Prelude`], [`Plan`]).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::core::DynamicObject;
use metahook_core::HookKind;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

use super::error::PlanError;

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
    /// A ControllerRevision's write (rolling updates, `rolling/`):
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
    /// ([`StatusPace::Settle`], [`StatusPace::Deferrable`]):
    /// `Some(catching_up)`, which the caller remembers so that the pass
    /// that writes it judges its conditions as this one would have
    /// ([`super::AppliedMemory::deferred_while_catching_up`]).
    pub deferred_status: Option<bool>,
    /// `resyncAfterSeconds`, when positive.
    pub resync_after: Option<Duration>,
    /// The reconcile fails once `ops` are done. Only when `finalized` meets
    /// desired children that break the rules: Metacontroller removes the
    /// finalizer (docs/metacontroller.md §3.3 step 9) before it checks them
    /// (step 10).
    pub failure: Option<PlanError>,
}

/// `obj`, the `type_index`th child type's, as an operation's target.
pub(super) fn target(type_index: usize, obj: &DynamicObject) -> Target {
    Target {
        type_index,
        namespace: obj.namespace(),
        name: obj.name_any(),
        uid: obj.uid().unwrap_or_default(),
    }
}
