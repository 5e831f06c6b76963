//! What the executor remembers of its last apply of each child, and how the
//! planner uses it not to send the same apply again.

use serde_json::Value;
use std::collections::BTreeMap;

/// What the executor remembers of its last apply of a child; see
/// [`super::after_hook`] for how it avoids repeating an apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub fingerprint: u64,
    pub uid: String,
    pub generation: i64,
    pub resource_version: String,
}

/// A decorated object's labels and annotations as this process wrote them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WrittenMetadata {
    pub labels: Option<BTreeMap<String, String>>,
    pub annotations: Option<BTreeMap<String, String>>,
}

/// Looks up [`Applied`] by (child type, namespace, name), and the status
/// last written on a parent.
pub trait AppliedMemory {
    fn applied(&self, type_index: usize, namespace: Option<&str>, name: &str) -> Option<Applied>;

    /// The status this process wrote on the parent `uid` when it was at
    /// `resource_version`: what the parent holds now, if the cache still
    /// shows that version (it has not seen the write yet).
    fn written_status(&self, _uid: &str, _resource_version: &str) -> Option<Value> {
        None
    }

    /// The labels and annotations this process wrote on the decorated
    /// object `uid` when it was at `resource_version`, if the cache still
    /// shows that version: what the object holds now. Without it, the pass
    /// a concurrent event queues would send the same edit again, guarded by
    /// a `test` of the stale maps, and fail.
    fn written_metadata(&self, _uid: &str, _resource_version: &str) -> Option<WrittenMetadata> {
        None
    }

    /// This process applied exactly this body (`fingerprint`) to the child
    /// moments ago, and no deletion of it has been seen since: a child the
    /// cache does not show yet is on its way, not missing — its watch
    /// event has not arrived (the parent's own event, from our finalizer
    /// write, often queues the next pass first).
    fn on_its_way(
        &self,
        _type_index: usize,
        _namespace: Option<&str>,
        _name: &str,
        _fingerprint: u64,
    ) -> bool {
        false
    }

    /// The parent `uid`'s status was left for later ([`super::StatusPace`])
    /// by a pass that changed a child or deleted it, and has not been
    /// written since: the pass that writes it is still catching up.
    fn deferred_while_catching_up(&self, _uid: &str) -> bool {
        false
    }
}

/// Remembers nothing: every desired child is applied.
pub struct NoMemory;

impl AppliedMemory for NoMemory {
    fn applied(&self, _: usize, _: Option<&str>, _: &str) -> Option<Applied> {
        None
    }
}
