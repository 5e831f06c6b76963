//! `plan`'s flags: which parents, how to print, the client's budget.

use clap::{Args, ValueEnum};
use metahook_driver::observe::live::defaults;
use std::num::NonZeroU32;
use std::path::PathBuf;

/// `plan --live`: what the driver would do to the cluster's parents now,
/// with this binary's hooks or, with `--controllers`, hooks over HTTP,
/// read-only.
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// Plan against the live cluster through the kubeconfig (in-cluster,
    /// KUBECONFIG or ~/.kube/config), reading only: required, the one
    /// kind of plan there is so far.
    #[arg(long, required = true)]
    pub live: bool,
    /// Only parents in this namespace (every namespace without it).
    #[arg(long, short = 'n', value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Parents in every namespace: the default, said explicitly.
    #[arg(long, short = 'A', conflicts_with = "namespace")]
    pub all_namespaces: bool,
    /// Only parents this label selector selects (e.g. `tier=web`).
    #[arg(long, short = 'l', value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Only the parent of this name.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Only this controller's parents (every controller of the binary,
    /// or of --controllers, without it).
    #[arg(long, value_name = "CONTROLLER")]
    pub controller: Option<String>,
    /// Plan the CompositeControllers and DecoratorControllers in the *.yaml
    /// files of this directory instead of the binary's own, calling their
    /// hooks over HTTP at the webhooks they name, as `drive` does: hooks
    /// in any language, served anywhere this machine reaches (a Service
    /// port-forwarded, a candidate version run locally).
    #[arg(long, value_name = "DIR")]
    pub controllers: Option<PathBuf>,
    /// How the plan is printed.
    #[arg(long, short = 'o', value_enum, default_value_t = PlanOutput::Text)]
    pub output: PlanOutput,
    /// API requests per second on average, lists included: gentle, so a
    /// plan of a big cluster leaves the API server to its clients.
    #[arg(long, value_name = "QPS", default_value_t = defaults::QPS, value_parser = super::driver::positive_rate)]
    pub qps: f64,
    /// API requests sent at once before --qps paces them.
    #[arg(long, value_name = "N", default_value_t = defaults::BURST)]
    pub burst: NonZeroU32,
}

/// `plan --output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanOutput {
    // A doc comment here would be clap's help for the value (see
    // `LogFormat` in cli.rs).
    #[doc = concat!("Per parent that would change, its operations and fields; then a summary.")]
    Text,
    #[doc = concat!("The same as one JSON object: {\"parents\": [...], \"summary\": {...}}.")]
    Json,
}
