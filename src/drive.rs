//! `serve --drive` and `drive`: the actix-web server and the driver side by
//! side in one process.
//!
//! The runtimes are chosen deliberately: actix-web runs on its own System
//! (single-threaded arbiters, one per HTTP worker) in the main thread, as
//! `serve` always has; the driver (watchers, reflectors, workers, the lease)
//! runs on its own multi-threaded tokio runtime in a second thread. Neither
//! can starve the other, and the hook server without `--drive` is exactly
//! what it was. Shutdown: SIGTERM/SIGINT reach both at once: the actix
//! server drains requests in flight while the driver lets reconciles in
//! progress finish and releases the lease; a driver that stops by itself
//! (a lost lease, a failed start) stops the server, and the process exits
//! with its error.

use crate::cli::DriverArgs;
use crate::driver::config::{self, ConfigError};
use crate::driver::run::{self, DriveError, DriveSettings, HookMode};
use crate::driver::throttle::{Budget, BudgetError};
use crate::server::{self, AppState, ServeError, Settings};
use actix_web::web;
use metahook_hooks::Controller;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

#[derive(Debug, thiserror::Error)]
pub enum DrivingError {
    #[error("the controller manifests are invalid")]
    Config(#[from] ConfigError),
    #[error("the driver failed")]
    Drive(#[from] DriveError),
    #[error("the API request budget is invalid")]
    Budget(#[from] BudgetError),
    #[error(transparent)]
    Serve(#[from] ServeError),
    #[error("starting the driver's runtime failed")]
    Runtime(#[source] std::io::Error),
    #[error("the driver's thread panicked")]
    Panicked,
}

/// Validates the manifests and resolves the hooks: no cluster needed, so a
/// bad file fails before anything connects.
pub fn prepare(args: &DriverArgs, mode: HookMode) -> Result<Vec<run::Prepared>, DrivingError> {
    let configs = match &args.controllers {
        Some(dir) => config::from_dir(dir)?,
        None => config::embedded()?,
    };
    Ok(run::prepare(configs, mode, args.controllers.is_none())?)
}

/// Serves `controllers`' hooks (none for `drive`) plus health and metrics,
/// and drives the cluster, until SIGTERM or a fatal driver error.
pub fn serve_and_drive(
    settings: Settings,
    controllers: &'static [Controller],
    args: &DriverArgs,
    mode: HookMode,
) -> Result<(), DrivingError> {
    let prepared = prepare(args, mode)?;
    let budget = args
        .kube_qps
        .map(|qps| Budget::new(qps, args.kube_burst))
        .transpose()?;
    let instance = args
        .pod_name
        .clone()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "metahook".to_owned());
    let drive_settings = DriveSettings {
        mode,
        workers: usize::from(args.driver_workers),
        leader: args.leader_election.then(|| {
            run::leader_settings(
                args.leader_election_lease.clone(),
                args.leader_election_namespace.clone(),
                instance.clone(),
            )
        }),
        shutdown_timeout: settings.shutdown_timeout,
        instance,
    };
    let state = web::Data::new(AppState::new(controllers, &settings).gated_on_driver());
    let stop = CancellationToken::new();
    let (handle_tx, handle_rx) = std::sync::mpsc::channel::<actix_web::dev::ServerHandle>();

    let driver_state = state.clone();
    let driver_stop = stop.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("metahook-driver")
        .enable_all()
        .build()
        .map_err(DrivingError::Runtime)?;
    let driver = std::thread::Builder::new()
        .name("metahook-driver".to_owned())
        .spawn(move || {
            // Registered by `gated_on_driver`; a fresh set only if not.
            let metrics = driver_state.metrics.driver.clone().unwrap_or_default();
            let ready_state = driver_state.clone();
            let set_ready: Arc<dyn Fn(Option<run::Gate>) + Send + Sync> =
                Arc::new(move |gate| ready_state.set_driver_gate(gate));
            // SIGTERM reaches the actix server and the driver at once, so
            // both shut down within the same grace period.
            let signalled = driver_stop.clone();
            runtime.spawn(async move {
                termination().await;
                signalled.cancel();
            });
            let result = runtime.block_on(async {
                let clients = run::connect(budget, metrics.clone()).await?;
                run::run(
                    prepared,
                    drive_settings,
                    clients,
                    metrics,
                    set_ready,
                    driver_stop,
                )
                .await
            });
            if let Err(err) = &result {
                tracing::error!(error = %crate::error_chain(err), "the driver stopped");
            }
            // Whatever ended the driver ends the server too.
            if let Ok(handle) = handle_rx.recv() {
                runtime.block_on(handle.stop(true));
            }
            result
        })
        .map_err(DrivingError::Runtime)?;

    let served = actix_web::rt::System::new().block_on(async move {
        let (server, addr) = server::start(&settings, state)?;
        tracing::info!(%addr, ?mode, "serving; driving the cluster");
        // If the driver already stopped, the receiver is gone: stop at once.
        if handle_tx.send(server.handle()).is_err() {
            server.handle().stop(true).await;
        }
        server.await.map_err(ServeError::Server)
    });
    stop.cancel();
    let driven = driver.join().map_err(|_| DrivingError::Panicked)?;
    driven?;
    Ok(served?)
}

/// Resolves on SIGTERM or SIGINT (never, if they cannot be watched: the
/// actix server still stops on them and then stops the driver).
async fn termination() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}
