//! `ignoreStatusChanges` (docs/metacontroller.md §2, §6): with it, a
//! parent's update queues it only when its generation, labels or
//! annotations changed, or it is being deleted — not for a status write
//! (the driver's own included) or anything else that leaves those alone.
//! Metacontroller compares an informer's old and new objects; the cache
//! hands over only the new one, so what counts of the last one seen is kept
//! here, per parent UID: as a 64-bit hash, not a copy of the labels and
//! annotations, so that it costs the same per parent whatever they hold.

use crate::controller::cache::CachedObject;
use kube::ResourceExt;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

/// What an update must change to count: the hash of the generation, the
/// labels and the annotations (as the API server wrote them: in key order).
type Counted = u64;

fn counted(obj: &CachedObject) -> Counted {
    let mut hasher = DefaultHasher::new();
    obj.metadata.generation.hash(&mut hasher);
    obj.labels_text().hash(&mut hasher);
    obj.annotations_text().hash(&mut hasher);
    hasher.finish()
}

/// The last counted state of each parent seen.
#[derive(Debug, Default)]
pub struct StatusChangeFilter {
    seen: Mutex<HashMap<String, Counted>>,
}

impl StatusChangeFilter {
    /// Whether this add or update of `parent` queues it: the first sight
    /// of it, a change that counts, or a parent being deleted.
    pub fn passes(&self, parent: &CachedObject) -> bool {
        let counted = counted(parent);
        let uid = parent.uid().unwrap_or_default();
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let same = seen.get(&uid) == Some(&counted);
        seen.insert(uid, counted);
        !same || parent.metadata.deletion_timestamp.is_some()
    }

    /// A parent is gone: nothing to compare its successor with.
    pub fn forget(&self, uid: &str) {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{Cached, Obj};
    use serde_json::json;

    #[test]
    fn only_generation_labels_annotations_or_deletion_count() {
        let filter = StatusChangeFilter::default();
        let parent = Obj::parent().generation(1).label("a", "1");
        assert!(filter.passes(&parent.clone().cached()), "first sight");
        // A status write, a new resource version: nothing that counts.
        let status = parent
            .clone()
            .resource_version("2")
            .data("status", json!({"ready": true}));
        assert!(!filter.passes(&status.clone().cached()));
        assert!(
            filter.passes(&status.clone().generation(2).cached()),
            "generation"
        );
        assert!(
            filter.passes(&status.clone().generation(2).label("a", "2").cached()),
            "label"
        );
        let annotated = status
            .clone()
            .generation(2)
            .label("a", "2")
            .annotation("n", "x");
        assert!(filter.passes(&annotated.clone().cached()), "annotation");
        assert!(!filter.passes(&annotated.clone().cached()));
        assert!(
            filter.passes(&annotated.clone().deleting().cached()),
            "deleting"
        );
        assert!(
            filter.passes(&annotated.clone().deleting().cached()),
            "still deleting"
        );
        // Forgotten (deleted): a successor is a first sight.
        filter.forget("p1");
        assert!(filter.passes(&annotated.cached()));
    }
}
