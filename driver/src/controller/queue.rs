//! The parents waiting for a reconcile, on their way to kube's applier.
//!
//! The applier coalesces requests itself, but does not say how many wait:
//! `waiting` holds the parents sent and not yet started, so a second
//! trigger for one of them sends nothing, and its size is the queue-depth
//! metric. Such a trigger's change is not lost: a reconcile takes its
//! parent out of `waiting` first and reads it from the cache after
//! (`worker::reconcile_isolated`).

use crate::controller::cache::{CachedObject, SharedType};
use kube::api::DynamicObject;
use kube::runtime::reflector::ObjectRef;
use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};
use tokio::sync::mpsc;

/// A parent, as kube's applier and store name it.
pub type ParentKey = ObjectRef<CachedObject>;

/// A parent's key as kube's applier reports it in an error (its errors
/// name objects as `DynamicObject`s, whatever the store holds).
pub fn key_of_erased(erased: &ObjectRef<DynamicObject>) -> ParentKey {
    let key = ParentKey::new_with(&erased.name, SharedType::of(&erased.dyntype));
    match &erased.namespace {
        Some(namespace) => key.within(namespace),
        None => key,
    }
}

/// The queue of one controller.
pub struct Queue {
    tx: mpsc::UnboundedSender<ParentKey>,
    rx: Mutex<Option<mpsc::UnboundedReceiver<ParentKey>>>,
    waiting: Mutex<HashSet<ParentKey>>,
}

impl Default for Queue {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Queue {
            tx,
            rx: Mutex::new(Some(rx)),
            waiting: Mutex::new(HashSet::new()),
        }
    }
}

impl Queue {
    fn waiting(&self) -> MutexGuard<'_, HashSet<ParentKey>> {
        // Every update is one statement: a panic cannot leave it half-done.
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends `key` unless it is already waiting.
    pub fn add(&self, key: ParentKey) {
        let mut waiting = self.waiting();
        if !waiting.contains(&key) && self.tx.send(key.clone()).is_ok() {
            waiting.insert(key);
        }
    }

    /// `key` was taken (its reconcile starts) or dropped (its parent is gone).
    pub fn taken(&self, key: &ParentKey) {
        self.waiting().remove(key);
    }

    /// How many parents wait.
    pub(crate) fn len(&self) -> usize {
        self.waiting().len()
    }

    /// The receiving end, once: the loop that feeds the applier.
    pub fn receiver(&self) -> Option<mpsc::UnboundedReceiver<ParentKey>> {
        self.rx.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}
