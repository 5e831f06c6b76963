//! Starting and stopping the driver, all of it: the manifests read and the
//! hooks resolved (before any cluster connection), the clients, discovery,
//! leader election, caches, workers, resync, shutdown.

use super::cache::Caches;
use super::config::{self, ConfigError, ControllerConfig, Hook};
use super::context::{Context, HookTargets, Shared};
use super::customized::Discover;
use super::discovery::{self, DiscoveryError};
use super::events::EventPublisher;
use super::hook_call::{Endpoint, HookCaller, HookTarget};
use super::leader::{self, LeaderError, LeaderSettings};
use super::metrics::DriverMetrics;
use super::model::{ChildType, Driven};
use super::responses::CountResponsesLayer;
use super::throttle::{Budget, ThrottleLayer};
use super::view::View;
use super::worker::{self, DEFAULT_RESYNC};
use kube::Client;
use metahook_hooks::HookKind;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The defaults of the driver's settings: the command line's are these.
pub mod defaults {
    use std::num::NonZeroU32;

    /// Reconciles at once per controller (Metacontroller's `--workers`).
    pub const WORKERS: u16 = 5;
    pub const LEASE_NAME: &str = "metahook-driver";
    /// Metacontroller's `--client-go-burst`.
    pub const KUBE_BURST: NonZeroU32 = match NonZeroU32::new(10) {
        Some(burst) => burst,
        None => NonZeroU32::MIN,
    };
}

/// How hooks are called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookMode {
    /// Through the registry, in this process (`serve --drive`).
    InProcess,
    /// Over HTTP at the CompositeController's webhook (`drive`).
    Http,
}

#[derive(Debug, Clone)]
pub struct DriveSettings {
    /// The CompositeController manifests: `*.yaml` in this directory, or
    /// the ones built in (`metacontroller/*.yaml`).
    pub controllers: Option<PathBuf>,
    pub mode: HookMode,
    /// Workers per controller (Metacontroller's `--workers`).
    pub workers: usize,
    /// `None`: a single replica, no Lease.
    pub leader: Option<LeaderSettings>,
    /// How long to let reconciles in progress finish at shutdown.
    pub shutdown_timeout: Duration,
    /// This replica's name in Events.
    pub instance: String,
    /// The client-side budget for API requests; `None`: no limit.
    pub budget: Option<Budget>,
    /// Where what the driver runs is shown (`/debug/driver`).
    pub view: Arc<View>,
}

#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    #[error("the controller manifests are invalid")]
    Config(#[from] ConfigError),
    #[error(
        "controller {controller}: the {hook} hook at {path} is not built into this binary (metahook serves /{{controller}}/{{hook}} for: {known}); use `metahook drive` to call it over HTTP"
    )]
    NotInProcess {
        controller: String,
        hook: HookKind,
        path: String,
        known: String,
    },
    #[error("no controller to drive: {0}")]
    NothingToDrive(String),
    #[error("connecting to the Kubernetes API server failed")]
    Connect(#[source] Box<kube::Error>),
    #[error("controller {controller}: resolving {what} failed")]
    Discovery {
        controller: String,
        what: &'static str,
        #[source]
        source: Box<DiscoveryError>,
    },
    #[error(transparent)]
    Leader(#[from] LeaderError),
    #[error("the lease was lost; stopping so that only one replica drives")]
    LeaseLost,
    #[error("the HTTP hook client could not be built")]
    HttpClient(#[source] std::io::Error),
}

/// A controller whose hooks are resolved: ready to connect.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub config: ControllerConfig,
    pub hooks: HookTargets,
}

/// Reads the manifests and resolves every hook, before any cluster
/// connection: a bad file fails before anything connects.
pub fn prepare(settings: &DriveSettings) -> Result<Vec<Prepared>, DriveError> {
    let configs = match &settings.controllers {
        Some(dir) => config::from_dir(dir)?,
        None => config::embedded()?,
    };
    resolve_hooks(configs, settings.mode, settings.controllers.is_none())
}

/// Connects and drives until `stop` (`Ok`) or something fatal; see [`run`].
pub async fn drive(
    prepared: Vec<Prepared>,
    settings: DriveSettings,
    metrics: Arc<DriverMetrics>,
    set_ready: SetReady,
    stop: CancellationToken,
) -> Result<(), DriveError> {
    let clients = connect(settings.budget, metrics.clone()).await?;
    run(prepared, settings, clients, metrics, set_ready, stop).await
}

/// Resolves every hook of every controller, before any cluster connection.
/// In-process, a hook is found by its webhook path (`/{controller}/{hook}`,
/// the route metahook's own service would answer). Controllers whose hooks
/// this binary lacks are skipped when `skip_missing` (the embedded
/// manifests), an error otherwise (`--controllers DIR`).
pub fn resolve_hooks(
    configs: Vec<ControllerConfig>,
    mode: HookMode,
    skip_missing: bool,
) -> Result<Vec<Prepared>, DriveError> {
    let mut prepared = Vec::new();
    for config in configs {
        let resolve = |kind: HookKind, hook: &Hook| -> Result<HookTarget, DriveError> {
            let endpoint = match mode {
                HookMode::Http => Endpoint::Http {
                    url: hook.webhook.url.clone(),
                    timeout: hook.webhook.timeout,
                    auth: Arc::new(hook.webhook.auth.clone()),
                },
                HookMode::InProcess => {
                    Endpoint::InProcess(in_process(kind, &hook.webhook.path).ok_or_else(|| {
                        DriveError::NotInProcess {
                            controller: config.name.clone(),
                            hook: kind,
                            path: hook.webhook.path.clone(),
                            known: known_hooks(),
                        }
                    })?)
                }
            };
            Ok(HookTarget {
                kind,
                version: hook.version,
                endpoint,
            })
        };
        let hooks = (|| {
            Ok::<_, DriveError>(HookTargets {
                sync: resolve(HookKind::Sync, &config.hooks.sync)?,
                finalize: config
                    .hooks
                    .finalize
                    .as_ref()
                    .map(|h| resolve(HookKind::Finalize, h))
                    .transpose()?,
                customize: config
                    .hooks
                    .customize
                    .as_ref()
                    .map(|h| resolve(HookKind::Customize, h))
                    .transpose()?,
            })
        })();
        match hooks {
            Ok(hooks) => prepared.push(Prepared { config, hooks }),
            Err(err @ DriveError::NotInProcess { .. }) if skip_missing => {
                tracing::warn!(controller = %config.name, reason = %err, "not driving this controller");
            }
            Err(err) => return Err(err),
        }
    }
    if prepared.is_empty() {
        return Err(DriveError::NothingToDrive(
            "every controller's hooks are missing from this binary".to_owned(),
        ));
    }
    Ok(prepared)
}

/// The registry hook a path `/{controller}/{hook}` names, if it is `kind`.
fn in_process(kind: HookKind, path: &str) -> Option<metahook_hooks::registry::Handler> {
    let mut parts = path.trim_start_matches('/').split('/');
    let (Some(controller), Some(hook), None) = (parts.next(), parts.next(), parts.next()) else {
        return None;
    };
    if HookKind::parse(hook) != Some(kind) {
        return None;
    }
    metahook_hooks::registry::controller(controller)?.hook(kind)
}

fn known_hooks() -> String {
    metahook_hooks::CONTROLLERS
        .iter()
        .flat_map(|c| {
            c.hooks
                .iter()
                .map(move |(k, _)| format!("/{}/{}", c.name, k))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

async fn resolve_controller(
    client: &Client,
    prepared: Prepared,
) -> Result<(Driven, HookTargets), DriveError> {
    let config = prepared.config;
    let err = |what: &'static str| {
        let controller = config.name.clone();
        move |source| DriveError::Discovery {
            controller,
            what,
            source: Box::new(source),
        }
    };
    let (parent, has_status) =
        discovery::resolve(client, &config.parent.api_version, &config.parent.resource)
            .await
            .map_err(err("spec.parentResource"))?;
    if !has_status {
        return Err(err("spec.parentResource")(DiscoveryError::NoStatus {
            api_version: config.parent.api_version.clone(),
            resource: config.parent.resource.clone(),
        }));
    }
    let mut children = Vec::new();
    for child in &config.children {
        let (resource, _) = discovery::resolve(client, &child.api_version, &child.resource)
            .await
            .map_err(err("spec.childResources"))?;
        children.push(ChildType {
            resource,
            strategy: child.update_strategy,
        });
    }
    Ok((
        Driven {
            config,
            parent,
            children,
        },
        prepared.hooks,
    ))
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
    let Clients { client, lease } = clients;
    let mut leadership = match &settings.leader {
        None => None,
        Some(leader_settings) => match leader::acquire(lease, leader_settings, &stop).await? {
            Some(l) => Some(l),
            None => return Ok(()),
        },
    };
    metrics.set_leader(true);
    // The caches stop with the driver, not before: workers finishing a
    // reconcile at shutdown still read them.
    let cache_stop = CancellationToken::new();
    let result = match shared(&settings, client, &metrics, &cache_stop) {
        Ok(shared) => {
            lead(
                prepared,
                &settings,
                shared,
                &set_ready,
                &stop,
                &mut leadership,
            )
            .await
        }
        Err(err) => Err(err),
    };
    set_ready(None);
    cache_stop.cancel();
    metrics.set_leader(false);
    // Whatever ended the driver, give the lease up so a standby takes over
    // at once rather than after it expires.
    if let Some(l) = leadership {
        l.release().await;
    }
    result
}

/// What every controller of this term shares: the client, the caches,
/// discovery, Events, the hook caller, the metrics.
fn shared(
    settings: &DriveSettings,
    client: Client,
    metrics: &Arc<DriverMetrics>,
    cache_stop: &CancellationToken,
) -> Result<Shared, DriveError> {
    let caller = match settings.mode {
        HookMode::InProcess => HookCaller::in_process(jiff::Timestamp::now, metrics.clone()),
        HookMode::Http => HookCaller::with_http(jiff::Timestamp::now, metrics.clone())
            .map_err(DriveError::HttpClient)?
            .reading_credentials_with(client.clone()),
    };
    let events = Arc::new(EventPublisher::new(
        client.clone(),
        "metahook",
        &settings.instance,
    ));
    let caches = Caches::new(client.clone(), cache_stop.clone(), metrics.clone());
    let discover_client = client.clone();
    let discover: Discover = Arc::new(move |api_version: &str, resource: &str| {
        let client = discover_client.clone();
        let (api_version, resource) = (api_version.to_owned(), resource.to_owned());
        Box::pin(async move {
            match discovery::resolve(&client, &api_version, &resource).await {
                Ok((r, _)) => Some(r),
                Err(err) => {
                    tracing::warn!(error = %crate::error_chain(&err), "related resource not found");
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
    })
}

/// Everything the leader does.
async fn lead(
    prepared: Vec<Prepared>,
    settings: &DriveSettings,
    shared: Shared,
    set_ready: &SetReady,
    stop: &CancellationToken,
    leadership: &mut Option<leader::Leadership>,
) -> Result<(), DriveError> {
    let mut contexts = Vec::new();
    for p in prepared {
        let (driven, hooks) = resolve_controller(&shared.client, p).await?;
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
        let ctx = Context::new(driven, hooks, shared.clone());
        worker::subscribe(&ctx);
        contexts.push((ctx, resync));
    }
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
        worker::enqueue_all(ctx);
        tasks.spawn(worker::run(
            Arc::clone(ctx),
            settings.workers,
            *resync,
            workers_stop.clone(),
        ));
    }
    set_ready(Some(shared.caches.clone()));
    settings.view.set(
        shared.caches.clone(),
        contexts.iter().map(|(ctx, _)| Arc::clone(ctx)).collect(),
    );
    tracing::info!(controllers = contexts.len(), "caches synced; driving");
    let result = tokio::select! {
        _ = stop.cancelled() => Ok(()),
        _ = lost(leadership) => Err(DriveError::LeaseLost),
    };
    set_ready(None);
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

/// Resolves when a held lease is lost; never without a lease.
async fn lost(leadership: &mut Option<leader::Leadership>) {
    match leadership {
        Some(l) => l.lost().await,
        None => std::future::pending().await,
    }
}

/// The driver's API clients.
#[derive(Clone)]
pub struct Clients {
    /// Every watch, read and write of the controllers, and Events: within
    /// the client-side budget, if there is one.
    pub client: Client,
    /// The Lease's, outside the budget: a renewal queued behind a burst of
    /// throttled requests would lose the lease, and a lost lease stops the
    /// driver.
    pub lease: Client,
}

/// The kubeconfig the usual way: in-cluster, `KUBECONFIG`, `~/.kube/config`.
/// Requests say `User-Agent: metahook/<version>`, so the API server's
/// audit log and metrics tell the driver's calls apart (kube sets none).
/// `budget`: `--kube-qps` / `--kube-burst`, none for no client-side limit;
/// every request is counted in `metrics` either way.
pub async fn connect(
    budget: Option<Budget>,
    metrics: Arc<DriverMetrics>,
) -> Result<Clients, DriveError> {
    let mut config = kube::Config::infer()
        .await
        .map_err(|e| DriveError::Connect(Box::new(kube::Error::InferConfig(e))))?;
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(USER_AGENT),
    ));
    // kube's own retry of 429, 503 and 504 (Retry-After honoured) moves
    // outside the layer that counts answers, so that a throttled attempt
    // shows even when its retry succeeds. Retries do not spend the
    // client-side budget again (client-go's do).
    config.default_retry = false;
    let build = |config: kube::Config, throttle: ThrottleLayer| {
        kube::client::ClientBuilder::try_from(config)
            .map(|builder| {
                builder
                    .with_layer(&CountResponsesLayer::new(metrics.clone()))
                    .with_layer(&tower::buffer::BufferLayer::new(1024))
                    .with_layer(&tower::retry::RetryLayer::new(
                        kube::client::retry::RetryPolicy::server_retry(),
                    ))
                    .with_layer(&throttle)
                    .build()
            })
            .map_err(|e| DriveError::Connect(Box::new(e)))
    };
    Ok(Clients {
        lease: build(config.clone(), ThrottleLayer::new(None, metrics.clone()))?,
        client: build(config, ThrottleLayer::new(budget, metrics.clone()))?,
    })
}

/// What the driver calls itself in every request.
pub const USER_AGENT: &str = concat!("metahook/", env!("CARGO_PKG_VERSION"));

/// `LeaderSettings` defaults: lease named `metahook-driver` in the pod's
/// namespace.
pub fn leader_settings(
    lease_name: String,
    namespace: Option<String>,
    identity: String,
) -> LeaderSettings {
    LeaderSettings {
        lease_name,
        namespace: namespace.unwrap_or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
                .map(|s| s.trim().to_owned())
                .unwrap_or_else(|_| "default".to_owned())
        }),
        identity,
        lease_seconds: 15,
        grace_seconds: 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_process_hooks_come_from_the_registry_by_path() {
        let prepared =
            resolve_hooks(config::embedded().unwrap(), HookMode::InProcess, true).unwrap();
        let names: Vec<_> = prepared.iter().map(|p| p.config.name.as_str()).collect();
        // Exactly the embedded controllers whose hooks this binary serves.
        let expected: Vec<_> = ["hello", "hikawa", "foo"]
            .into_iter()
            .filter(|n| metahook_hooks::registry::controller(n).is_some())
            .collect();
        assert_eq!(names, expected);
        let hello = prepared.iter().find(|p| p.config.name == "hello").unwrap();
        assert!(matches!(hello.hooks.sync.endpoint, Endpoint::InProcess(_)));
        assert!(matches!(
            hello.hooks.finalize.as_ref().map(|h| &h.endpoint),
            Some(Endpoint::InProcess(_))
        ));
    }

    #[test]
    fn an_explicit_controller_without_in_process_hooks_is_an_error() {
        let text = config::EMBEDDED[0].1.replace("/hello/sync", "/nobody/sync");
        let configs = vec![config::parse("x.yaml", &text).unwrap()];
        let err = resolve_hooks(configs.clone(), HookMode::InProcess, false).unwrap_err();
        assert!(
            err.to_string()
                .contains("the sync hook at /nobody/sync is not built into this binary"),
            "{err}"
        );
        assert!(matches!(
            resolve_hooks(configs, HookMode::InProcess, true),
            Err(DriveError::NothingToDrive(_))
        ));
    }

    #[test]
    fn http_mode_calls_every_webhook_by_url() {
        let prepared = resolve_hooks(config::embedded().unwrap(), HookMode::Http, false).unwrap();
        assert_eq!(prepared.len(), 3);
        let Endpoint::Http { url, timeout, .. } = &prepared[0].hooks.sync.endpoint else {
            panic!("expected HTTP")
        };
        assert_eq!(url, "http://metahook.metahook:80/hello/sync");
        assert_eq!(*timeout, Duration::from_secs(10));
    }
}
