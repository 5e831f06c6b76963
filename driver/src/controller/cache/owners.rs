//! Which cached objects each controller holds, and which have no
//! controller, so that a reconcile reads its parent's children and the
//! orphans it may adopt instead of every object of the type in the
//! namespace: the claim rules (docs/metacontroller.md §3.5) do nothing with
//! an object another controller holds. Without it a pass over N parents
//! that share a namespace reads N² objects.
//!
//! kube's `Store` has no secondary index, so the cache keeps this one beside
//! it, updated where the store is written (`listing.rs`). Keys are what the
//! store is keyed by (namespace and name); an object found in the index but
//! gone from the store by the time it is read is skipped.

use super::listing::{Key, key};
use super::object::CachedObject;
use crate::decide::model::controller_of;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The cached objects of one type by the UID of their controller.
#[derive(Debug, Default)]
pub(super) struct Owners {
    /// A parent holds a few children: a Vec of one is a fifth of a
    /// HashSet's smallest table.
    controlled: HashMap<String, Vec<Key>>,
    /// Objects no controller holds, by namespace: what a parent may adopt.
    orphans: HashMap<Option<String>, HashSet<String>>,
}

impl Owners {
    /// The index of a store holding `objects`.
    pub(super) fn of(objects: &[Arc<CachedObject>]) -> Self {
        let mut owners = Owners::default();
        for obj in objects {
            owners.replace(None, Some(obj));
        }
        owners
    }

    /// `old` (the store's copy before a write, if any) replaced by `new`
    /// (after it; `None` once deleted).
    pub(super) fn replace(&mut self, old: Option<&CachedObject>, new: Option<&CachedObject>) {
        if let Some(old) = old {
            self.remove(old);
        }
        if let Some(new) = new {
            let (namespace, name) = key(new);
            match controller_of(new) {
                Some(owner) => {
                    let keys = self.controlled.entry(owner.uid.clone()).or_default();
                    let key = (namespace, name);
                    if !keys.contains(&key) {
                        keys.push(key);
                    }
                }
                None => {
                    self.orphans.entry(namespace).or_default().insert(name);
                }
            }
        }
    }

    fn remove(&mut self, obj: &CachedObject) {
        let (namespace, name) = key(obj);
        match controller_of(obj) {
            Some(owner) => {
                if let Some(keys) = self.controlled.get_mut(&owner.uid) {
                    let key = (namespace, name);
                    keys.retain(|k| *k != key);
                    // A parent gone leaves no entry behind.
                    if keys.is_empty() {
                        self.controlled.remove(&owner.uid);
                    }
                }
            }
            None => {
                if let Some(names) = self.orphans.get_mut(&namespace) {
                    names.remove(&name);
                    if names.is_empty() {
                        self.orphans.remove(&namespace);
                    }
                }
            }
        }
    }

    /// Calls `found` with the key of every object `controller_uid` holds
    /// and every orphan, in `namespace` (every namespace for `None`).
    pub(super) fn candidates(
        &self,
        namespace: Option<&str>,
        controller_uid: &str,
        mut found: impl FnMut(Option<&str>, &str),
    ) {
        let in_scope = |ns: &Option<String>| namespace.is_none() || ns.as_deref() == namespace;
        for (ns, name) in self.controlled.get(controller_uid).into_iter().flatten() {
            if in_scope(ns) {
                found(ns.as_deref(), name);
            }
        }
        let mut orphans_in = |ns: &Option<String>, names: &HashSet<String>| {
            for name in names {
                found(ns.as_deref(), name);
            }
        };
        match namespace {
            Some(ns) => {
                let ns = Some(ns.to_owned());
                if let Some(names) = self.orphans.get(&ns) {
                    orphans_in(&ns, names);
                }
            }
            None => self
                .orphans
                .iter()
                .for_each(|(ns, names)| orphans_in(ns, names)),
        }
    }

    /// How many objects are indexed (each once).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.controlled.values().map(Vec::len).sum::<usize>()
            + self.orphans.values().map(HashSet::len).sum::<usize>()
    }
}
