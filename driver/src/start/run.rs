//! Starting and stopping the driver: connected (`client/connect.rs`) with the
//! controllers prepared (`prepare.rs`), it resolves their types through
//! discovery, takes the Lease, starts the caches and one worker per
//! controller, says when it is ready, and at shutdown lets the reconciles in
//! progress finish and gives the Lease up.

use crate::client::connect::{Clients, connect};
use crate::client::pressure::Pressure;
use crate::client::throttle::Budget;
use crate::controller::cache::{Caches, InitialListChoice};
use crate::controller::context::{Context, Shared};
use crate::controller::customized::Discover;
use crate::controller::worker::{self, DEFAULT_RESYNC, Pace};
use crate::observe::metrics::DriverMetrics;
use crate::observe::view::View;
use crate::start::discovery;
use crate::start::leader::fence::Fence;
use crate::start::leader::{self, LeaderSettings};
use crate::start::prepare::{HookMode, Prepared};
use crate::start::resolve::resolve_waiting;
use crate::write::events::EventPublisher;
use kube::Client;
use kube::core::{Expression, Selector};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub use crate::start::error::DriveError;

/// The defaults of the driver's settings: the command line's are these.
pub mod defaults {
    use std::num::NonZeroU32;

    /// Reconciles at once per controller (Metacontroller's `--workers`).
    pub const WORKERS: u16 = 5;
    /// `--reconcile-debounce-ms`: none, as Metacontroller.
    pub const RECONCILE_DEBOUNCE_MS: u64 = 0;
    /// `--status-settle-ms`: a second, about what a Deployment takes to
    /// report a new replica set's pods.
    pub const STATUS_SETTLE_MS: u64 = 1000;
    pub use crate::write::events::{EVENTS_BURST, EVENTS_QPS};
    pub use metahook_planner::config::LEASE_NAME;
    /// Metacontroller's `--client-go-burst`.
    pub const KUBE_BURST: NonZeroU32 = match NonZeroU32::new(10) {
        Some(burst) => burst,
        None => NonZeroU32::MIN,
    };
}

#[derive(Debug, Clone)]
pub struct DriveSettings {
    /// The CompositeController manifests: `*.yaml` in this directory, or
    /// the ones built in (`chart/metacontroller/*.yaml`).
    pub controllers: Option<PathBuf>,
    pub mode: HookMode,
    /// Workers per controller (Metacontroller's `--workers`) and the
    /// debounce of each parent's triggers.
    pub pace: Pace,
    /// `None`: a single replica, no Lease.
    pub leader: Option<LeaderSettings>,
    /// How long to let reconciles in progress finish at shutdown.
    pub shutdown_timeout: Duration,
    /// This replica's name in Events.
    pub instance: String,
    /// The client-side budget for API requests; `None`: no limit.
    pub budget: Option<Budget>,
    /// How many Events one object may get (`--events-qps`,
    /// `--events-burst`).
    pub events: Budget,
    /// `--shard-selector`: the parents this driver (and its Lease) is for;
    /// `None`: every parent.
    pub shard: Option<Selector>,
    /// `--status-settle-ms`: how long a status may wait after a pass that
    /// changed a child (`plan::StatusPace::Settle`).
    pub status_settle: Duration,
    /// Where what the driver runs is shown (`/debug/driver`).
    pub view: Arc<View>,
}

/// Connects and drives until `stop` (`Ok`) or something fatal; see [`run`].
pub async fn drive(
    prepared: Vec<Prepared>,
    settings: DriveSettings,
    metrics: Arc<DriverMetrics>,
    set_ready: SetReady,
    stop: CancellationToken,
) -> Result<(), DriveError> {
    let fence = match settings.leader {
        Some(_) => Fence::closed(),
        None => Fence::always(),
    };
    let clients = connect(settings.budget, metrics.clone(), fence)
        .await
        .map_err(|e| DriveError::Connect(Box::new(e)))?;
    run(prepared, settings, clients, metrics, set_ready, stop).await
}

/// Says whether the driver is ready: `Some(caches)` once every cache has
/// synced and this replica leads (or needs no lease), the caches then
/// telling whether they are still up to date; `None` when it stops leading.
pub type SetReady = Arc<dyn Fn(Option<Arc<Caches>>) + Send + Sync>;

/// Runs the driver until `stop` is cancelled (`Ok`) or something fatal
/// happens, telling `set_ready` when it is ready.
pub async fn run(
    prepared: Vec<Prepared>,
    settings: DriveSettings,
    clients: Clients,
    metrics: Arc<DriverMetrics>,
    set_ready: SetReady,
    stop: CancellationToken,
) -> Result<(), DriveError> {
    let Clients {
        client,
        lease,
        events,
        pressure,
        fence,
    } = clients;
    // The caches stop with the driver, not before: workers finishing a
    // reconcile at shutdown still read them.
    let cache_stop = CancellationToken::new();
    let result = match shared(&settings, client, events, pressure, &metrics, &cache_stop) {
        Ok(shared) => {
            let driving = Driving {
                settings: &settings,
                shared,
                set_ready: &set_ready,
                stop: &stop,
            };
            driving.run(prepared, lease, &fence, &metrics).await
        }
        Err(err) => Err(err),
    };
    set_ready(None);
    cache_stop.cancel();
    result
}

/// One run of the driver: what every step of it reads.
struct Driving<'a> {
    settings: &'a DriveSettings,
    shared: Shared,
    set_ready: &'a SetReady,
    stop: &'a CancellationToken,
}

/// Each controller's context, with its resync period.
type Contexts = Vec<(Arc<Context>, Duration)>;

impl Driving<'_> {
    /// A warm standby (`LeaderSettings::standby_window`) starts its
    /// controllers' caches before it leads, so that a takeover waits for
    /// the Lease alone; a cold one, and a driver without a Lease, start
    /// them once they lead.
    async fn run(
        &self,
        prepared: Vec<Prepared>,
        lease: Client,
        fence: &Fence,
        metrics: &DriverMetrics,
    ) -> Result<(), DriveError> {
        let warm = self
            .settings
            .leader
            .as_ref()
            .and_then(LeaderSettings::standby_window);
        let (mut prepared, mut contexts) = (Some(prepared), None);
        if let Some(window) = warm {
            let Some(standing_by) = self
                .controllers(prepared.take().unwrap_or_default(), &mut None, Some(window))
                .await?
            else {
                return Ok(());
            };
            tracing::info!(
                controllers = standing_by.len(),
                "standing by, caches started"
            );
            contexts = Some(standing_by);
        }
        let mut leadership = match &self.settings.leader {
            None => None,
            Some(leader_settings) => {
                match leader::acquire(lease, leader_settings, fence, self.stop).await? {
                    Some(l) => Some(l),
                    None => return Ok(()),
                }
            }
        };
        metrics.set_leader(true);
        let result = async {
            let contexts = match contexts {
                Some(contexts) => contexts,
                None => {
                    let prepared = prepared.take().unwrap_or_default();
                    match self.controllers(prepared, &mut leadership, None).await? {
                        Some(contexts) => contexts,
                        None => return Ok(()),
                    }
                }
            };
            self.lead(contexts, &mut leadership).await
        }
        .await;
        metrics.set_leader(false);
        // Whatever ended the driver, give the lease up so a standby takes
        // over at once rather than after it expires.
        if let Some(l) = leadership {
            l.release().await;
        }
        result
    }

    /// Resolves each controller's types (waiting for them to exist) and
    /// starts its caches and queue; standing by (`window`), the queue only
    /// keeps what changed. `None`: stopped first.
    async fn controllers(
        &self,
        prepared: Vec<Prepared>,
        leadership: &mut Option<leader::Leadership>,
        standby: Option<Duration>,
    ) -> Result<Option<Contexts>, DriveError> {
        let mut contexts = Vec::new();
        // A decorator of several resources: one controller per resource.
        let prepared = prepared.into_iter().flat_map(Prepared::per_resource);
        for p in prepared {
            let (mut driven, hooks) = tokio::select! {
                resolved = resolve_waiting(&self.shared.client, p) => resolved?,
                _ = self.stop.cancelled() => return Ok(None),
                _ = lost(leadership) => return Err(DriveError::LeaseLost),
            };
            driven.shard_labels = shard_labels(self.settings.shard.as_ref());
            tracing::info!(
                controller = %driven.name(),
                parent = %driven.parent.map_key(),
                children = ?driven.children.iter().map(|c| c.resource.map_key()).collect::<Vec<_>>(),
                "driving"
            );
            let resync = driven
                .config
                .resync_period
                .unwrap_or(DEFAULT_RESYNC)
                .min(DEFAULT_RESYNC);
            let ctx = Context::new(driven, hooks, self.shared.clone());
            if let Some(window) = standby {
                ctx.standby.begin(window);
            }
            worker::subscribe(&ctx);
            contexts.push((ctx, resync));
        }
        Ok(Some(contexts))
    }

    /// Everything the leader does: once the caches have synced, reconcile
    /// every parent (what a standby saw change first) until stopped or
    /// the Lease is lost.
    async fn lead(
        &self,
        contexts: Contexts,
        leadership: &mut Option<leader::Leadership>,
    ) -> Result<(), DriveError> {
        let (settings, shared, stop) = (self.settings, &self.shared, self.stop);
        // Wait for the caches (or a stop, or a lost lease).
        let synced = async {
            for (ctx, _) in &contexts {
                worker::wait_synced(ctx).await;
            }
        };
        tokio::select! {
            _ = synced => {}
            _ = stop.cancelled() => return Ok(()),
            _ = lost(leadership) => return Err(DriveError::LeaseLost),
        }
        let mut tasks = tokio::task::JoinSet::new();
        // Ends the resyncs and the applier's input, whatever ends the driver;
        // the applier then lets the reconciles in progress finish.
        let workers_stop = stop.child_token();
        for (ctx, resync) in &contexts {
            worker::start_leading(ctx);
            tasks.spawn(worker::run(
                Arc::clone(ctx),
                settings.pace,
                *resync,
                workers_stop.clone(),
            ));
        }
        (self.set_ready)(Some(shared.caches.clone()));
        settings.view.set(
            shared.caches.clone(),
            contexts.iter().map(|(ctx, _)| Arc::clone(ctx)).collect(),
        );
        tracing::info!(controllers = contexts.len(), "caches synced; driving");
        let result = tokio::select! {
            _ = stop.cancelled() => Ok(()),
            _ = lost(leadership) => Err(DriveError::LeaseLost),
        };
        (self.set_ready)(None);
        settings.view.clear();
        // Stop taking work; let reconciles in progress finish, within bounds.
        workers_stop.cancel();
        let drained = tokio::time::timeout(settings.shutdown_timeout, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!("reconciles still running at shutdown were abandoned");
            tasks.abort_all();
        }
        tracing::info!("driver stopped");
        result
    }
}

/// What every controller of this term shares: the client, the caches,
/// discovery, Events, the hook caller, the metrics.
fn shared(
    settings: &DriveSettings,
    client: Client,
    events_client: Client,
    pressure: Pressure,
    metrics: &Arc<DriverMetrics>,
    cache_stop: &CancellationToken,
) -> Result<Shared, DriveError> {
    let caller = settings
        .mode
        .caller(&client, metrics.clone())
        .map_err(DriveError::HttpClient)?;
    let events = Arc::new(EventPublisher::new(
        events_client,
        "metahook",
        &settings.instance,
        settings.events,
    ));
    let caches = Caches::sharded(
        client.clone(),
        cache_stop.clone(),
        metrics.clone(),
        settings.shard.clone(),
        InitialListChoice::ask_the_api_server(),
    );
    let discover_client = client.clone();
    let discover: Discover = Arc::new(move |api_version: &str, resource: &str| {
        let client = discover_client.clone();
        let (api_version, resource) = (api_version.to_owned(), resource.to_owned());
        Box::pin(async move {
            match discovery::resolve(&client, &api_version, &resource).await {
                Ok((r, _)) => Some(r),
                Err(err) => {
                    tracing::warn!(error = %crate::api_error_chain(&err), "related resource not found");
                    None
                }
            }
        })
    });
    Ok(Shared {
        client,
        caches,
        discover,
        events: Some(events),
        caller,
        metrics: metrics.clone(),
        pressure,
        status_settle: settings.status_settle,
    })
}

/// The label keys a shard selector names, once each.
fn shard_labels(shard: Option<&Selector>) -> Vec<String> {
    let mut keys: Vec<String> = shard
        .into_iter()
        .flat_map(|s| s.clone().into_iter())
        .map(|e| match e {
            Expression::In(k, _)
            | Expression::NotIn(k, _)
            | Expression::Equal(k, _)
            | Expression::NotEqual(k, _)
            | Expression::Exists(k)
            | Expression::DoesNotExist(k) => k,
        })
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// Resolves when a held lease is lost; never without a lease.
async fn lost(leadership: &mut Option<leader::Leadership>) {
    match leadership {
        Some(l) => l.lost().await,
        None => std::future::pending().await,
    }
}

/// `LeaderSettings` with client-go's timings, the Lease in `namespace`,
/// else the pod's, else `default`.
pub fn leader_settings(
    lease_name: String,
    namespace: Option<String>,
    identity: String,
) -> LeaderSettings {
    let namespace = namespace.unwrap_or_else(|| {
        std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "default".to_owned())
    });
    LeaderSettings::new(lease_name, namespace, identity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_selector_names_its_label_keys_once_each() {
        let selector = crate::decide::selector::text::labels(
            "metahook.dev/shard in (a,b),!metahook.dev/paused,metahook.dev/shard!=c,tier=web",
        )
        .unwrap();
        assert_eq!(
            shard_labels(Some(&selector)),
            ["metahook.dev/paused", "metahook.dev/shard", "tier"]
        );
        assert!(shard_labels(None).is_empty());
    }
}
