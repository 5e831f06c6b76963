//! What one controller's reconciles share: its configuration, the caches
//! it reads, how it acts (the executor, the hook caller), and its
//! bookkeeping (queue, backoff, records, metrics). Built once per
//! CompositeController at start; `reconcile` and `error_policy` take it as
//! controller-rs's take theirs.

use crate::client::pressure::Pressure;
use crate::controller::backoff::Backoff;
use crate::controller::cache::{Caches, TypeCache};
use crate::controller::customized::{Customized, Discover};
use crate::controller::ignored_status::StatusChangeFilter;
use crate::controller::queue::{ParentKey, Queue};
use crate::controller::standby::Standby;
use crate::decide::model::Driven;
use crate::decide::order::Urgency;
use crate::hook::call::{HookCaller, HookTarget};
use crate::observe::metrics::DriverMetrics;
use crate::observe::records::Records;
use crate::write::events::EventPublisher;
use crate::write::execute::Executor;
use crate::write::memory::ApplyMemory;
use metahook_core::HookKind;
use std::sync::Arc;
use std::time::Duration;

/// The hooks of a controller, resolved to where they are answered.
#[derive(Debug, Clone)]
pub struct HookTargets {
    pub sync: HookTarget,
    pub finalize: Option<HookTarget>,
    pub customize: Option<HookTarget>,
}

impl HookTargets {
    /// The hook `kind` names, if the controller has one.
    pub fn get(&self, kind: HookKind) -> Option<&HookTarget> {
        match kind {
            HookKind::Sync => Some(&self.sync),
            HookKind::Finalize => self.finalize.as_ref(),
            HookKind::Customize => self.customize.as_ref(),
            // The API server's to call, not the driver's.
            HookKind::Validate | HookKind::Default | HookKind::Convert => None,
        }
    }

    /// The hook a `sync` or `finalize` pass calls ([`crate::config::for_pass`]).
    pub fn for_pass(&self, kind: HookKind) -> &HookTarget {
        crate::config::for_pass(kind, &self.sync, self.finalize.as_ref())
    }
}

/// What every controller's context is built from: one of each per driver.
#[derive(Clone)]
pub struct Shared {
    pub client: kube::Client,
    /// Every watched type's cache, shared between controllers.
    pub caches: Arc<Caches>,
    pub discover: Discover,
    /// Where Events go (`None`: nowhere, in tests that script no Events).
    pub events: Option<Arc<EventPublisher>>,
    pub caller: HookCaller,
    pub metrics: Arc<DriverMetrics>,
    /// Whether the API budget is holding back converging writes.
    pub pressure: Pressure,
    /// `--status-settle-ms`.
    pub status_settle: Duration,
}

/// One controller's reconcile context.
pub struct Context {
    pub driven: Driven,
    pub hooks: HookTargets,
    /// The parent type's cache, the applier's store.
    pub parents: Arc<TypeCache>,
    /// One cache per child type, in `driven.children`'s order.
    pub children: Vec<Arc<TypeCache>>,
    /// The ControllerRevisions, when a child type rolls (`decide/plan/rolling/`).
    pub revisions: Option<Arc<TypeCache>>,
    /// Where related types' caches are started.
    pub caches: Arc<Caches>,
    pub customized: Customized,
    pub executor: Executor,
    pub caller: HookCaller,
    pub queue: Queue,
    pub backoff: Backoff,
    pub records: Records,
    pub metrics: Arc<DriverMetrics>,
    pub pressure: Pressure,
    pub status_settle: Duration,
    /// `ignoreStatusChanges`' memory of the parents.
    pub status_changes: StatusChangeFilter,
    /// Whether it stands by (another replica leads) and what changed
    /// meanwhile; a context leads from the start unless told to.
    pub standby: Standby,
}

impl Context {
    /// Starts (or joins) the caches of the controller's types.
    pub fn new(driven: Driven, hooks: HookTargets, shared: Shared) -> Arc<Self> {
        let parents = shared.caches.get_or_start_shard(&driven.parent);
        let children = driven
            .children
            .iter()
            .map(|c| shared.caches.get_or_start_shard(&c.resource))
            .collect();
        // Not sharded: a revision carries no shard label.
        let revisions = driven.rolls().then(|| {
            shared
                .caches
                .get_or_start(&crate::decide::revisions::revision_type())
        });
        let executor = Executor::new(
            shared.client,
            shared.events,
            Arc::new(ApplyMemory::new()),
            shared.metrics.clone(),
        );
        Arc::new(Context {
            driven,
            hooks,
            parents,
            children,
            revisions,
            caches: shared.caches,
            customized: Customized::new(shared.discover),
            executor,
            caller: shared.caller,
            queue: Queue::default(),
            backoff: Backoff::default(),
            records: Records::default(),
            metrics: shared.metrics,
            pressure: shared.pressure,
            status_settle: shared.status_settle,
            status_changes: StatusChangeFilter::default(),
            standby: Standby::default(),
        })
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        self.driven.name()
    }

    /// Queues a parent a watch saw change (it, a child, a related object).
    pub fn enqueue(&self, key: ParentKey) {
        self.enqueue_as(key, Urgency::Changed);
    }

    /// Queues a parent with `urgency`; standing by, keeps it for the
    /// takeover instead.
    pub fn enqueue_as(&self, key: ParentKey, urgency: Urgency) {
        if self
            .standby
            .hold(&key, urgency, tokio::time::Instant::now())
        {
            return;
        }
        self.queue.add(key, urgency);
        self.metrics.queue_depth(self.name(), self.queue.len());
    }

    /// The rollout's progress, counted again: the parents whose records
    /// name this controller's revision (`metahook_driver_parents_answered`),
    /// after a record is written or a parent's is forgotten.
    pub fn count_answered(&self) {
        if let Some(revision) = self.hooks.sync.revision.as_deref() {
            let answered = self.records.answered_by(revision);
            self.metrics
                .parents_answered(self.name(), revision, answered);
        }
    }

    /// A queued parent was taken or dropped.
    pub fn dequeued(&self, key: &ParentKey) {
        self.queue.taken(key);
        self.metrics.queue_depth(self.name(), self.queue.len());
    }
}
