//! A watcher's events applied to a cache's store, and its subscribers told.
//!
//! The first listing of a type goes through kube's writer as it is: the
//! writer gathers it and swaps it in whole at the end (there is nothing to
//! replace yet). A later listing (a relist, after a watch failed) does not:
//! kube's writer would gather a second full copy beside the store, twice
//! the memory at the worst moment (an API server restart relists every
//! type at once). Instead each object listed replaces its old copy in the
//! store as it arrives, and what the store held before and the listing did
//! not find is removed at its end: the store holds about one copy
//! throughout (docs/performance.md, "Memory").

use super::change::Change;
use super::object::CachedObject;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher::Event;
use std::collections::HashSet;
use std::sync::Arc;

/// An object's place in its type's store: namespace and name.
pub(super) type Key = (Option<String>, String);

pub(super) fn key(obj: &CachedObject) -> Key {
    (
        obj.metadata.namespace.clone(),
        obj.metadata.name.clone().unwrap_or_default(),
    )
}

/// What a listing reads of its cache's store, keeps beside it and tells its
/// subscribers.
pub(super) trait Cached {
    fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<CachedObject>>;
    /// Every object the store holds.
    fn all(&self) -> Vec<Arc<CachedObject>>;
    /// The store's copy `old` was replaced by `new` (`owners.rs`).
    fn reindex(&self, old: Option<&CachedObject>, new: Option<&CachedObject>);
    /// The store now holds `objects` and nothing else.
    fn index_anew(&self, objects: &[Arc<CachedObject>]);
    fn notify(&self, change: &Change);
}

/// Where a cache is in listing its type.
#[derive(Debug, Default)]
pub(super) enum Listing {
    /// Never listed completely: kube's writer gathers the listing.
    #[default]
    First,
    /// Listing again: what the store held when it began, what it has found,
    /// and which of those were new or at another resourceVersion.
    Again {
        before: HashSet<Key>,
        seen: HashSet<Key>,
        changed: HashSet<Key>,
    },
    /// Listed; watching.
    Watching,
}

impl Listing {
    /// Applies `event` to the store behind `writer` and tells `cache`'s
    /// subscribers what changed. A listing's objects are told of when it is
    /// complete (as a resync would), with every object gone while the
    /// watch was down, which no event would otherwise report (a child
    /// deleted then must bring its parent back to recreate it). Returns
    /// whether `event` completed a listing.
    pub(super) fn apply(
        &mut self,
        writer: &mut Writer<CachedObject>,
        cache: &impl Cached,
        event: Event<CachedObject>,
    ) -> bool {
        match event {
            Event::Apply(obj) => {
                // The store's copy: subscribers share it rather than a second.
                if let Some(applied) = replace(writer, cache, obj) {
                    cache.notify(&Change::Applied(applied));
                }
            }
            Event::Delete(obj) => {
                let (namespace, name) = key(&obj);
                let old = cache.get(namespace.as_deref(), &name);
                writer.apply_watcher_event(&Event::Delete(obj.clone()));
                cache.reindex(old.as_deref(), None);
                cache.notify(&Change::Deleted(Arc::new(obj)));
            }
            Event::Init => match self {
                Listing::First => writer.apply_watcher_event(&Event::Init),
                _ => {
                    let before = cache.all().iter().map(|o| key(o)).collect();
                    *self = Listing::Again {
                        before,
                        seen: HashSet::new(),
                        changed: HashSet::new(),
                    };
                }
            },
            Event::InitApply(obj) => match self {
                Listing::Again { seen, changed, .. } => {
                    let found = key(&obj);
                    let held = cache.get(found.0.as_deref(), &found.1);
                    let version = |o: &CachedObject| o.metadata.resource_version.clone();
                    // Without versions to compare, taken as changed.
                    if held.is_none_or(|h| version(&h).is_none() || version(&h) != version(&obj)) {
                        changed.insert(found.clone());
                    }
                    seen.insert(found);
                    replace(writer, cache, obj);
                }
                _ => writer.apply_watcher_event(&Event::InitApply(obj)),
            },
            Event::InitDone => {
                match std::mem::replace(self, Listing::Watching) {
                    Listing::Again {
                        before,
                        seen,
                        changed,
                    } => {
                        for (namespace, name) in before.difference(&seen) {
                            if let Some(gone) = cache.get(namespace.as_deref(), name) {
                                writer.apply_watcher_event(&Event::Delete((*gone).clone()));
                                cache.reindex(Some(&gone), None);
                                cache.notify(&Change::Deleted(gone));
                            }
                        }
                        for found_key in &seen {
                            let (namespace, name) = found_key;
                            if let Some(found) = cache.get(namespace.as_deref(), name) {
                                cache.notify(&if changed.contains(found_key) {
                                    Change::Applied(found)
                                } else {
                                    Change::Listed(found)
                                });
                            }
                        }
                    }
                    Listing::First | Listing::Watching => {
                        // kube's writer swaps the listing in whole.
                        writer.apply_watcher_event(&Event::InitDone);
                        let listed = cache.all();
                        cache.index_anew(&listed);
                        for found in listed {
                            cache.notify(&Change::Listed(found));
                        }
                    }
                }
                return true;
            }
        }
        false
    }
}

/// Writes `obj` over the store's copy, keeps the index in step, and returns
/// the store's new copy.
fn replace(
    writer: &mut Writer<CachedObject>,
    cache: &impl Cached,
    obj: CachedObject,
) -> Option<Arc<CachedObject>> {
    let (namespace, name) = key(&obj);
    let old = cache.get(namespace.as_deref(), &name);
    writer.apply_watcher_event(&Event::Apply(obj));
    let new = cache.get(namespace.as_deref(), &name);
    cache.reindex(old.as_deref(), new.as_deref());
    new
}
