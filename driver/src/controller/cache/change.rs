//! What a cache tells its subscribers.

use super::object::CachedObject;
use std::sync::Arc;

/// A change to one cached object.
#[derive(Debug, Clone)]
pub enum Change {
    /// Added or modified (including the initial listing and relists).
    Applied(Arc<CachedObject>),
    Deleted(Arc<CachedObject>),
}

/// Told of every change to a cache's type, as it happens.
pub type Subscriber = Arc<dyn Fn(&Change) + Send + Sync>;
