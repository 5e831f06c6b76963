//! One controller at run time: its caches, its queue, its workers, and one
//! reconcile of one parent (docs/metacontroller.md §3.3): plan, execute,
//! call the hook, plan, execute, requeue.

use super::cache::{Caches, Change, TypeCache};
use super::config::HookVersion;
use super::execute::{ExecuteError, ExecuteErrors, Executor};
use super::hook_call::{HookCallError, HookCaller, HookTarget};
use super::memory::ApplyMemory;
use super::metrics::DriverMetrics;
use super::model::{ApiType, Driven, object_key, split_key};
use super::plan::{self, EventType, Next, PlanError};
use super::queue::Queue;
use super::related::{self, RelatedError, Scope};
use super::selector::Selector;
use super::wire::{self, DecodeResponseError, TypedObjects};
use kube::api::DynamicObject;
use metahook_hooks::HookKind;
use metahook_hooks::protocol::RelatedResourceRule;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use tracing::Instrument;

/// How long a customize answer is reused for one (UID, generation), as
/// Metacontroller does.
const CUSTOMIZE_TTL: Duration = Duration::from_secs(20 * 60);

/// Metacontroller replays every cached parent this often (its
/// `--cache-flush-interval` default) unless `resyncPeriodSeconds` is shorter.
pub const DEFAULT_RESYNC: Duration = Duration::from_secs(30 * 60);

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("planning failed")]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Execute(#[from] ExecuteError),
    #[error("managing children failed")]
    Children(#[source] ExecuteErrors),
    #[error("calling the hook failed")]
    Hook(#[from] HookCallError),
    #[error("the {hook} hook's response could not be decoded")]
    Decode {
        hook: HookKind,
        #[source]
        source: DecodeResponseError,
    },
    #[error("encoding the hook request failed")]
    Encode(#[from] serde_json::Error),
    #[error("selecting related objects failed")]
    Related(#[from] RelatedError),
    #[error("related resource {api_version} {resource} is not known to the API server")]
    UnknownRelated {
        api_version: String,
        resource: String,
    },
    #[error("the cache of {0} has not synced yet")]
    NotSynced(String),
}

impl ReconcileError {
    /// Failed only because a cached object was out of date.
    fn is_stale_cache(&self) -> bool {
        match self {
            ReconcileError::Execute(e) => e.is_stale_cache(),
            ReconcileError::Children(ExecuteErrors(errors)) => {
                !errors.is_empty() && errors.iter().all(ExecuteError::is_stale_cache)
            }
            _ => false,
        }
    }

    /// Failed only because the parent's namespace is being deleted.
    fn is_namespace_terminating(&self) -> bool {
        match self {
            ReconcileError::Execute(e) => e.is_namespace_terminating(),
            ReconcileError::Children(ExecuteErrors(errors)) => {
                !errors.is_empty() && errors.iter().all(ExecuteError::is_namespace_terminating)
            }
            _ => false,
        }
    }

    /// 429 from a hook: retry after this long, with no event and no backoff.
    fn retry_after(&self) -> Option<Duration> {
        match self {
            ReconcileError::Hook(HookCallError::TooManyRequests { retry_after, .. }) => {
                Some(*retry_after)
            }
            _ => None,
        }
    }
}

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
type CustomizeCache =
    Mutex<HashMap<(String, i64), (Instant, String, Arc<Vec<RelatedResourceRule>>)>>;

pub struct ControllerRuntime {
    pub driven: Arc<Driven>,
    hooks: HookTargets,
    parents: Arc<TypeCache>,
    children: Vec<Arc<TypeCache>>,
    caches: Arc<Caches>,
    discover: Discover,
    related_types: Mutex<HashMap<(String, String), ApiType>>,
    customized: CustomizeCache,
    executor: Executor,
    caller: HookCaller,
    pub queue: Arc<Queue>,
    metrics: Arc<DriverMetrics>,
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
            Some(s) => Selector::from_label_selector(s)
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

    /// docs/metacontroller.md §3.3 for one key. `Ok` carries the requested resync.
    pub async fn reconcile(
        self: &Arc<Self>,
        key: &str,
    ) -> Result<Option<Duration>, ReconcileError> {
        let (namespace, name) = split_key(key);
        let Some(cached) = self.parents.get(namespace, name) else {
            return Ok(None);
        };
        let ctl = &self.driven;
        let candidates: Vec<Vec<Arc<DynamicObject>>> = self
            .children
            .iter()
            .map(|c| {
                let ns = if ctl.parent.namespaced {
                    namespace
                } else {
                    None
                };
                c.list(ns)
            })
            .collect();
        // Listed once: the hook sees these (claimed), and the planner checks
        // desired names against them (taken by someone else).
        let prelude = plan::prelude(ctl, &cached, &candidates)?;
        let outcome = self
            .executor
            .execute(ctl, (*cached).clone(), prelude.ops)
            .await?;
        if !outcome.errors.is_empty() {
            return Err(ReconcileError::Children(ExecuteErrors(outcome.errors)));
        }
        let parent = outcome.parent;
        let Next::CallHook { hook, observed } = prelude.next else {
            return Ok(None);
        };
        let related = self.related(&parent).await?;
        let target = match hook {
            HookKind::Finalize => self.hooks.finalize.as_ref().unwrap_or(&self.hooks.sync),
            _ => &self.hooks.sync,
        };
        let parent_ns = if ctl.parent.namespaced {
            parent.metadata.namespace.as_deref()
        } else {
            None
        };
        let children_types: Vec<TypedObjects<'_>> = ctl
            .children
            .iter()
            .zip(&observed)
            .map(|(t, objects)| TypedObjects {
                resource: &t.resource,
                objects,
            })
            .collect();
        let children_map = wire::object_map(&children_types, target.version, parent_ns);
        let related_types: Vec<TypedObjects<'_>> = related
            .iter()
            .map(|(resource, objects)| TypedObjects { resource, objects })
            .collect();
        let related_map = wire::object_map(&related_types, target.version, parent_ns);
        let request = wire::sync_request(
            &ctl.config.object,
            &parent,
            children_map,
            related_map,
            hook == HookKind::Finalize,
        )?;
        let body = self.caller.call(self.name(), target, request).await?;
        let response = wire::decode_sync_response(&body, target.strict())
            .map_err(|source| ReconcileError::Decode { hook, source })?;
        let plan = plan::after_hook(
            ctl,
            &parent,
            &observed,
            &candidates,
            response,
            self.executor.memory().as_ref(),
        )?;
        let outcome = self.executor.execute(ctl, parent, plan.ops).await?;
        if let Some(failure) = plan.failure {
            return Err(ReconcileError::Plan(failure));
        }
        if !outcome.errors.is_empty() {
            return Err(ReconcileError::Children(ExecuteErrors(outcome.errors)));
        }
        Ok(plan.resync_after)
    }

    /// Related objects per rule type, from the customize hook's rules
    /// (cached per parent UID and generation).
    async fn related(
        self: &Arc<Self>,
        parent: &DynamicObject,
    ) -> Result<Vec<(ApiType, Vec<Arc<DynamicObject>>)>, ReconcileError> {
        let Some(target) = &self.hooks.customize else {
            return Ok(Vec::new());
        };
        let rules = self.customize_rules(target, parent).await?;
        let parent_ns = if self.driven.parent.namespaced {
            parent.metadata.namespace.as_deref()
        } else {
            None
        };
        let mut out = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            let resource = self.related_type(rule).await?;
            let cache = self.caches.get_or_start(&resource);
            if !cache.is_synced() {
                return Err(ReconcileError::NotSynced(resource.api.kind.clone()));
            }
            let namespaces = if rule.namespace_selector.is_some() {
                let ns_cache = self.caches.get_or_start(&namespace_resource());
                if !ns_cache.is_synced() {
                    return Err(ReconcileError::NotSynced("Namespace".to_owned()));
                }
                ns_cache.list(None)
            } else {
                Vec::new()
            };
            let scope = Scope {
                version: target.version,
                parent_namespace: parent_ns,
                resource_namespaced: resource.namespaced,
            };
            let selected = related::select(index, rule, &scope, &cache.list(None), &namespaces)?;
            out.push((resource, selected));
        }
        Ok(out)
    }

    async fn customize_rules(
        &self,
        target: &HookTarget,
        parent: &DynamicObject,
    ) -> Result<Arc<Vec<RelatedResourceRule>>, ReconcileError> {
        let key = (
            parent.metadata.uid.clone().unwrap_or_default(),
            parent.metadata.generation.unwrap_or(0),
        );
        {
            let mut cache = self.customized.lock().unwrap_or_else(|p| p.into_inner());
            cache.retain(|_, (at, _, _)| at.elapsed() < CUSTOMIZE_TTL);
            if let Some((_, _, rules)) = cache.get(&key) {
                return Ok(Arc::clone(rules));
            }
        }
        let request = wire::customize_request(&self.driven.config.object, parent)?;
        let body = self.caller.call(self.name(), target, request).await?;
        let rules = Arc::new(
            wire::decode_customize_response(&body, target.strict()).map_err(|source| {
                ReconcileError::Decode {
                    hook: HookKind::Customize,
                    source,
                }
            })?,
        );
        let mut cache = self.customized.lock().unwrap_or_else(|p| p.into_inner());
        // Only the latest generation is ever asked for again: one entry
        // per parent, whatever the number of spec changes.
        cache.retain(|(uid, _), _| *uid != key.0);
        cache.insert(
            key,
            (Instant::now(), object_key(parent), Arc::clone(&rules)),
        );
        Ok(rules)
    }

    /// Drops a deleted parent's customize answers: the cache holds at most
    /// one entry per live parent.
    fn forget_customized(&self, uid: &str) {
        self.customized
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(cached, _), _| cached != uid);
    }

    /// How many customize answers are cached (for tests of its bound).
    #[cfg(test)]
    pub fn customized_len(&self) -> usize {
        self.customized
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    async fn related_type(
        self: &Arc<Self>,
        rule: &RelatedResourceRule,
    ) -> Result<ApiType, ReconcileError> {
        let key = (rule.api_version.clone(), rule.resource.clone());
        if let Some(r) = self
            .related_types
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(r.clone());
        }
        let resource = (self.discover)(&rule.api_version, &rule.resource)
            .await
            .ok_or_else(|| ReconcileError::UnknownRelated {
                api_version: rule.api_version.clone(),
                resource: rule.resource.clone(),
            })?;
        self.related_types
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, resource.clone());
        // A related object's change re-syncs the parents whose cached rules
        // select it (docs/metacontroller.md §1.6). Rules are not fetched from
        // here on a cache miss: such a parent is synced by its own events.
        let weak = Arc::downgrade(self);
        let watched = resource.clone();
        self.caches
            .get_or_start(&resource)
            .subscribe(Arc::new(move |change| {
                if let Some(rt) = weak.upgrade() {
                    rt.related_changed(&watched, change);
                }
            }));
        Ok(resource)
    }

    fn related_changed(&self, resource: &ApiType, change: &Change) {
        let obj = match change {
            Change::Applied(o) | Change::Deleted(o) => Arc::clone(o),
        };
        let entries: Vec<(String, Arc<Vec<RelatedResourceRule>>)> = self
            .customized
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .map(|(_, key, rules)| (key.clone(), Arc::clone(rules)))
            .collect();
        let version = self
            .hooks
            .customize
            .as_ref()
            .map_or(HookVersion::V1, |h| h.version);
        // Namespaces are read (and their cache started) only for rules that
        // select by namespace labels: watching every Namespace needs a
        // permission nothing else does (the chart's ClusterRole has none).
        let namespaces = if entries
            .iter()
            .any(|(_, rules)| rules.iter().any(|r| r.namespace_selector.is_some()))
        {
            self.caches.get_or_start(&namespace_resource()).list(None)
        } else {
            Vec::new()
        };
        for (key, rules) in entries {
            let (parent_ns, _) = split_key(&key);
            let scope = Scope {
                version,
                parent_namespace: if self.driven.parent.namespaced {
                    parent_ns
                } else {
                    None
                },
                resource_namespaced: resource.namespaced,
            };
            let selects = rules.iter().enumerate().any(|(i, rule)| {
                rule.api_version == resource.api.api_version
                    && rule.resource == resource.api.plural
                    && related::select(i, rule, &scope, std::slice::from_ref(&obj), &namespaces)
                        .is_ok_and(|s| !s.is_empty())
            });
            if selects {
                self.queue.add(&key);
            }
        }
    }
}

fn namespace_resource() -> ApiType {
    ApiType::new("", "v1", "Namespace", "namespaces", false)
}
