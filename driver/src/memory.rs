//! What the executor last applied, so that an unchanged desired child costs
//! no API call (like Metacontroller's server-side-apply cache,
//! docs/metacontroller.md §3.8), and the status it last wrote on each
//! parent: the next reconcile often starts before the parent cache has seen
//! that write (a child's event queues it first), and would otherwise write
//! the same status again (and see a fall of its conditions that is not
//! there).

use super::plan::{Applied, AppliedMemory};
use kube::ResourceExt;
use kube::core::DynamicObject;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;

type Key = (usize, Option<String>, String);

/// One per controller: (child type, namespace, name) → last apply.
#[derive(Debug, Default)]
pub struct ApplyMemory {
    entries: Mutex<HashMap<Key, Applied>>,
    /// Parent UID → (the resourceVersion the status was written on, the
    /// status written).
    statuses: Mutex<HashMap<String, (String, Value)>>,
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
        entries.insert(key(type_index, namespace, name), entry);
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

    /// Forgets a deleted parent's status.
    pub fn forget_parent(&self, uid: &str) {
        self.statuses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(uid);
    }
}

fn key(type_index: usize, namespace: Option<&str>, name: &str) -> Key {
    (type_index, namespace.map(str::to_owned), name.to_owned())
}

impl AppliedMemory for ApplyMemory {
    fn applied(&self, type_index: usize, namespace: Option<&str>, name: &str) -> Option<Applied> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.get(&key(type_index, namespace, name)).cloned()
    }

    fn written_status(&self, uid: &str, resource_version: &str) -> Option<Value> {
        let statuses = self.statuses.lock().unwrap_or_else(|p| p.into_inner());
        statuses
            .get(uid)
            .filter(|(written_on, _)| written_on == resource_version)
            .map(|(_, status)| status.clone())
    }
}
