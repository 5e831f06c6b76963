//! The one place that turns the command line into each crate's settings.
//! Their defaults are the crates' own (`metahook_service::defaults`,
//! `metahook_driver::start::run::defaults`), which the command line shows.

use crate::cli::{DriveArgs, DriverArgs, PlanArgs, ServeArgs};
use metahook_apiserver::ApiSettings;
use metahook_driver::client::throttle::{Budget, BudgetError};
use metahook_driver::controller::worker::Pace;
use metahook_driver::observe::live::Scope;
use metahook_driver::start::leader::LeaderError;
use metahook_driver::start::prepare::HookMode;
use metahook_driver::start::run::{DriveSettings, leader_settings};
use metahook_service::{Settings, TlsSettings, defaults};
use std::time::Duration;

/// `serve`: the hook service.
pub fn service(args: &ServeArgs) -> Settings {
    Settings {
        listen: args.process.listen,
        max_body_bytes: args.max_body_bytes,
        max_buffered_bytes: args.max_buffered_bytes,
        max_in_flight: args.max_in_flight,
        max_connections: args.max_connections,
        request_timeout: Duration::from_secs(args.request_timeout_seconds),
        shutdown_timeout: Duration::from_secs(args.process.shutdown_timeout_seconds),
        workers: args.workers,
        tls: args.tls_dir.clone().map(|dir| TlsSettings {
            dir,
            client_auth: args.tls_client_auth,
        }),
        auth_token_file: args.auth_token_file.clone(),
        reload_every: Duration::from_secs(defaults::RELOAD_SECONDS),
        stop_on_signals: true,
    }
}

/// `drive`: the service with no hooks, answering health and metrics on one
/// worker.
pub fn health_only(args: &DriveArgs) -> Settings {
    let mut settings = Settings::new(args.process.listen);
    settings.shutdown_timeout = Duration::from_secs(args.process.shutdown_timeout_seconds);
    settings.workers = Some(1);
    settings
}

/// The aggregated API's settings, when `--api-listen` asks for it.
pub fn api(args: &DriverArgs) -> Option<ApiSettings> {
    Some(ApiSettings {
        listen: args.api_listen?,
        tls_dir: args.api_tls_dir.clone()?,
        reload_every: Duration::from_secs(defaults::RELOAD_SECONDS),
        limits: Default::default(),
    })
}

/// Why the driver's settings cannot work.
#[derive(Debug, thiserror::Error)]
pub enum DriverSettingsError {
    /// A rate (`--kube-qps`, `--events-qps`) that makes no budget.
    #[error("the API request budget is invalid")]
    Budget(#[from] BudgetError),
    /// Leader election timings out of order: the retry period must be
    /// shorter than the renew deadline, and that than the lease duration.
    #[error("the leader election's timings are invalid")]
    Leader(#[from] LeaderError),
}

/// The driver, calling hooks as `mode` says, given as long to stop as the
/// service.
pub fn driver(
    args: &DriverArgs,
    mode: HookMode,
    shutdown_timeout: Duration,
) -> Result<DriveSettings, DriverSettingsError> {
    let budget = args
        .kube_qps
        .map(|qps| Budget::new(qps, args.kube_burst))
        .transpose()?;
    let instance = args
        .pod_name
        .clone()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "metahook".to_owned());
    Ok(DriveSettings {
        view: std::sync::Arc::default(),
        controllers: args.controllers.clone(),
        mode,
        pace: Pace {
            workers: usize::from(args.driver_workers),
            debounce: Duration::from_millis(args.reconcile_debounce_ms),
        },
        leader: args
            .leader_election
            .then(|| {
                let mut leader = leader_settings(
                    args.leader_election_lease.clone(),
                    args.leader_election_namespace.clone(),
                    instance.clone(),
                );
                leader.lease_duration = args.leader_election_lease_duration;
                leader.renew_deadline = args.leader_election_renew_deadline;
                leader.retry_period = args.leader_election_retry_period;
                leader.standby = args.leader_election_standby.into();
                leader.check().map(|()| leader)
            })
            .transpose()?,
        shutdown_timeout,
        instance,
        budget,
        events: Budget::new(args.events_qps, args.events_burst)?,
        shard: args.shard_selector.clone(),
        status_settle: Duration::from_millis(args.status_settle_ms),
    })
}

/// `plan`: which parents.
pub fn plan_scope(args: &PlanArgs) -> Scope {
    Scope {
        namespace: args.namespace.clone(),
        selector: args.selector.clone(),
        name: args.name.clone(),
    }
}

/// `plan`: its client's budget.
pub fn plan_budget(args: &PlanArgs) -> Result<Budget, BudgetError> {
    Budget::new(args.qps, args.burst)
}
