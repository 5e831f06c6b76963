//! The parent's finalizer, and its going away: whether it is being
//! deleted, whether it holds this controller's finalizer (or the garbage
//! collector's), and the ops that take ours off.

use super::op::{EventType, Op};
use kube::ResourceExt;
use kube::core::DynamicObject;
use metahook_core::HookKind;

/// Finalizers with which the garbage collector is working on a parent:
/// children are left to it.
const GC_FINALIZERS: &[&str] = &["foregroundDeletion", "orphan"];

/// Whether the garbage collector is working on the parent (a foreground or
/// orphaning deletion): then its children are left to it.
pub(super) fn gc_holds(parent: &DynamicObject) -> bool {
    parent
        .finalizers()
        .iter()
        .any(|f| GC_FINALIZERS.contains(&f.as_str()))
}

pub(super) fn is_deleting(obj: &DynamicObject) -> bool {
    obj.metadata.deletion_timestamp.is_some()
}

pub(super) fn has_finalizer(obj: &DynamicObject, name: &str) -> bool {
    obj.finalizers().iter().any(|f| f == name)
}

/// The parent's finalizers without this controller's, the rest in order;
/// `before` is the precondition.
pub(super) fn remove_finalizer(parent: &DynamicObject, finalizer: &str) -> Op {
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

/// The hook said `finalized`: our finalizer comes off, and a Normal Event
/// says so (the removal failing fails the whole pass).
pub(super) fn finalized(parent: &DynamicObject, finalizer: &str) -> [Op; 2] {
    [
        remove_finalizer(parent, finalizer),
        Op::Event {
            kind: EventType::Normal,
            reason: "Finalized".to_owned(),
            note: format!("The {} hook finalized it", HookKind::Finalize),
            after: None,
        },
    ]
}
