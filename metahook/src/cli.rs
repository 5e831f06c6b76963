//! The command line: `serve` (the default, `--drive` to drive the cluster
//! too), `drive`, `crds`, `render`, `chart`, `manifests`; `new` in the
//! metahook binary (the `scaffold` feature).

mod driver;
mod plan;

pub use driver::DriverArgs;
pub use plan::{PlanArgs, PlanOutput};

use clap::{Args, Parser, Subcommand, ValueEnum};
use metahook_service::defaults;
use std::net::SocketAddr;
use std::path::PathBuf;

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

/// This program's name, as it was run: a binary of yours names its chart,
/// Service and help after itself.
pub(crate) fn program_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|arg| {
            std::path::Path::new(&arg)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "metahook".to_owned())
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
    /// Show what the driver would do to every parent in the cluster now,
    /// with this binary's hooks (or, with --controllers, hooks served over
    /// HTTP), without writing anything: per parent the
    /// applies (with the fields they change), creates, deletes, status and
    /// finalizer changes, then a summary. Exit code 0: no changes; 2:
    /// changes planned; 1: an error, or a parent that could not be planned.
    Plan(PlanArgs),
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
    #[cfg(feature = "scaffold")]
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
    /// Print only the read-only ClusterRole `plan --live` needs, named
    /// `<service>-plan`: get, list and watch on every parent and child
    /// type, nothing else. Bind it to whoever runs the plan.
    #[arg(long, conflicts_with_all = ["driver", "ca_bundle"])]
    pub plan_role: bool,
    /// With --plan-role: the role of a plan of the CompositeControllers
    /// in the *.yaml files of this directory (`plan --live --controllers
    /// DIR`) instead of the binary's own.
    #[arg(long, value_name = "DIR", requires = "plan_role")]
    pub controllers: Option<PathBuf>,
    /// The PEM CA that signed the Service's serving certificate (the
    /// Service must serve TLS: the API server calls it over HTTPS only).
    /// Adds the admission webhook configurations and the CRDs' other
    /// versions with their conversion webhook, this CA as their caBundle.
    #[arg(long, value_name = "FILE")]
    pub ca_bundle: Option<PathBuf>,
}

/// `new`: where, and the names every file follows from.
#[cfg(feature = "scaffold")]
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
mod tests;
