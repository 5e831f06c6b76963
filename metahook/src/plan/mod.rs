//! `metahook plan --live`: what the driver would do to every parent in the
//! cluster now, and nothing written: with this binary's hooks, called in
//! the process as `serve --drive` calls them, or (`--controllers DIR`)
//! with the CompositeControllers and DecoratorControllers of a directory,
//! their hooks called over HTTP as `drive` calls them — both resolved by
//! the driver's own `prepare`. The driver's own pass does the work
//! (`metahook_driver::observe::live`, through a client that refuses
//! writes); this module connects, prints each parent's plan as it comes
//! (`output.rs`) and adds them up (`summary.rs`), whose verdict is the
//! exit code.

pub mod output;
pub mod summary;

use crate::args;
use crate::cli::{PlanArgs, PlanOutput};
use metahook_core::Controller;
use metahook_driver::client::connect::connect_read_only;
use metahook_driver::client::throttle::BudgetError;
use metahook_driver::observe::live::{LiveError, LivePlanner};
use metahook_driver::observe::metrics::DriverMetrics;
use metahook_driver::start::prepare::{HookMode, PrepareError, prepare};
use output::{Format, Printer};
use std::sync::Arc;
use summary::{Summary, Tally};

/// Why `plan` made no plan, or not all of it.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// `--qps` makes no budget.
    #[error("the API request budget is invalid")]
    Budget(#[from] BudgetError),
    /// The controllers' declarations or hooks cannot be driven.
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    /// `--controller` names none of the controllers planned (the
    /// binary's, or those of `--controllers`).
    #[error("no controller is named {0:?} (there are: {1})")]
    UnknownController(String, String),
    /// The runtime that reads the cluster could not start.
    #[error("starting the runtime failed")]
    Runtime(#[source] std::io::Error),
    /// The HTTP client that calls webhooks could not start.
    #[error("starting the HTTP client for the webhooks failed")]
    HttpClient(#[source] std::io::Error),
    /// No kubeconfig, or one that cannot connect.
    #[error("connecting to the Kubernetes API server failed")]
    Connect(#[source] kube::Error),
    /// Reading the cluster failed part-way.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// The plan could not be printed.
    #[error("writing the plan failed")]
    Write(#[source] std::io::Error),
}

/// `plan --live` for `controllers`, printed to standard output: the
/// summary, whose [`Summary::verdict`] is the exit code.
pub fn run(args: &PlanArgs, controllers: &[Controller]) -> Result<Summary, PlanError> {
    let budget = args::plan_budget(args)?;
    // As `serve --drive` and `drive` pick theirs: the binary's hooks in
    // the process, or a directory's webhooks over HTTP.
    let mode = match args.controllers {
        Some(_) => HookMode::Http,
        None => HookMode::InProcess,
    };
    let mut prepared = prepare(args.controllers.as_deref(), mode, controllers)?;
    if let Some(name) = &args.controller {
        let known = prepared
            .iter()
            .map(|p| p.config.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        prepared.retain(|p| p.config.name == *name);
        if prepared.is_empty() {
            return Err(PlanError::UnknownController(name.clone(), known));
        }
    }
    let scope = args::plan_scope(args);
    let format = match args.output {
        PlanOutput::Text => Format::Text,
        PlanOutput::Json => Format::Json,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(PlanError::Runtime)?;
    runtime.block_on(async {
        // The hook calls' metrics go nowhere: a plan serves no /metrics.
        let metrics = Arc::new(DriverMetrics::register(&mut Default::default()));
        let client = connect_read_only(Some(budget), Arc::clone(&metrics))
            .await
            .map_err(PlanError::Connect)?;
        // A webhook's credentials are read through the read-only client.
        let caller = mode
            .caller(&client, metrics)
            .map_err(PlanError::HttpClient)?;
        let planner = LivePlanner::new(client, prepared, caller).await?;
        let mut printer =
            Printer::begin(std::io::stdout().lock(), format).map_err(PlanError::Write)?;
        let mut tally = Tally::default();
        planner
            .plan(&scope, |plan| {
                tally.add(&plan);
                printer.parent(&plan)
            })
            .await?;
        let summary = tally.finish(planner.skipped());
        printer.end(&summary).map_err(PlanError::Write)?;
        Ok(summary)
    })
}

#[cfg(test)]
mod tests;
