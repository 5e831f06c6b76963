//! The bundled driver's flags, for `serve --drive` and `drive`, and the
//! parsers of their values.

use clap::{Args, ValueEnum};
use metahook_driver::decide::selector::Selector;
use metahook_driver::start::leader::Standby;
use metahook_driver::start::run::defaults as driver_defaults;
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

/// `--leader-election-standby`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StandbyArg {
    // A doc comment here would be clap's help for the value (see
    // `LogFormat` in cli.rs).
    #[doc = concat!("List and watch as the leader does (the leader's memory on every replica): a takeover waits for the Lease alone.")]
    Warm,
    #[doc = concat!("Start nothing until leading: a takeover lists every cache first.")]
    Cold,
}

impl From<StandbyArg> for Standby {
    fn from(arg: StandbyArg) -> Self {
        match arg {
            StandbyArg::Warm => Standby::Warm,
            StandbyArg::Cold => Standby::Cold,
        }
    }
}

/// Settings of the bundled driver, for `serve --drive` and `drive`.
#[derive(Debug, Clone, Args)]
pub struct DriverArgs {
    /// Read the CompositeControllers from the *.yaml files in this directory
    /// instead of the ones built in (chart/metacontroller/*.yaml).
    #[arg(long, env = "METAHOOK_CONTROLLERS", value_name = "DIR")]
    pub controllers: Option<PathBuf>,
    /// Reconciles running at once per controller (Metacontroller's
    /// --workers).
    #[arg(long, env = "METAHOOK_DRIVER_WORKERS", default_value_t = driver_defaults::WORKERS, value_parser = clap::value_parser!(u16).range(1..))]
    pub driver_workers: u16,
    /// How long (ms) a parent's triggers are gathered into one reconcile:
    /// a child passing through several states in a row (a Deployment
    /// rolling out) then costs one reconcile and one status write. 0: none
    /// (Metacontroller has none).
    #[arg(long, env = "METAHOOK_RECONCILE_DEBOUNCE_MS", value_name = "MS", default_value_t = driver_defaults::RECONCILE_DEBOUNCE_MS)]
    pub reconcile_debounce_ms: u64,
    /// How long (ms) a parent's status may wait after a pass that changed
    /// one of its children: the child's own status is about to move (a
    /// Deployment just created or scaled reports its replicas moments
    /// later), and a status written once it has is one write instead of
    /// one per step. Changes worth a Warning are written at once. 0: the
    /// status is written in the same pass, as Metacontroller does.
    #[arg(long, env = "METAHOOK_STATUS_SETTLE_MS", value_name = "MS", default_value_t = driver_defaults::STATUS_SETTLE_MS)]
    pub status_settle_ms: u64,
    /// Seconds the HTTP servers (health, metrics, hooks, the aggregated
    /// API) keep serving after SIGTERM, while the driver stops at once and
    /// gives up its Lease to a standby: the pod's endpoints go first. The
    /// chart's driver mode sets it instead of a preStop sleep, which would
    /// keep the leader leading all along.
    #[arg(
        long,
        env = "METAHOOK_SHUTDOWN_DELAY_SECONDS",
        value_name = "SECONDS",
        default_value_t = 0
    )]
    pub shutdown_delay_seconds: u64,
    /// Elect a leader on a Lease, so that of several replicas one drives.
    #[arg(long, env = "METAHOOK_LEADER_ELECTION")]
    pub leader_election: bool,
    /// The Lease's name.
    #[arg(
        long,
        env = "METAHOOK_LEADER_ELECTION_LEASE",
        default_value = driver_defaults::LEASE_NAME
    )]
    pub leader_election_lease: String,
    /// A leader's term: a standby takes the Lease over after seeing it
    /// unrenewed this long (whole seconds; client-go's default).
    #[arg(
        long,
        env = "METAHOOK_LEADER_ELECTION_LEASE_DURATION",
        value_name = "DURATION",
        default_value = "15s",
        value_parser = duration
    )]
    pub leader_election_lease_duration: Duration,
    /// How long after sending its last renewal that landed the leader may
    /// still write: it stops at once when this passes. Shorter than the
    /// lease duration; the difference bounds how late a write may reach
    /// the API server.
    #[arg(
        long,
        env = "METAHOOK_LEADER_ELECTION_RENEW_DEADLINE",
        value_name = "DURATION",
        default_value = "10s",
        value_parser = duration
    )]
    pub leader_election_renew_deadline: Duration,
    /// How often the leader renews the Lease (and a standby retries after
    /// an error).
    #[arg(
        long,
        env = "METAHOOK_LEADER_ELECTION_RETRY_PERIOD",
        value_name = "DURATION",
        default_value = "2s",
        value_parser = duration
    )]
    pub leader_election_retry_period: Duration,
    /// What a replica does while another leads.
    #[arg(
        long,
        env = "METAHOOK_LEADER_ELECTION_STANDBY",
        value_enum,
        default_value_t = StandbyArg::Warm
    )]
    pub leader_election_standby: StandbyArg,
    /// The Lease's namespace (default: the pod's namespace, else `default`).
    #[arg(long, env = "POD_NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// This replica's name, in the Lease and in Events (default: the host
    /// name).
    #[arg(long, env = "POD_NAME")]
    pub pod_name: Option<String>,
    /// API requests per second the driver may send on average, lists and
    /// watches included (Metacontroller's --client-go-qps, 5 there).
    /// Unset: no client-side limit.
    #[arg(long, env = "METAHOOK_KUBE_QPS", value_name = "QPS", value_parser = positive_rate)]
    pub kube_qps: Option<f64>,
    /// API requests the driver may send at once before --kube-qps paces
    /// them (Metacontroller's --client-go-burst). Only with --kube-qps.
    #[arg(
        long,
        env = "METAHOOK_KUBE_BURST",
        value_name = "N",
        default_value_t = driver_defaults::KUBE_BURST
    )]
    pub kube_burst: NonZeroU32,
    /// Events one object may get per second once its burst is spent
    /// (Metacontroller's --events-qps: one per 5 minutes).
    #[arg(
        long,
        env = "METAHOOK_EVENTS_QPS",
        value_name = "QPS",
        value_parser = positive_rate,
        default_value_t = driver_defaults::EVENTS_QPS
    )]
    pub events_qps: f64,
    /// Events one object may get at once (Metacontroller's --events-burst).
    #[arg(
        long,
        env = "METAHOOK_EVENTS_BURST",
        value_name = "N",
        default_value_t = driver_defaults::EVENTS_BURST
    )]
    pub events_burst: NonZeroU32,
    /// Drive only the parents this label selector selects, and their
    /// children (e.g. `metahook.dev/shard=a`): one shard of several, each
    /// with its own --leader-election-lease. The API server filters the
    /// watches, so a shard's memory follows its share; children carry
    /// their parent's values of the selector's labels.
    #[arg(long, env = "METAHOOK_SHARD_SELECTOR", value_name = "SELECTOR", value_parser = shard_selector)]
    pub shard_selector: Option<Selector>,
    /// Serve the driver's reconcile records as a Kubernetes aggregated API
    /// (driver.metahook.dev/v1alpha1 reconciles) over HTTPS at this
    /// address, for kube-apiserver's aggregation layer. Unset: not served.
    #[arg(
        long,
        env = "METAHOOK_API_LISTEN",
        value_name = "ADDR",
        requires = "api_tls_dir"
    )]
    pub api_listen: Option<SocketAddr>,
    /// The aggregated API's serving certificate: tls.crt and tls.key in
    /// this directory (a mounted Secret), re-read when they change.
    #[arg(long, env = "METAHOOK_API_TLS_DIR", value_name = "DIR")]
    pub api_tls_dir: Option<PathBuf>,
    /// Serve /debug/driver (the driver's caches and the record of every
    /// parent's last reconcile, as JSON, unauthenticated) on a listener of
    /// its own at this loopback address; reach it with kubectl
    /// port-forward. Unset: not served.
    #[arg(
        long,
        env = "METAHOOK_DEBUG_DRIVER_LISTEN",
        value_name = "ADDR",
        value_parser = crate::debug::loopback_addr
    )]
    pub debug_driver_listen: Option<SocketAddr>,
}

/// A duration as Kubernetes' components take one (`15s`, `1500ms`,
/// `1m`), positive.
fn duration(text: &str) -> Result<Duration, String> {
    let parsed: jiff::SignedDuration = text
        .parse()
        .map_err(|err| format!("{text:?} is not a duration such as 15s or 500ms: {err}"))?;
    Duration::try_from(parsed)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{text:?} is not a duration above zero"))
}

/// A selector that leaves some parents out.
fn shard_selector(text: &str) -> Result<Selector, String> {
    let selector = metahook_driver::decide::selector::text::labels(text)?;
    if selector.selects_all() {
        return Err(
            "an empty shard selector selects every parent: leave --shard-selector out".to_owned(),
        );
    }
    Ok(selector)
}

pub(super) fn positive_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(qps) if qps.is_finite() && qps > 0.0 && qps <= 1e9 => Ok(qps),
        _ => Err(format!(
            "{text:?} is not a number of requests per second above 0 (and at most 1e9)"
        )),
    }
}
