//! The command line: `serve` (the default, `--drive` to drive the cluster
//! too), `drive`, `crds`, `render`, `chart`, `manifests`, `new`.

use clap::{Args, Parser, Subcommand, ValueEnum};
use metahook_driver::decide::selector::Selector;
use metahook_driver::start::run::defaults as driver_defaults;
use metahook_service::defaults;
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

/// The command line of a metahook binary: a subcommand, or `serve`'s
/// flags alone.
#[derive(Debug, Parser)]
#[command(
    name = "metahook",
    version,
    about = "Kubernetes operators as pure functions: Metacontroller hooks, served, driven, rendered and installed",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// The subcommand; without one, metahook serves with the flags in
    /// `serve`.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// With no subcommand, metahook serves.
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// What to run.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the hooks over HTTP (the default); with `--drive`, also drive
    /// the cluster, calling the hooks in-process.
    Serve(ServeArgs),
    /// Drive the cluster without Metacontroller, calling each hook over HTTP
    /// at the webhook its CompositeController names (any
    /// Metacontroller-compatible hook server). Serves /healthz, /readyz and
    /// /metrics on --listen.
    Drive(DriveArgs),
    /// Print every CRD as YAML, or write one file per CRD.
    Crds(CrdsArgs),
    /// Run one hook on a request file and print the response: what one
    /// reconcile would do, offline.
    Render(RenderArgs),
    /// Write the Helm chart that installs these controllers: both modes,
    /// TLS and mutual TLS, shards, NetworkPolicy, ServiceMonitor,
    /// PodDisruptionBudget, the aggregated API, a schema for every value;
    /// their CRDs and manifests from their declarations.
    Chart(ChartArgs),
    /// Print what installs these controllers without Helm: their CRDs,
    /// their CompositeController (or DecoratorController) manifests with
    /// webhooks at a Service, and with --driver the driver's
    /// least-privilege RBAC.
    Manifests(ManifestsArgs),
    /// Write a new crate: a controller of your own on metahook, with its
    /// tests, its image build and its chart.
    New(NewArgs),
}

/// `serve`: the hook service's settings, and the driver's for `--drive`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Where to listen, how long to drain, how to log.
    #[command(flatten)]
    pub process: ProcessArgs,
    /// Largest request body accepted; Metacontroller sends every child whole.
    #[arg(long, env = "METAHOOK_MAX_BODY_BYTES", default_value_t = defaults::MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
    /// Memory for request bodies, across all connections and workers: every
    /// byte of a hook request body held counts until its hook has answered.
    /// A body that would take the total over it gets 429 with Retry-After
    /// (before it is read when Content-Length declares it; chunked bodies
    /// when their buffer grows past it); one larger than the whole budget
    /// gets 413. The default is half the chart's 256 MiB memory limit: the
    /// other half is for the process itself, actix's buffers of open
    /// connections and what a hook builds from a body, one hook per worker
    /// at a time (docs/robustness.md has the figures).
    #[arg(long, env = "METAHOOK_MAX_BUFFERED_BYTES", default_value_t = defaults::MAX_BUFFERED_BYTES)]
    pub max_buffered_bytes: usize,
    /// Hook requests handled at once; past it, 429 with Retry-After.
    #[arg(long, env = "METAHOOK_MAX_IN_FLIGHT", default_value_t = defaults::MAX_IN_FLIGHT)]
    pub max_in_flight: usize,
    /// Open connections, across all workers; past it new connections wait
    /// in the kernel's accept queue. Bounds memory under overload: each
    /// connection buffers the body it is sending.
    #[arg(long, env = "METAHOOK_MAX_CONNECTIONS", default_value_t = defaults::MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// Seconds a client may take to send a request's head and body.
    #[arg(long, env = "METAHOOK_REQUEST_TIMEOUT_SECONDS", default_value_t = defaults::REQUEST_TIMEOUT_SECONDS)]
    pub request_timeout_seconds: u64,
    /// Worker threads (default: one per CPU).
    #[arg(long, env = "METAHOOK_WORKERS")]
    pub workers: Option<usize>,
    /// Serve HTTPS with tls.crt and tls.key from this directory (a mounted
    /// kubernetes.io/tls Secret), re-read when they change. Unset: plain
    /// HTTP.
    #[arg(long, env = "METAHOOK_TLS_DIR", value_name = "DIR")]
    pub tls_dir: Option<PathBuf>,
    /// Mutual TLS: only callers presenting a client certificate signed by
    /// ca.crt in --tls-dir may call the hooks (and every route but
    /// /healthz, /readyz and /metrics, which stay open to probes and
    /// scrapers); a certificate of another CA fails the handshake.
    #[arg(long, env = "METAHOOK_TLS_CLIENT_AUTH", requires = "tls_dir")]
    pub tls_client_auth: bool,
    /// Only callers sending `Authorization: Bearer <token>` with the token
    /// in this file (re-read when it changes) may call the hooks (every
    /// route but /healthz, /readyz and /metrics).
    #[arg(long, env = "METAHOOK_AUTH_TOKEN_FILE", value_name = "FILE")]
    pub auth_token_file: Option<PathBuf>,
    /// Also drive the cluster (the bundled driver, without Metacontroller),
    /// calling the hooks in-process. Needs a kubeconfig: in-cluster,
    /// KUBECONFIG or ~/.kube/config.
    #[arg(long, env = "METAHOOK_DRIVE")]
    pub drive: bool,
    /// The driver's settings, for `--drive`.
    #[command(flatten)]
    pub driver: DriverArgs,
}

/// What both long-running commands take: where to listen, how long to
/// drain, how to log.
#[derive(Debug, Clone, Args)]
pub struct ProcessArgs {
    /// Address to listen on: the hooks (`serve`), /healthz, /readyz and
    /// /metrics.
    #[arg(long, env = "METAHOOK_LISTEN", default_value = "0.0.0.0:8080")]
    pub listen: SocketAddr,
    /// Seconds to finish requests and reconciles in progress after SIGTERM.
    #[arg(long, env = "METAHOOK_SHUTDOWN_TIMEOUT_SECONDS", default_value_t = defaults::SHUTDOWN_TIMEOUT_SECONDS)]
    pub shutdown_timeout_seconds: u64,
    /// Log format.
    #[arg(long, env = "METAHOOK_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// `metahook drive`: the driver alone.
#[derive(Debug, Clone, Args)]
pub struct DriveArgs {
    /// Where to listen, how long to drain, how to log.
    #[command(flatten)]
    pub process: ProcessArgs,
    /// The driver's settings.
    #[command(flatten)]
    pub driver: DriverArgs,
}

/// Settings of the bundled driver, for `serve --drive` and `drive`.
#[derive(Debug, Clone, Args)]
pub struct DriverArgs {
    /// Read the CompositeControllers from the *.yaml files in this directory
    /// instead of the ones built in (metacontroller/*.yaml).
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

fn positive_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(qps) if qps.is_finite() && qps > 0.0 && qps <= 1e9 => Ok(qps),
        _ => Err(format!(
            "{text:?} is not a number of requests per second above 0 (and at most 1e9)"
        )),
    }
}

/// How log lines are written (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    // Documented with `#[doc = concat!(..)]`, which clap does not read: it
    // takes a doc comment as the value's help, and help on a value turns
    // every `--help` into its long layout.
    #[doc = concat!("Lines for a person to read, coloured on a terminal.")]
    Text,
    #[doc = concat!("One JSON object per line, for a log collector.")]
    Json,
}

/// `crds`: where the CRDs go, and whose.
#[derive(Debug, Clone, Args)]
pub struct CrdsArgs {
    /// Write one `<name>.yaml` per CRD into this directory instead of
    /// printing them all.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// The driver's own CRDs instead of the controllers': Metacontroller's
    /// ControllerRevision, for rolling updates (driver/crds/).
    #[arg(long)]
    pub driver: bool,
}

/// `chart`: where the chart goes, and what names it.
#[derive(Debug, Clone, Args)]
pub struct ChartArgs {
    /// The chart's directory: created, or brought up to date (its
    /// templates/, crds/ and metacontroller/ hold only what is generated).
    #[arg(long)]
    pub out_dir: PathBuf,
    /// The chart's name; this program's by default.
    #[arg(long)]
    pub name: Option<String>,
    /// What the chart installs, one paragraph for Chart.yaml.
    #[arg(long)]
    pub description: Option<String>,
    /// The chart's version (SemVer).
    #[arg(long, default_value = "0.1.0")]
    pub version: String,
    /// The image tag the chart deploys unless `image.tag` says otherwise;
    /// the chart's version by default.
    #[arg(long)]
    pub app_version: Option<String>,
    /// The image repository (`image.repository`); `localhost/<name>` by
    /// default, as `scripts/image.sh` of a new crate tags it.
    #[arg(long)]
    pub image: Option<String>,
}

/// `manifests`: where the webhooks point, and whether to add the driver's
/// RBAC.
#[derive(Debug, Clone, Args)]
pub struct ManifestsArgs {
    /// The namespace of the Service the webhooks call, and of the driver's
    /// ServiceAccount and Lease.
    #[arg(long, default_value = "default")]
    pub namespace: String,
    /// The Service the webhooks call; this program's name by default.
    #[arg(long)]
    pub service: Option<String>,
    /// The Service's port.
    #[arg(long, default_value_t = 80)]
    pub port: u16,
    /// Add what driver mode needs: a ServiceAccount (named as the
    /// Service), a ClusterRole with exactly the verbs the driver uses on
    /// each parent and child type (no wildcard), a Role for its Lease, and
    /// their bindings.
    #[arg(long)]
    pub driver: bool,
}

/// `new`: where, and the names every file follows from.
#[derive(Debug, Clone, Args)]
pub struct NewArgs {
    /// The new crate's directory: new or empty.
    pub dir: PathBuf,
    /// The custom resource's kind, UpperCamelCase; from the directory's
    /// name by default (`gadget-operator` gives `Gadget`).
    #[arg(long)]
    pub kind: Option<String>,
    /// Its API group, a DNS subdomain with a dot.
    #[arg(long, default_value = "example.com")]
    pub group: String,
    /// Its API version.
    #[arg(long, default_value = "v1alpha1")]
    pub version: String,
    /// The crate's, binary's and chart's name; the directory's by default.
    #[arg(long)]
    pub name: Option<String>,
    /// Depend on this released version of metahook instead of the checkout
    /// this binary was built from.
    #[arg(long, conflicts_with = "metahook_path")]
    pub metahook_version: Option<String>,
    /// Depend on the metahook checkout at this path.
    #[arg(long)]
    pub metahook_path: Option<PathBuf>,
}

/// `render`: the hook, the request, and what to print of the answer.
#[derive(Debug, Clone, Args)]
pub struct RenderArgs {
    /// Controller name, e.g. `hello`.
    pub controller: String,
    /// Hook: `sync`, `finalize` or `customize`.
    pub hook: String,
    /// Request file, JSON or YAML, in Metacontroller's wire format; `-` or
    /// nothing reads standard input.
    pub file: Option<PathBuf>,
    /// The time the hook sees (RFC 3339), instead of now: pins condition
    /// times and Hikawa's pacing. Built-in hooks only: a webhook keeps its
    /// own clock.
    #[arg(long, conflicts_with = "controllers")]
    pub now: Option<jiff::Timestamp>,
    /// Print the response exactly as the service sends it (one line)
    /// instead of indented.
    #[arg(long)]
    pub compact: bool,
    /// Print what the bundled driver would do with the answer instead of
    /// the answer: every operation (for an apply, the fields it changes,
    /// from and to) and the status fields that change. sync and finalize,
    /// of a CompositeController that does not roll.
    #[arg(long)]
    pub plan: bool,
    /// Read the controller from the CompositeController and
    /// DecoratorController manifests (`*.yaml`) in this directory instead
    /// of the ones built in, and ask its webhook as `metahook drive` would
    /// (URL, timeout, TLS, credentials: Secrets are read through the
    /// kubeconfig).
    #[arg(long, value_name = "DIR")]
    pub controllers: Option<PathBuf>,
    /// Take the hook's answer from this file (JSON or YAML) instead of
    /// asking the hook: with --plan, what the driver would do with an
    /// answer of your own.
    #[arg(long, value_name = "FILE", conflicts_with = "now")]
    pub response: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn no_subcommand_means_serve_with_flags() {
        let cli = Cli::try_parse_from(["metahook", "--listen", "127.0.0.1:9000"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.serve.process.listen.port(), 9000);
    }

    #[test]
    fn the_memory_budget_defaults_to_half_the_charts_limit() {
        let cli = Cli::try_parse_from(["metahook"]).unwrap();
        assert_eq!(cli.serve.max_buffered_bytes, 128 * 1024 * 1024);
        // Within it, the largest body accepted by default.
        assert!(cli.serve.max_body_bytes <= cli.serve.max_buffered_bytes);
        let cli = Cli::try_parse_from(["metahook", "--max-buffered-bytes", "1048576"]).unwrap();
        assert_eq!(cli.serve.max_buffered_bytes, 1 << 20);
    }

    #[test]
    fn serve_drive_and_drive_parse() {
        let cli =
            Cli::try_parse_from(["metahook", "serve", "--drive", "--controllers", "cc"]).unwrap();
        match cli.command {
            Some(Command::Serve(args)) => {
                assert!(args.drive);
                assert_eq!(args.driver.controllers.unwrap(), PathBuf::from("cc"));
                assert_eq!(args.driver.driver_workers, 5);
            }
            other => panic!("expected serve, got {other:?}"),
        }
        let cli = Cli::try_parse_from(["metahook", "--drive"]).unwrap();
        assert!(cli.command.is_none() && cli.serve.drive);
        let cli = Cli::try_parse_from([
            "metahook",
            "drive",
            "--leader-election",
            "--listen",
            "127.0.0.1:0",
        ])
        .unwrap();
        match cli.command {
            Some(Command::Drive(args)) => assert!(args.driver.leader_election),
            other => panic!("expected drive, got {other:?}"),
        }
        assert!(Cli::try_parse_from(["metahook", "drive", "--driver-workers", "0"]).is_err());
    }

    #[test]
    fn the_api_budget_is_off_unless_asked_for() {
        let cli = Cli::try_parse_from(["metahook", "drive"]).unwrap();
        let Some(Command::Drive(args)) = cli.command else {
            panic!("expected drive")
        };
        assert_eq!(args.driver.kube_qps, None);
        assert_eq!(args.driver.kube_burst.get(), 10);
        assert_eq!(
            (args.driver.events_qps, args.driver.events_burst.get()),
            (1.0 / 300.0, 25),
            "Metacontroller's defaults"
        );
        let cli = Cli::try_parse_from([
            "metahook",
            "--drive",
            "--kube-qps",
            "2.5",
            "--kube-burst",
            "4",
        ])
        .unwrap();
        assert_eq!(cli.serve.driver.kube_qps, Some(2.5));
        assert_eq!(cli.serve.driver.kube_burst.get(), 4);
        // As Helm renders a large number (driver.kubeQps in the chart).
        let cli = Cli::try_parse_from(["metahook", "--drive", "--kube-qps", "1e+06"]).unwrap();
        assert_eq!(cli.serve.driver.kube_qps, Some(1e6));
        for bad in ["0", "-1", "NaN", "inf", "fast"] {
            assert!(
                Cli::try_parse_from(["metahook", "drive", "--kube-qps", bad]).is_err(),
                "{bad}"
            );
        }
        assert!(Cli::try_parse_from(["metahook", "drive", "--kube-burst", "0"]).is_err());
    }

    #[test]
    fn a_shard_is_a_label_selector_that_selects_something() {
        let shard = |args: &[&str]| {
            let cli = Cli::try_parse_from(args).unwrap();
            let Some(Command::Drive(drive)) = cli.command else {
                panic!("expected drive")
            };
            drive.driver.shard_selector.map(|s| s.to_string())
        };
        assert_eq!(shard(&["metahook", "drive"]), None);
        assert_eq!(
            shard(&[
                "metahook",
                "drive",
                "--shard-selector",
                "metahook.dev/shard in (a,b)"
            ]),
            Some("metahook.dev/shard in (a,b)".to_owned())
        );
        for bad in ["", " , ", "shard in ()", "bad key!=x"] {
            assert!(
                Cli::try_parse_from(["metahook", "drive", "--shard-selector", bad]).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn leader_election_timings_are_durations_as_kubernetes_writes_them() {
        let drive = |args: &[&str]| {
            let cli = Cli::try_parse_from(args).map_err(|e| e.to_string())?;
            let Some(Command::Drive(drive)) = cli.command else {
                panic!("expected drive")
            };
            Ok::<_, String>(drive.driver)
        };
        let defaults = drive(&["metahook", "drive"]).unwrap();
        assert_eq!(
            (
                defaults.leader_election_lease_duration,
                defaults.leader_election_renew_deadline,
                defaults.leader_election_retry_period
            ),
            (
                Duration::from_secs(15),
                Duration::from_secs(10),
                Duration::from_secs(2)
            ),
            "client-go's"
        );
        let set = drive(&[
            "metahook",
            "drive",
            "--leader-election-renew-deadline",
            "1500ms",
            "--leader-election-lease-duration",
            "1m",
        ])
        .unwrap();
        assert_eq!(
            set.leader_election_renew_deadline,
            Duration::from_millis(1500)
        );
        assert_eq!(set.leader_election_lease_duration, Duration::from_secs(60));
        for bad in ["0s", "-2s", "soon"] {
            let refused = drive(&["metahook", "drive", "--leader-election-retry-period", bad]);
            assert!(refused.is_err(), "{bad} was taken");
        }
    }

    #[test]
    fn the_driver_view_is_off_unless_a_loopback_address_is_named() {
        let cli = Cli::try_parse_from(["metahook", "--drive"]).unwrap();
        assert_eq!(cli.serve.driver.debug_driver_listen, None);
        let cli = Cli::try_parse_from([
            "metahook",
            "drive",
            "--debug-driver-listen",
            "127.0.0.1:9090",
        ])
        .unwrap();
        let Some(Command::Drive(args)) = cli.command else {
            panic!("expected drive")
        };
        assert_eq!(args.driver.debug_driver_listen.unwrap().port(), 9090);
        assert!(
            Cli::try_parse_from([
                "metahook",
                "--drive",
                "--debug-driver-listen",
                "0.0.0.0:9090"
            ])
            .is_err()
        );
    }

    #[test]
    fn client_certificates_need_a_tls_dir() {
        assert!(Cli::try_parse_from(["metahook", "--tls-client-auth"]).is_err());
        let cli = Cli::try_parse_from([
            "metahook",
            "serve",
            "--tls-dir",
            "/tls",
            "--tls-client-auth",
            "--auth-token-file",
            "/token",
        ])
        .unwrap();
        let Some(Command::Serve(args)) = cli.command else {
            panic!("expected serve")
        };
        let settings = crate::args::service(&args);
        assert_eq!(
            settings.tls,
            Some(metahook_service::TlsSettings {
                dir: "/tls".into(),
                client_auth: true
            })
        );
        assert_eq!(settings.auth_token_file, Some("/token".into()));
        let plain = crate::args::service(&Cli::try_parse_from(["metahook"]).unwrap().serve);
        assert_eq!((plain.tls, plain.auth_token_file), (None, None));
    }

    #[test]
    fn render_takes_a_pinned_clock() {
        let cli = Cli::try_parse_from([
            "metahook",
            "render",
            "hello",
            "sync",
            "x.json",
            "--now",
            "2026-11-22T03:00:00Z",
        ])
        .unwrap();
        match cli.command {
            Some(Command::Render(args)) => {
                assert_eq!(args.controller, "hello");
                assert_eq!(args.now.unwrap().to_string(), "2026-11-22T03:00:00Z");
            }
            other => panic!("expected render, got {other:?}"),
        }
    }
}
