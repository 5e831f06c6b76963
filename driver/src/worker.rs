//! One controller at run time: its caches, its queue, its workers, and one
//! reconcile of one parent (docs/metacontroller.md §3.3): plan, execute,
//! call the hook, plan, execute, requeue.

use crate::cache::{Caches, Change, TypeCache};
use crate::execute::Executor;
use crate::hook_call::{HookCaller, HookTarget};
use crate::memory::ApplyMemory;
use crate::metrics::DriverMetrics;
use crate::model::{ApiType, Driven, object_key, split_key};
use crate::plan::{self, EventType};
use crate::queue::Queue;
use crate::reconcile::ReconcileError;
use crate::selector::{self, SelectorExt};
use kube::api::DynamicObject;
use metahook_hooks::protocol::RelatedResourceRule;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use tracing::Instrument;

/// Metacontroller replays every cached parent this often (its
/// `--cache-flush-interval` default) unless `resyncPeriodSeconds` is shorter.
pub const DEFAULT_RESYNC: Duration = Duration::from_secs(30 * 60);

/// The hooks of a controller, resolved to where they are answered.
#[derive(Debug, Clone)]
pub struct HookTargets {
    pub sync: HookTarget,
    pub finalize: Option<HookTarget>,
    pub customize: Option<HookTarget>,
}

/// Resolves a related rule's `apiVersion` + `resource` to a type.
pub type Discover =
    Arc<dyn Fn(&str, &str) -> futures::future::BoxFuture<'static, Option<ApiType>> + Send + Sync>;

/// (parent UID, generation) → (when asked, parent key, rules).
pub(crate) type CustomizeCache =
    Mutex<HashMap<(String, i64), (Instant, String, Arc<Vec<RelatedResourceRule>>)>>;

pub struct ControllerRuntime {
    pub driven: Arc<Driven>,
    pub(crate) hooks: HookTargets,
    pub(crate) parents: Arc<TypeCache>,
    pub(crate) children: Vec<Arc<TypeCache>>,
    pub(crate) caches: Arc<Caches>,
    pub(crate) discover: Discover,
    pub(crate) related_types: Mutex<HashMap<(String, String), ApiType>>,
    pub(crate) customized: CustomizeCache,
    pub(crate) executor: Executor,
    pub(crate) caller: HookCaller,
    pub queue: Arc<Queue>,
    pub(crate) metrics: Arc<DriverMetrics>,
}

impl ControllerRuntime {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        driven: Driven,
        hooks: HookTargets,
        caches: Arc<Caches>,
        discover: Discover,
        client: kube::Client,
        events: Option<Arc<super::events::EventPublisher>>,
        caller: HookCaller,
        metrics: Arc<DriverMetrics>,
    ) -> Arc<Self> {
        let parents = caches.get_or_start(&driven.parent);
        let children = driven
            .children
            .iter()
            .map(|c| caches.get_or_start(&c.resource))
            .collect();
        let executor = Executor::new(
            client,
            events,
            Arc::new(ApplyMemory::new()),
            metrics.clone(),
        );
        let runtime = Arc::new(ControllerRuntime {
            driven: Arc::new(driven),
            hooks,
            parents,
            children,
            caches,
            discover,
            related_types: Mutex::new(HashMap::new()),
            customized: Mutex::new(HashMap::new()),
            executor,
            caller,
            queue: Queue::new(),
            metrics,
        });
        runtime.subscribe();
        runtime
    }

    pub fn name(&self) -> &str {
        self.driven.name()
    }

    /// Maps cache changes to parent keys (docs/metacontroller.md §3.2).
    fn subscribe(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        self.parents.subscribe(Arc::new(move |change| {
            if let Some(rt) = weak.upgrade() {
                let obj = match change {
                    Change::Applied(o) | Change::Deleted(o) => o,
                };
                if let Change::Deleted(gone) = change {
                    rt.forget_customized(gone.metadata.uid.as_deref().unwrap_or_default());
                }
                if rt.is_ours(obj) {
                    rt.queue.add(&object_key(obj));
                }
            }
        }));
        for (type_index, cache) in self.children.iter().enumerate() {
            let weak = Arc::downgrade(self);
            cache.subscribe(Arc::new(move |change| {
                if let Some(rt) = weak.upgrade() {
                    if let Change::Deleted(obj) = change {
                        // Whoever deleted it (we, the garbage collector,
                        // a user), the last apply no longer describes it.
                        rt.executor.memory().forget(
                            type_index,
                            obj.metadata.namespace.as_deref(),
                            obj.metadata.name.as_deref().unwrap_or_default(),
                        );
                    }
                    rt.child_changed(change);
                }
            }));
        }
    }

    /// Whether a parent is handled: it matches the label filter, or still
    /// carries this controller's finalizer.
    fn is_ours(&self, parent: &DynamicObject) -> bool {
        let finalizer = self.driven.finalizer();
        if parent
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| *f == finalizer)
        {
            return true;
        }
        match &self.driven.config.parent.label_selector {
            None => true,
            Some(s) => selector::parse(s)
                .is_ok_and(|s| s.matches(&parent.metadata.labels.clone().unwrap_or_default())),
        }
    }

    fn child_changed(&self, change: &Change) {
        let (obj, deleted) = match change {
            Change::Applied(o) => (o, o.metadata.deletion_timestamp.is_some()),
            Change::Deleted(o) => (o, true),
        };
        let parent_api = &self.driven.parent.api;
        let owner = obj
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true));
        match owner {
            Some(owner) => {
                let group = owner.api_version.split_once('/').map_or("", |(g, _)| g);
                if group != parent_api.group || owner.kind != parent_api.kind {
                    return;
                }
                let namespace = if self.driven.parent.namespaced {
                    obj.metadata.namespace.as_deref()
                } else {
                    None
                };
                if let Some(parent) = self.parents.get(namespace, &owner.name)
                    && parent.metadata.uid.as_deref() == Some(owner.uid.as_str())
                    && self.is_ours(&parent)
                {
                    self.queue.add(&object_key(&parent));
                }
            }
            // An orphan: every parent whose selector matches may adopt it.
            None if !deleted => {
                let namespace = if self.driven.parent.namespaced {
                    obj.metadata.namespace.as_deref()
                } else {
                    None
                };
                let labels = obj.metadata.labels.clone().unwrap_or_default();
                for parent in self.parents.list(namespace) {
                    if self.is_ours(&parent)
                        && plan::child_selector(&self.driven, &parent)
                            .is_ok_and(|s| s.matches(&labels))
                    {
                        self.queue.add(&object_key(&parent));
                    }
                }
            }
            None => {}
        }
    }

    /// Queues every cached parent (start, periodic resync).
    pub fn enqueue_all(&self) {
        for parent in self.parents.list(None) {
            if self.is_ours(&parent) {
                self.queue.add(&object_key(&parent));
            }
        }
        self.metrics.queue_depth(self.name(), self.queue.len());
    }

    /// Waits until the parent and child caches have listed once.
    pub async fn wait_synced(&self) {
        self.parents.wait_synced().await;
        for c in &self.children {
            c.wait_synced().await;
        }
    }

    /// One worker: takes keys until the queue shuts down.
    pub async fn work(self: Arc<Self>) {
        while let Some(key) = self.queue.get().await {
            self.metrics.queue_depth(self.name(), self.queue.len());
            let span = tracing::info_span!("reconcile", controller = %self.name(), parent = %key);
            // A bug that panics in one reconcile must not cost the
            // controller a worker: count it as a failure and go on.
            let run = std::panic::AssertUnwindSafe(self.process(&key).instrument(span));
            if futures::FutureExt::catch_unwind(run).await.is_err() {
                tracing::error!(controller = %self.name(), parent = %key, "reconcile panicked");
                self.metrics
                    .reconciled(self.name(), "error", Duration::ZERO);
                self.queue.add_rate_limited(&key);
            }
            self.queue.done(&key);
            self.metrics.queue_depth(self.name(), self.queue.len());
        }
    }

    /// Reconciles `key` and requeues it per the outcome
    /// (docs/metacontroller.md §3.10).
    pub async fn process(self: &Arc<Self>, key: &str) {
        let start = Instant::now();
        let result = self.reconcile(key).await;
        let took = start.elapsed();
        let outcome = match result {
            Ok(resync_after) => {
                self.queue.forget(key);
                if let Some(after) = resync_after {
                    self.queue.add_after(key, after);
                }
                tracing::debug!(?took, "reconciled");
                "ok"
            }
            Err(err) => {
                if let Some(after) = err.retry_after() {
                    tracing::info!(?after, "hook asked to retry later");
                    self.queue.add_after(key, after);
                    "retry_after"
                } else if matches!(err, ReconcileError::NotSynced(_)) {
                    tracing::debug!(error = %err, "waiting for a cache");
                    self.queue.add_rate_limited(key);
                    "waiting"
                } else if err.is_stale_cache() {
                    tracing::info!(error = %crate::error_chain(&err), "cache out of date; retrying");
                    self.queue.add_rate_limited(key);
                    "stale"
                } else if err.is_namespace_terminating() {
                    tracing::debug!(error = %crate::error_chain(&err), "the namespace is being deleted; retrying");
                    self.queue.add_rate_limited(key);
                    "namespace_terminating"
                } else {
                    let chain = crate::error_chain(&err);
                    tracing::warn!(error = %chain, failures = self.queue.failures(key), "reconcile failed");
                    self.queue.add_rate_limited(key);
                    let (namespace, name) = split_key(key);
                    if let Some(parent) = self.parents.get(namespace, name) {
                        self.executor
                            .publish(
                                &self.driven,
                                &parent,
                                EventType::Warning,
                                "SyncError".to_owned(),
                                format!("Sync error: {chain}"),
                            )
                            .await;
                    }
                    "error"
                }
            }
        };
        self.metrics.reconciled(self.name(), outcome, took);
        self.metrics
            .longest_backoff(self.name(), self.queue.longest_backoff());
    }
}
