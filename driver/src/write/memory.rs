//! What the executor last applied, so that an unchanged desired child costs
//! no API call (like Metacontroller's server-side-apply cache,
//! docs/metacontroller.md §3.8), and the status it last wrote on each
//! parent: the next reconcile often starts before the parent cache has seen
//! that write (a child's event queues it first), and would otherwise write
//! the same status again (and see a fall of its conditions that is not
//! there). And the statuses left for later while the API budget was short
//! (`plan::StatusPace`): since when, and whether a pass that left one was
//! catching up. And, for a decorator, the labels and annotations it last
//! wrote on each object, for the same reason as the status.

use crate::decide::plan::{Applied, AppliedMemory, WrittenMetadata};
use kube::ResourceExt;
use kube::core::DynamicObject;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

type Key = (usize, Option<String>, String);

/// How long after an apply a child the cache does not show yet counts as
/// on its way (its watch event not here yet) rather than gone: well past a
/// watch event's latency, short enough that a deletion the cache never
/// reported (a relist in between) is repaired soon.
const UNSEEN_WINDOW: Duration = Duration::from_secs(10);

/// One per controller: (child type, namespace, name) → last apply.
#[derive(Debug, Default)]
pub struct ApplyMemory {
    /// … and when it was recorded.
    entries: Mutex<HashMap<Key, (Applied, Instant)>>,
    /// Parent UID → (the resourceVersion the status was written on, the
    /// status written).
    statuses: Mutex<HashMap<String, (String, Value)>>,
    /// Decorated object UID → (the resourceVersion the plan read, the
    /// labels and annotations written).
    metadata: Mutex<HashMap<String, (String, WrittenMetadata)>>,
    /// Parent UID → (when its status was first left for later, whether a
    /// pass that left it was catching up); until the status is written.
    deferred: Mutex<HashMap<String, (Instant, bool)>>,
}

impl ApplyMemory {
    pub fn new() -> Self {
        Self::default()
    }

    /// Remembers an apply from the object the API server returned.
    pub fn record(
        &self,
        type_index: usize,
        namespace: Option<&str>,
        name: &str,
        fingerprint: u64,
        applied: &DynamicObject,
    ) {
        let entry = Applied {
            fingerprint,
            uid: applied.uid().unwrap_or_default(),
            generation: applied.metadata.generation.unwrap_or(0),
            resource_version: applied
                .metadata
                .resource_version
                .clone()
                .unwrap_or_default(),
        };
        // A poisoned lock only means another worker panicked mid-insert; the
        // map is still a valid cache.
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.insert(key(type_index, namespace, name), (entry, Instant::now()));
    }

    /// Forgets a deleted child, so memory stays bounded by the children
    /// that exist (a UID check guards against reuse anyway).
    pub fn forget(&self, type_index: usize, namespace: Option<&str>, name: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.remove(&key(type_index, namespace, name));
    }

    /// Remembers the status written on the parent `uid` as it was at
    /// `resource_version`.
    pub fn record_status(&self, uid: &str, resource_version: &str, status: Value) {
        self.statuses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(uid.to_owned(), (resource_version.to_owned(), status));
    }

    /// The parent cache shows `uid` at `resource_version`: the status and
    /// metadata written on an earlier version are in the cache now (or
    /// overtaken), and no later reconcile can read that version again, so
    /// they are dropped — else each parent would keep a decoded copy of its
    /// last status for as long as it lives.
    pub fn parent_seen(&self, uid: &str, resource_version: &str) {
        forget_once_past(&self.statuses, uid, resource_version);
        forget_once_past(&self.metadata, uid, resource_version);
    }

    /// Remembers the labels and annotations written on the decorated
    /// object `uid`, whose plan read it at `resource_version`.
    pub fn record_metadata(&self, uid: &str, resource_version: &str, written: WrittenMetadata) {
        self.metadata
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(uid.to_owned(), (resource_version.to_owned(), written));
    }

    /// Forgets a deleted parent's status (and a decorated object's
    /// labels and annotations).
    pub fn forget_parent(&self, uid: &str) {
        self.statuses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(uid);
        self.metadata
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(uid);
        self.deferred_statuses().remove(uid);
    }

    /// The parent `uid`'s status change was left for a later pass.
    pub fn defer_status(&self, uid: &str, catching_up: bool) {
        let mut deferred = self.deferred_statuses();
        let entry = deferred
            .entry(uid.to_owned())
            .or_insert_with(|| (Instant::now(), false));
        entry.1 |= catching_up;
    }

    /// The parent `uid`'s status is no longer left for later: a pass wrote
    /// it, or found nothing to change.
    pub fn status_settled(&self, uid: &str) {
        self.deferred_statuses().remove(uid);
    }

    /// How long the parent `uid`'s status has been left for later, if it
    /// is.
    pub fn status_deferred_for(&self, uid: &str) -> Option<Duration> {
        self.deferred_statuses()
            .get(uid)
            .map(|(since, _)| since.elapsed())
    }

    fn deferred_statuses(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, bool)>> {
        self.deferred.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Drops `uid`'s entry of `map` (the version it was written on, and what)
/// once `shown` is a later version.
fn forget_once_past<V>(map: &Mutex<HashMap<String, (String, V)>>, uid: &str, shown: &str) {
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    if map
        .get(uid)
        .is_some_and(|(written_on, _)| moved_past(shown, written_on))
    {
        map.remove(uid);
        shrink(&mut map);
    }
}

/// Gives back most of a map's table once it is mostly empty (after a burst
/// of writes the cache has since caught up with), halving at most as often
/// as it has emptied by half: amortized, each removal stays O(1).
fn shrink<K: Eq + std::hash::Hash, V>(map: &mut HashMap<K, V>) {
    if map.len() * 4 < map.capacity() {
        map.shrink_to(map.len() * 2);
    }
}

/// Whether `shown` is a later version than `earlier`. A resourceVersion is
/// opaque to clients; kube-apiserver's are etcd revisions, compared here
/// only when both are numbers (otherwise nothing is dropped, as before).
fn moved_past(shown: &str, earlier: &str) -> bool {
    matches!((shown.parse::<u64>(), earlier.parse::<u64>()), (Ok(s), Ok(e)) if s > e)
}

fn key(type_index: usize, namespace: Option<&str>, name: &str) -> Key {
    (type_index, namespace.map(str::to_owned), name.to_owned())
}

impl AppliedMemory for ApplyMemory {
    fn applied(&self, type_index: usize, namespace: Option<&str>, name: &str) -> Option<Applied> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(&key(type_index, namespace, name))
            .map(|(applied, _)| applied.clone())
    }

    fn on_its_way(
        &self,
        type_index: usize,
        namespace: Option<&str>,
        name: &str,
        fingerprint: u64,
    ) -> bool {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(&key(type_index, namespace, name))
            .is_some_and(|(applied, at)| {
                applied.fingerprint == fingerprint && at.elapsed() < UNSEEN_WINDOW
            })
    }

    fn written_status(&self, uid: &str, resource_version: &str) -> Option<Value> {
        let statuses = self.statuses.lock().unwrap_or_else(|p| p.into_inner());
        statuses
            .get(uid)
            .filter(|(written_on, _)| written_on == resource_version)
            .map(|(_, status)| status.clone())
    }

    fn written_metadata(&self, uid: &str, resource_version: &str) -> Option<WrittenMetadata> {
        let metadata = self.metadata.lock().unwrap_or_else(|p| p.into_inner());
        metadata
            .get(uid)
            .filter(|(read_at, _)| read_at == resource_version)
            .map(|(_, written)| written.clone())
    }

    fn deferred_while_catching_up(&self, uid: &str) -> bool {
        self.deferred_statuses()
            .get(uid)
            .is_some_and(|(_, catching_up)| *catching_up)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_child_just_applied_is_on_its_way_for_a_while_unless_deleted() {
        let memory = ApplyMemory::new();
        let applied: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "uid": "c1", "generation": 1, "resourceVersion": "5"}
        }))
        .unwrap();
        assert!(!memory.on_its_way(0, Some("shop"), "web", 7));
        memory.record(0, Some("shop"), "web", 7, &applied);
        assert!(memory.on_its_way(0, Some("shop"), "web", 7));
        assert!(
            !memory.on_its_way(0, Some("shop"), "web", 8),
            "another body"
        );
        assert!(
            !memory.on_its_way(1, Some("shop"), "web", 7),
            "another type"
        );
        tokio::time::advance(UNSEEN_WINDOW).await;
        assert!(
            !memory.on_its_way(0, Some("shop"), "web", 7),
            "too long unseen"
        );
        memory.record(0, Some("shop"), "web", 7, &applied);
        memory.forget(0, Some("shop"), "web");
        assert!(
            !memory.on_its_way(0, Some("shop"), "web", 7),
            "seen deleted"
        );
    }

    #[test]
    fn a_written_status_is_kept_until_the_cache_shows_a_later_version() {
        let memory = ApplyMemory::new();
        let status = serde_json::json!({"ok": true});
        let metadata = WrittenMetadata::default();
        memory.record_status("p1", "10", status.clone());
        memory.record_metadata("p1", "10", metadata.clone());
        // The cache still shows 10, or an older version (an earlier write of
        // this pass not seen yet): kept.
        for shown in ["10", "9", "not-a-number"] {
            memory.parent_seen("p1", shown);
            assert_eq!(memory.written_status("p1", "10"), Some(status.clone()));
            assert_eq!(memory.written_metadata("p1", "10"), Some(metadata.clone()));
        }
        memory.parent_seen("p2", "11");
        assert_eq!(memory.written_status("p1", "10"), Some(status.clone()));
        // Version 11 is in the cache: 10 can never be read again.
        memory.parent_seen("p1", "11");
        assert_eq!(memory.written_status("p1", "10"), None);
        assert_eq!(memory.written_metadata("p1", "10"), None);
        assert!(memory.statuses.lock().unwrap().is_empty());
        assert!(memory.metadata.lock().unwrap().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_deferred_status_ages_until_settled_and_keeps_whether_it_caught_up() {
        let memory = ApplyMemory::new();
        assert_eq!(memory.status_deferred_for("p1"), None);
        memory.defer_status("p1", true);
        tokio::time::advance(Duration::from_secs(20)).await;
        // A later pass that changes nothing does not reset the age or the
        // catching up.
        memory.defer_status("p1", false);
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(
            memory.status_deferred_for("p1"),
            Some(Duration::from_secs(30))
        );
        assert!(memory.deferred_while_catching_up("p1"));
        assert!(!memory.deferred_while_catching_up("p2"));
        memory.status_settled("p1");
        assert_eq!(memory.status_deferred_for("p1"), None);
        assert!(!memory.deferred_while_catching_up("p1"));
        memory.defer_status("p2", false);
        assert!(!memory.deferred_while_catching_up("p2"));
        memory.forget_parent("p2");
        assert_eq!(memory.status_deferred_for("p2"), None);
    }
}
