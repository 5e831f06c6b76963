//! Reflector caches (as in the early kube-rs reflector articles): one
//! watched, self-updating store per API type, shared by every controller
//! that reads the type (as parent, child or related), and started the first
//! time a controller asks for it.
//! Every change is passed to the type's subscribers, which map it to parent
//! keys in their controller's queue.
//!
//! When a watch fails (the API server restarted, the connection broke, the
//! history it resumed from is gone), the cache lists its type again, as
//! client-go's reflector does, and counts as out of date until the new
//! listing is complete: the driver's `/readyz` says so. kube's watcher would
//! resume from the last resource version instead, which leaves no moment at
//! which the cache is known to be current again. A relist replaces each
//! object as it arrives, so the store never holds two copies of the type
//! (`listing.rs`). Beside the store, an index of each object's controller
//! lets a reconcile read only its own parent's children and the orphans it
//! may adopt (`owners.rs`).

use crate::decide::model::ResolvedType;
use crate::decide::plan::Existing;
use crate::observe::metrics::DriverMetrics;
use futures::StreamExt;
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::core::Selector;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use listing::Listing;
use owners::Owners;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub use change::{Change, Subscriber};
pub use initial_list::{InitialList, InitialListChoice};
pub use object::{CachedObject, SharedType};

/// The cache of one API type.
pub struct TypeCache {
    pub resource: ResolvedType,
    /// `resource` as the store's keys name it.
    shared: SharedType,
    pub store: Store<CachedObject>,
    synced: AtomicBool,
    subscribers: RwLock<Vec<Subscriber>>,
    /// When the last change arrived, and the resourceVersion it carried.
    last_event: Mutex<Option<(jiff::Timestamp, Option<String>)>>,
    owners: RwLock<Owners>,
}

/// What a cache holds, for people (`/debug/driver`).
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CacheState {
    pub api_version: String,
    pub kind: String,
    pub synced: bool,
    pub objects: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_event: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

impl TypeCache {
    fn new(resource: ResolvedType, store: Store<CachedObject>, synced: bool) -> Self {
        TypeCache {
            shared: SharedType::of(&resource.api),
            resource,
            store,
            synced: AtomicBool::new(synced),
            subscribers: RwLock::new(Vec::new()),
            last_event: Mutex::new(None),
            owners: RwLock::new(Owners::default()),
        }
    }

    /// A cache holding `objects` (as a listing leaves them) and marked
    /// synced, without a watch: for tests and the memory benchmark.
    pub fn filled(resource: &ResolvedType, objects: &[DynamicObject]) -> Self {
        let mut writer = reflector::store::Writer::new(SharedType::of(&resource.api));
        let cache = TypeCache::new(resource.clone(), writer.as_reader(), true);
        let mut listing = Listing::default();
        listing.apply(&mut writer, &cache, watcher::Event::Init);
        // A test's objects are its own making: one that cannot be written
        // as JSON is left out, as the API server would never send it.
        for mut obj in objects.iter().filter_map(|o| CachedObject::of(o).ok()) {
            normalize(&mut obj, resource);
            listing.apply(&mut writer, &cache, watcher::Event::InitApply(obj));
        }
        listing.apply(&mut writer, &cache, watcher::Event::InitDone);
        cache
    }

    pub fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Waits for the first complete listing.
    pub async fn wait_synced(&self) {
        // Only fails if the writer is gone, i.e. the process is stopping.
        let _ = self.store.wait_until_ready().await;
    }

    pub fn subscribe(&self, subscriber: Subscriber) {
        self.subscribers
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(subscriber);
    }

    pub fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<CachedObject>> {
        let mut key = ObjectRef::new_with(name, self.shared.clone());
        if let Some(ns) = namespace {
            key = key.within(ns);
        }
        self.store.get(&key)
    }

    /// Every object, or those in `namespace`.
    pub fn list(&self, namespace: Option<&str>) -> Vec<Arc<CachedObject>> {
        match namespace {
            None => self.store.state(),
            Some(ns) => self
                .store
                .state_filter(|o| o.metadata.namespace.as_deref() == Some(ns)),
        }
    }

    /// What a parent whose UID is `controller_uid` may claim: the objects
    /// it controls and those no one controls, in `namespace` (every
    /// namespace for `None`). Not the objects other controllers hold.
    pub fn candidates(
        &self,
        namespace: Option<&str>,
        controller_uid: &str,
    ) -> Vec<Arc<CachedObject>> {
        let mut found = Vec::new();
        self.owners
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .candidates(namespace, controller_uid, |ns, name| {
                found.extend(self.get(ns, name));
            });
        found
    }

    pub fn state(&self) -> CacheState {
        let last = self
            .last_event
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        CacheState {
            api_version: self.resource.api.api_version.clone(),
            kind: self.resource.api.kind.clone(),
            synced: self.is_synced(),
            objects: self.store.state().len(),
            last_event: last.as_ref().map(|(at, _)| at.to_string()),
            resource_version: last.and_then(|(_, rv)| rv),
        }
    }

    pub(crate) fn notify(&self, change: &Change) {
        let obj = change.object();
        *self.last_event.lock().unwrap_or_else(|p| p.into_inner()) = Some((
            jiff::Timestamp::now(),
            obj.metadata.resource_version.clone(),
        ));
        let subscribers = self
            .subscribers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for subscriber in subscribers {
            subscriber(change);
        }
    }
}

impl listing::Cached for TypeCache {
    fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<CachedObject>> {
        TypeCache::get(self, namespace, name)
    }

    fn all(&self) -> Vec<Arc<CachedObject>> {
        self.store.state()
    }

    fn reindex(&self, old: Option<&CachedObject>, new: Option<&CachedObject>) {
        self.owners
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .replace(old, new);
    }

    fn index_anew(&self, objects: &[Arc<CachedObject>]) {
        *self.owners.write().unwrap_or_else(|p| p.into_inner()) = Owners::of(objects);
    }

    fn notify(&self, change: &Change) {
        TypeCache::notify(self, change)
    }
}

/// The caches of a controller's child types, by type index, as the planner
/// looks a desired child's name up in them (a type of this crate: the
/// trait and the slice are both the planner's and std's).
pub struct ChildCaches<'a>(pub &'a [Arc<TypeCache>]);

impl Existing for ChildCaches<'_> {
    fn holds(&self, type_index: usize, namespace: Option<&str>, name: &str) -> bool {
        self.0
            .get(type_index)
            .is_some_and(|cache| cache.get(namespace, name).is_some())
    }
}

/// A cache's key: `apiVersion`, plural, and whether it holds only this
/// shard's objects.
type CacheKey = (String, String, bool);

/// Every cache of the process, by `apiVersion` and plural.
pub struct Caches {
    client: Client,
    stop: CancellationToken,
    metrics: Arc<DriverMetrics>,
    /// `--shard-selector`: what the parent and child caches hold.
    shard: Option<Selector>,
    types: Mutex<HashMap<CacheKey, Arc<TypeCache>>>,
    /// Streamed or paged: shared by every type's cache.
    initial_list: Arc<InitialListChoice>,
}

impl Caches {
    /// Caches that list in pages (tests: what a scripted API server answers).
    pub fn new(client: Client, stop: CancellationToken, metrics: Arc<DriverMetrics>) -> Arc<Self> {
        Self::sharded(
            client,
            stop,
            metrics,
            None,
            InitialListChoice::given(InitialList::Paged),
        )
    }

    /// Caches whose parent and child types hold only the objects `shard`
    /// selects: the API server filters the lists and watches, so a shard's
    /// memory follows its share.
    pub fn sharded(
        client: Client,
        stop: CancellationToken,
        metrics: Arc<DriverMetrics>,
        shard: Option<Selector>,
        initial_list: InitialListChoice,
    ) -> Arc<Self> {
        Arc::new(Caches {
            client,
            stop,
            metrics,
            shard,
            types: Mutex::new(HashMap::new()),
            initial_list: Arc::new(initial_list),
        })
    }

    /// The cache of a parent or child type: this shard's objects only.
    pub fn get_or_start_shard(&self, resource: &ResolvedType) -> Arc<TypeCache> {
        self.start(resource, self.shard.as_ref())
    }

    /// The cache of `resource` (every object: related types, Namespaces),
    /// started on first use.
    pub fn get_or_start(&self, resource: &ResolvedType) -> Arc<TypeCache> {
        self.start(resource, None)
    }

    fn start(&self, resource: &ResolvedType, selector: Option<&Selector>) -> Arc<TypeCache> {
        let key = (
            resource.api.api_version.clone(),
            resource.api.plural.clone(),
            selector.is_some(),
        );
        let mut types = self.types.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(cache) = types.get(&key) {
            return Arc::clone(cache);
        }
        let writer = reflector::store::Writer::new(SharedType::of(&resource.api));
        let cache = Arc::new(TypeCache::new(resource.clone(), writer.as_reader(), false));
        types.insert(key, Arc::clone(&cache));
        let api: Api<CachedObject> =
            Api::all_with(self.client.clone(), &SharedType::of(&resource.api));
        let selector = selector.cloned();
        let initial_list = Arc::clone(&self.initial_list);
        let (metrics, stop) = (self.metrics.clone(), self.stop.clone());
        let task_cache = Arc::clone(&cache);
        tokio::spawn(async move {
            let config = initial_list.resolve(&api).await.config();
            let config = match &selector {
                Some(selector) => config.labels_from(selector),
                None => config,
            };
            run(api, config, writer, task_cache, metrics, stop).await;
        });
        cache
    }

    /// A cache filled with `objects` and marked synced, without a watch:
    /// for tests that script the API server.
    #[cfg(test)]
    pub fn preload(&self, resource: &ResolvedType, objects: Vec<DynamicObject>) -> Arc<TypeCache> {
        let cache = Arc::new(TypeCache::filled(resource, &objects));
        let key = (
            resource.api.api_version.clone(),
            resource.api.plural.clone(),
            self.shard.is_some(),
        );
        self.types
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, Arc::clone(&cache));
        cache
    }

    /// Every started cache's state, by apiVersion and kind.
    pub fn states(&self) -> Vec<CacheState> {
        let mut states: Vec<CacheState> = self
            .types
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .map(|c| c.state())
            .collect();
        states.sort_by(|a, b| (&a.api_version, &a.kind).cmp(&(&b.api_version, &b.kind)));
        states
    }

    /// Whether every started cache has listed its type once.
    pub fn all_synced(&self) -> bool {
        self.types
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .all(|c| c.is_synced())
    }
}

/// What the cache keeps of an object. Items of a list come without
/// `apiVersion` and `kind` (only watch events carry them): the type is put
/// back, as client-go's dynamic client does, so that hooks see whole objects
/// whether the driver listed or watched them (found on the real API server:
/// a Hello listed at start did not see its Deployment). `managedFields` are
/// never read into the cache (`object.rs`).
fn normalize(obj: &mut CachedObject, resource: &ResolvedType) {
    obj.set_type_if_missing(&resource.api.api_version, &resource.api.kind);
}

/// The first wait after a failed watch; doubled while failures go on, up
/// to a cap short enough that a restarted API server is noticed within
/// seconds (docs/robustness.md, "Faults survived").
const RELIST_BACKOFF: Duration = Duration::from_millis(250);
const RELIST_BACKOFF_MAX: Duration = Duration::from_secs(4);
/// A watch that stayed up this long before failing starts the backoff over.
const RELIST_BACKOFF_RESET: Duration = Duration::from_secs(60);

async fn run(
    api: Api<CachedObject>,
    config: watcher::Config,
    mut writer: reflector::store::Writer<CachedObject>,
    cache: Arc<TypeCache>,
    metrics: Arc<DriverMetrics>,
    stop: CancellationToken,
) {
    let kind = cache.resource.api.kind.clone();
    let label = cache.resource.map_key();
    metrics.cache_synced(&label, false);
    let mut backoff = RELIST_BACKOFF;
    let mut listing = Listing::default();
    loop {
        // A new watcher lists first: every object again, then watches.
        let resource = cache.resource.clone();
        let stream = watcher::watcher(api.clone(), config.clone())
            .modify(move |obj| normalize(obj, &resource));
        let mut stream = std::pin::pin!(stream);
        let mut listed_at = None;
        let failure = loop {
            let event = tokio::select! {
                _ = stop.cancelled() => return,
                event = stream.next() => event,
            };
            let event = match event {
                // A watcher's stream does not end; if it did, list again.
                None => break None,
                Some(Err(err)) => break Some(err),
                Some(Ok(event)) => event,
            };
            if listing.apply(&mut writer, cache.as_ref(), event) {
                listed_at = Some(tokio::time::Instant::now());
                if !cache.synced.swap(true, Ordering::AcqRel) {
                    tracing::info!(%kind, objects = cache.store.len(), "cache synced");
                }
                metrics.cache_synced(&label, true);
            }
        };
        cache.synced.store(false, Ordering::Release);
        metrics.cache_synced(&label, false);
        if listed_at.is_some_and(|at| at.elapsed() >= RELIST_BACKOFF_RESET) {
            backoff = RELIST_BACKOFF;
        }
        match &failure {
            Some(err) => {
                tracing::warn!(%kind, error = %crate::api_error_chain(err), retry_in = ?backoff, "watch failed; the cache is out of date until it lists again")
            }
            None => tracing::warn!(%kind, retry_in = ?backoff, "watch ended; listing again"),
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(RELIST_BACKOFF_MAX);
        metrics.cache_relisted(&label);
    }
}

mod change;
mod initial_list;
mod listing;
mod object;
mod owners;
#[cfg(test)]
mod tests;
