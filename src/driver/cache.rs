//! Reflector caches (seed 002): one watched, self-updating store per API
//! type, shared by every controller that reads the type (as parent, child
//! or related), and started the first time a controller asks for it.
//! Every change is passed to the type's subscribers, which map it to parent
//! keys in their controller's queue.

use super::model::Resource;
use futures::StreamExt;
use kube::Client;
use kube::api::{Api, DynamicObject, TypeMeta};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use tokio_util::sync::CancellationToken;

/// A change to one cached object.
#[derive(Debug, Clone)]
pub enum Change {
    /// Added or modified (including the initial listing and relists).
    Applied(Arc<DynamicObject>),
    Deleted(Arc<DynamicObject>),
}

pub type Subscriber = Arc<dyn Fn(&Change) + Send + Sync>;

/// The cache of one API type.
pub struct TypeCache {
    pub resource: Resource,
    pub store: Store<DynamicObject>,
    synced: AtomicBool,
    subscribers: RwLock<Vec<Subscriber>>,
}

impl TypeCache {
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

    pub fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<DynamicObject>> {
        let mut key = ObjectRef::new_with(name, self.resource.api.clone());
        if let Some(ns) = namespace {
            key = key.within(ns);
        }
        self.store.get(&key)
    }

    /// Every object, or those in `namespace`.
    pub fn list(&self, namespace: Option<&str>) -> Vec<Arc<DynamicObject>> {
        match namespace {
            None => self.store.state(),
            Some(ns) => self
                .store
                .state_filter(|o| o.metadata.namespace.as_deref() == Some(ns)),
        }
    }

    fn notify(&self, change: &Change) {
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

/// Every cache of the process, by `apiVersion` and plural.
pub struct Caches {
    client: Client,
    stop: CancellationToken,
    types: Mutex<HashMap<(String, String), Arc<TypeCache>>>,
}

impl Caches {
    pub fn new(client: Client, stop: CancellationToken) -> Arc<Self> {
        Arc::new(Caches {
            client,
            stop,
            types: Mutex::new(HashMap::new()),
        })
    }

    /// The cache of `resource`, started on first use.
    pub fn get_or_start(&self, resource: &Resource) -> Arc<TypeCache> {
        let key = (
            resource.api.api_version.clone(),
            resource.api.plural.clone(),
        );
        let mut types = self.types.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(cache) = types.get(&key) {
            return Arc::clone(cache);
        }
        let writer = reflector::store::Writer::new(resource.api.clone());
        let cache = Arc::new(TypeCache {
            resource: resource.clone(),
            store: writer.as_reader(),
            synced: AtomicBool::new(false),
            subscribers: RwLock::new(Vec::new()),
        });
        types.insert(key, Arc::clone(&cache));
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource.api);
        tokio::spawn(run(api, writer, Arc::clone(&cache), self.stop.clone()));
        cache
    }

    /// A cache filled with `objects` and marked synced, without a watch:
    /// for tests that script the API server.
    #[cfg(test)]
    pub fn preload(&self, resource: &Resource, objects: Vec<DynamicObject>) -> Arc<TypeCache> {
        let mut writer = reflector::store::Writer::new(resource.api.clone());
        writer.apply_watcher_event(&Event::Init);
        for obj in objects {
            writer.apply_watcher_event(&Event::InitApply(obj));
        }
        writer.apply_watcher_event(&Event::InitDone);
        let cache = Arc::new(TypeCache {
            resource: resource.clone(),
            store: writer.as_reader(),
            synced: AtomicBool::new(true),
            subscribers: RwLock::new(Vec::new()),
        });
        let key = (
            resource.api.api_version.clone(),
            resource.api.plural.clone(),
        );
        self.types
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, Arc::clone(&cache));
        cache
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

async fn run(
    api: Api<DynamicObject>,
    writer: reflector::store::Writer<DynamicObject>,
    cache: Arc<TypeCache>,
    stop: CancellationToken,
) {
    let kind = cache.resource.api.kind.clone();
    let types = TypeMeta {
        api_version: cache.resource.api.api_version.clone(),
        kind: kind.clone(),
    };
    let stream = watcher::watcher(api, watcher::Config::default())
        .modify(move |obj| {
            // managedFields can be most of an object, and no decision reads them.
            obj.metadata.managed_fields = None;
            // The API server lists built-in types (Deployments) without
            // apiVersion and kind on each item; a watch event's object has
            // them. Hooks read them (Hello ignores a child without `kind`):
            // without this, every restart or relist showed Hello no
            // Deployment, and its status fell to 0 replicas until the
            // Deployment next changed.
            obj.types = Some(types.clone());
        })
        .default_backoff()
        .reflect(writer);
    let mut stream = std::pin::pin!(stream);
    loop {
        let event = tokio::select! {
            _ = stop.cancelled() => return,
            event = stream.next() => event,
        };
        match event {
            None => return,
            Some(Ok(Event::Apply(obj) | Event::InitApply(obj))) => {
                cache.notify(&Change::Applied(Arc::new(obj)));
            }
            Some(Ok(Event::Delete(obj))) => cache.notify(&Change::Deleted(Arc::new(obj))),
            Some(Ok(Event::InitDone)) => {
                if !cache.synced.swap(true, Ordering::AcqRel) {
                    tracing::info!(%kind, objects = cache.store.len(), "cache synced");
                }
            }
            Some(Ok(Event::Init)) => {}
            // The watcher backs off and relists by itself; say why.
            Some(Err(err)) => tracing::warn!(%kind, error = %err, "watch failed; retrying"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::execute_tests::{answer, mock_client};
    use crate::driver::wire;
    use serde_json::json;

    #[tokio::test]
    async fn listed_objects_carry_apiversion_and_kind_like_watched_ones() {
        let (client, mut api) = mock_client();
        let stop = CancellationToken::new();
        let caches = Caches::new(client, stop.clone());
        let cache = caches.get_or_start(&Resource::new(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            true,
        ));
        // As kube-apiserver lists Deployments: no apiVersion or kind on
        // the items, only on the list.
        let list = answer(
            &mut api,
            200,
            json!({
                "apiVersion": "apps/v1", "kind": "DeploymentList",
                "metadata": {"resourceVersion": "7"},
                "items": [{
                    "metadata": {"name": "web", "namespace": "shop", "uid": "d1",
                                 "resourceVersion": "6", "generation": 1,
                                 "managedFields": [{"manager": "metahook", "operation": "Apply"}]},
                    "spec": {"replicas": 1},
                    "status": {"replicas": 1, "readyReplicas": 1}
                }]
            }),
        )
        .await;
        assert_eq!(list.method, "GET");
        assert_eq!(list.path, "/apis/apps/v1/deployments");
        assert!(!list.query.contains("watch=true"), "{}", list.query);
        cache.wait_synced().await;
        let web = cache.get(Some("shop"), "web").expect("cached");
        // What a hook is sent for it.
        let sent = wire::object_json(&web);
        assert_eq!(sent["apiVersion"], "apps/v1");
        assert_eq!(sent["kind"], "Deployment");
        assert_eq!(sent["status"]["readyReplicas"], 1);
        assert!(sent["metadata"].get("managedFields").is_none(), "{sent}");
        stop.cancel();
    }
}
