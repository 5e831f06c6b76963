//! One controller at run time: its caches, what queues a parent
//! (docs/metacontroller.md §3.2), and the loop that reconciles them — kube's
//! `applier` (the runtime under `kube::runtime::Controller`): it coalesces
//! triggers, never runs one parent twice at once, lets the earliest requeue
//! win, and bounds concurrency. Triggers come from the driver's own caches
//! (`cache.rs`: shared between controllers, relisting with readiness), not
//! from watches of the applier's own. What happens around one reconcile
//! (logs, metrics, the Warning Event, Metacontroller's requeue rules) is
//! `process` and `error_policy` here; the reconcile itself is `reconcile.rs`.

use crate::backoff::Backoff;
use crate::cache::{Caches, Change, TypeCache};
use crate::execute::Executor;
use crate::hook_call::{HookCaller, HookTarget};
use crate::memory::ApplyMemory;
use crate::metrics::DriverMetrics;
use crate::model::{ApiType, Driven, object_key, split_key};
use crate::plan::{self, EventType};
use crate::reconcile::{ReconcileError, Trace};
use crate::records::{ChildCount, Outcome, Record, Records, Requeue};
use crate::selector::{self, SelectorExt};
use futures::StreamExt;
use futures::future::BoxFuture;
use kube::api::DynamicObject;
use kube::runtime::controller::{Action, Error as ApplierError, ReconcileRequest, applier};
use kube::runtime::reflector::ObjectRef;
use metahook_hooks::protocol::RelatedResourceRule;
use std::collections::HashMap;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
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
    pub(crate) triggers: Triggers,
    pub backoff: Backoff,
    pub records: Records,
    pub(crate) metrics: Arc<DriverMetrics>,
}

/// Parent keys to reconcile, on their way to the applier. `waiting` holds
/// the keys sent and not yet started: a second trigger for one of them
/// adds nothing (the applier would coalesce it anyway), and its size is the
/// queue-depth metric, which the applier does not expose.
pub(crate) struct Triggers {
    tx: mpsc::UnboundedSender<String>,
    rx: Mutex<Option<mpsc::UnboundedReceiver<String>>>,
    waiting: Mutex<HashSet<String>>,
}

impl Triggers {
    fn new() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Triggers {
            tx,
            rx: Mutex::new(Some(rx)),
            waiting: Mutex::new(HashSet::new()),
        }
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends `key` unless it is already waiting.
    fn add(&self, key: &str) {
        let mut waiting = self.waiting();
        if !waiting.contains(key) && self.tx.send(key.to_owned()).is_ok() {
            waiting.insert(key.to_owned());
        }
    }

    /// `key` was taken (its reconcile starts) or dropped (its parent is gone).
    fn taken(&self, key: &str) {
        self.waiting().remove(key);
    }

    pub(crate) fn len(&self) -> usize {
        self.waiting().len()
    }
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
            triggers: Triggers::new(),
            backoff: Backoff::default(),
            records: Records::default(),
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
                    rt.backoff.forget(&object_key(gone));
                    rt.records.forget(&object_key(gone));
                }
                if rt.is_ours(obj) {
                    rt.add(&object_key(obj));
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
                    self.add(&object_key(&parent));
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
                        self.add(&object_key(&parent));
                    }
                }
            }
            None => {}
        }
    }

    /// Queues a parent now.
    pub(crate) fn add(&self, key: &str) {
        self.triggers.add(key);
        self.metrics.queue_depth(self.name(), self.triggers.len());
    }

    /// Queues every cached parent (start, periodic resync).
    pub fn enqueue_all(&self) {
        for parent in self.parents.list(None) {
            if self.is_ours(&parent) {
                self.add(&object_key(&parent));
            }
        }
    }

    /// Waits until the parent and child caches have listed once.
    pub async fn wait_synced(&self) {
        self.parents.wait_synced().await;
        for c in &self.children {
            c.wait_synced().await;
        }
    }

    /// Reconciles queued parents, `workers` at once, until `stop`; then
    /// lets the reconciles in progress finish. Runs once per runtime.
    pub async fn run(self: Arc<Self>, workers: usize, stop: CancellationToken) {
        let Some(rx) = self
            .triggers
            .rx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        else {
            return;
        };
        let parent_api = self.driven.parent.api.clone();
        let requests = tokio_stream_of(rx)
            .map(move |key| {
                let (namespace, name) = split_key(&key);
                let mut obj_ref = ObjectRef::new_with(name, parent_api.clone());
                if let Some(ns) = namespace {
                    obj_ref = obj_ref.within(ns);
                }
                Ok::<_, std::convert::Infallible>(ReconcileRequest::from(obj_ref))
            })
            .take_until(stop.cancelled_owned());
        let config = kube::runtime::Config::default()
            .concurrency(u16::try_from(workers.max(1)).unwrap_or(u16::MAX));
        let results = applier(
            |parent: Arc<DynamicObject>,
             rt: Arc<Self>|
             -> BoxFuture<'static, Result<Action, ReconcileError>> {
                let key = object_key(&parent);
                Box::pin(async move { rt.process_isolated(&key).await })
            },
            |parent, err, rt| rt.error_policy(&object_key(&parent), err),
            Arc::clone(&self),
            self.parents.store.clone(),
            requests,
            config,
        );
        results
            .for_each(|result| {
                // A parent deleted after it was queued: nothing to do.
                if let Err(ApplierError::ObjectNotFound(gone)) = &result {
                    let key = match &gone.namespace {
                        Some(ns) => format!("{ns}/{}", gone.name),
                        None => gone.name.clone(),
                    };
                    self.triggers.taken(&key);
                    self.metrics.queue_depth(self.name(), self.triggers.len());
                }
                std::future::ready(())
            })
            .await;
    }

    /// `process`, with a panic counted as a failed reconcile: a bug in one
    /// reconcile must not stop the controller.
    async fn process_isolated(self: &Arc<Self>, key: &str) -> Result<Action, ReconcileError> {
        let span = tracing::info_span!("reconcile", controller = %self.name(), parent = %key);
        let run = std::panic::AssertUnwindSafe(self.process(key).instrument(span));
        match futures::FutureExt::catch_unwind(run).await {
            Ok(result) => result,
            Err(_) => {
                tracing::error!(controller = %self.name(), parent = %key, "reconcile panicked");
                self.metrics
                    .reconciled(self.name(), "error", Duration::ZERO);
                Err(ReconcileError::Panicked)
            }
        }
    }

    /// One reconcile of `key` and what Metacontroller does around it: the
    /// outcome logged and counted, a Warning Event for a failure worth one,
    /// the backoff reset on success. `Ok` says when to come back on success
    /// (`resyncAfterSeconds`); a failure goes to [`Self::error_policy`].
    pub async fn process(self: &Arc<Self>, key: &str) -> Result<Action, ReconcileError> {
        self.triggers.taken(key);
        self.metrics.queue_depth(self.name(), self.triggers.len());
        let start = Instant::now();
        let mut trace = Trace::default();
        let result = self.reconcile_traced(key, &mut trace).await;
        let took = start.elapsed();
        let outcome = match &result {
            Ok(_) => {
                self.backoff.forget(key);
                self.metrics
                    .longest_backoff(self.name(), self.backoff.longest());
                tracing::debug!(?took, "reconciled");
                "ok"
            }
            Err(err) => {
                if let Some(after) = err.retry_after() {
                    tracing::info!(?after, "hook asked to retry later");
                    "retry_after"
                } else if matches!(err, ReconcileError::NotSynced(_)) {
                    tracing::debug!(error = %err, "waiting for a cache");
                    "waiting"
                } else if err.is_stale_cache() {
                    tracing::info!(error = %crate::error_chain(err), "cache out of date; retrying");
                    "stale"
                } else if err.is_namespace_terminating() {
                    tracing::debug!(error = %crate::error_chain(err), "the namespace is being deleted; retrying");
                    "namespace_terminating"
                } else {
                    let chain = crate::error_chain(err);
                    tracing::warn!(error = %chain, failures = self.backoff.failures(key), "reconcile failed");
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
        self.record(key, trace, &result, took);
        result.map(|resync_after| resync_after.map_or_else(Action::await_change, Action::requeue))
    }

    /// Keeps what this reconcile did as the parent's record.
    fn record(
        &self,
        key: &str,
        trace: Trace,
        result: &Result<Option<Duration>, ReconcileError>,
        took: Duration,
    ) {
        let Some(parent) = trace.parent else {
            return;
        };
        let outcome = match result {
            Ok(_) if trace.steps.is_empty() => Outcome::Unchanged,
            Ok(_) => Outcome::Succeeded,
            Err(err) if err.retry_after().is_some() => Outcome::RetryLater,
            Err(ReconcileError::NotSynced(_)) => Outcome::WaitingForCache,
            Err(err) if err.is_stale_cache() => Outcome::StaleCache,
            Err(err) if err.is_namespace_terminating() => Outcome::NamespaceTerminating,
            Err(_) => Outcome::Failed,
        };
        self.records.put(
            key,
            Record {
                controller: self.name().to_owned(),
                parent,
                last_run: jiff::Timestamp::now().to_string(),
                outcome,
                duration_seconds: took.as_secs_f64(),
                hook_seconds: trace.hook.map(|d| d.as_secs_f64()),
                plan: trace.steps,
                error: result.as_ref().err().map(|e| crate::error_chain(e)),
                requeue: match result {
                    Ok(Some(after)) => Some(Requeue::new(*after, "resyncAfterSeconds")),
                    _ => None,
                },
                children: ChildCount {
                    desired: trace.desired,
                    observed: trace.observed,
                },
                conditions: trace.conditions,
            },
        );
        // A parent deleted while this reconcile ran has had its record
        // forgotten already: checked after the put, so none outlives it.
        let (namespace, name) = split_key(key);
        if self.parents.get(namespace, name).is_none() {
            self.records.forget(key);
        }
    }

    /// When a failed reconcile of `key` runs again
    /// (docs/metacontroller.md §3.10): after the hook's `Retry-After` for a
    /// 429, with no backoff step; otherwise after the key's next backoff
    /// step.
    pub fn error_policy(&self, key: &str, err: &ReconcileError) -> Action {
        let (after, reason) = match err.retry_after() {
            Some(after) => (after, "retryAfter"),
            None => (self.backoff.next(key), "backoff"),
        };
        self.records
            .update(key, |r| r.requeue = Some(Requeue::new(after, reason)));
        self.metrics
            .longest_backoff(self.name(), self.backoff.longest());
        Action::requeue(after)
    }

    /// `process` and, after a failure, `error_policy`: what the applier
    /// does with one key.
    #[cfg(test)]
    pub async fn process_and_requeue(self: &Arc<Self>, key: &str) -> Action {
        match self.process(key).await {
            Ok(action) => action,
            Err(err) => self.error_policy(key, &err),
        }
    }
}

/// A tokio receiver as a stream.
fn tokio_stream_of<T: Send + 'static>(
    mut rx: mpsc::UnboundedReceiver<T>,
) -> impl futures::Stream<Item = T> + Send {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}
