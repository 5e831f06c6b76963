//! What a cache tells its subscribers.

use super::object::CachedObject;
use crate::decide::order::Urgency;
use std::sync::Arc;

/// A change to one cached object.
#[derive(Debug, Clone)]
pub enum Change {
    /// Added or modified: a watch event, or an object a relist found new
    /// or at another resourceVersion.
    Applied(Arc<CachedObject>),
    /// Found by a listing (the first, or a relist at the version the cache
    /// held): nothing says it changed. Subscribers still queue its parents,
    /// but not before the ones that changed (the first listing of 10,000
    /// Hellos queued all of them as changed, and a Hello scaled during a
    /// restart waited behind half of them: bench/runs/restart-wait.md).
    Listed(Arc<CachedObject>),
    Deleted(Arc<CachedObject>),
}

impl Change {
    pub fn object(&self) -> &Arc<CachedObject> {
        match self {
            Change::Applied(o) | Change::Listed(o) | Change::Deleted(o) => o,
        }
    }

    /// How urgent this change of a child or related object makes its
    /// parents: one a listing merely found says nothing of them, so they
    /// are confirmed after the ones that changed.
    pub(crate) fn urgency_for_parents(&self) -> Urgency {
        match self {
            Change::Listed(_) => Urgency::Confirm,
            Change::Applied(_) | Change::Deleted(_) => Urgency::Changed,
        }
    }
}

/// Told of every change to a cache's type, as it happens.
pub type Subscriber = Arc<dyn Fn(&Change) + Send + Sync>;
