//! `serve --drive` and `drive`: the actix-web server and the driver side by
//! side in one process.
//!
//! The runtimes are chosen deliberately: actix-web runs on its own System
//! (single-threaded arbiters, one per HTTP worker) in the main thread, as
//! `serve` always has; the driver (watchers, reflectors, workers, the lease)
//! runs on its own multi-threaded tokio runtime in a second thread. Neither
//! can starve the other, and the hook server without `--drive` is exactly
//! what it was. Shutdown: SIGTERM/SIGINT stop the driver first (reconciles
//! in progress finish, the Lease is released, so a standby takes over at
//! once); the servers go on serving for `--shutdown-delay-seconds`, so that
//! the pod's endpoints drop it before its port closes, then drain the
//! requests in flight (a second signal cuts the delay short). A driver that
//! stops by itself (a lost lease, a failed start) stops the servers at
//! once, and the process exits with its error.

use actix_web::dev::ServerHandle;
use actix_web::web;
use metahook_apiserver::{ApiServer, ApiSettings};
use metahook_core::Controller;
use metahook_driver::observe::metrics::DriverMetrics;
use metahook_driver::start::prepare::prepare;
use metahook_driver::start::run::{self, DriveError, DriveSettings};
use metahook_service::{AppState, Metrics, Registry, ServeError, Settings};
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Why `serve --drive` or `drive` stopped other than at a signal.
#[derive(Debug, thiserror::Error)]
pub enum SideBySideError {
    /// The driver could not start (a manifest, the cluster out of reach)
    /// or stopped (its Lease lost).
    #[error("the driver failed")]
    Drive(#[from] DriveError),
    /// The HTTP server (hooks, health, metrics) could not start or failed.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// The driver's runtime or thread could not start.
    #[error("starting the driver's runtime failed")]
    Runtime(#[source] std::io::Error),
    /// SIGTERM and SIGINT could not be watched.
    #[error("watching SIGTERM and SIGINT failed")]
    Signals(#[source] std::io::Error),
    /// The driver's thread panicked.
    #[error("the driver's thread panicked")]
    Panicked,
    /// The aggregated API (`--api-listen`) could not start.
    #[error("starting the aggregated API failed")]
    Api(#[from] metahook_apiserver::StartError),
    /// `/debug/driver` (`--debug-driver-listen`) could not listen.
    #[error("listening on {addr} for /debug/driver failed")]
    DebugListen {
        /// The address it was given.
        addr: std::net::SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Serves `served`'s hooks (none for `drive`) plus health and metrics,
/// drives the cluster — the controllers `declared`, unless the settings
/// name a directory of manifests — and serves the aggregated API if `api`
/// asks and `/debug/driver` if `debug` names its (loopback) address, until
/// SIGTERM (then the servers `delay` longer than the driver) or a fatal
/// driver error.
#[allow(clippy::too_many_arguments)]
pub fn serve_and_drive(
    mut settings: Settings,
    served: &'static [Controller],
    declared: &'static [Controller],
    drive_settings: DriveSettings,
    api: Option<ApiSettings>,
    debug: Option<std::net::SocketAddr>,
    delay: Duration,
) -> Result<(), SideBySideError> {
    // The manifests and hooks first: a bad file fails before anything
    // listens or connects.
    let prepared = prepare(
        drive_settings.controllers.as_deref(),
        drive_settings.mode,
        declared,
    )
    .map_err(DriveError::from)?;
    let (metrics, driver_metrics) = metrics();
    let state = hook_state(served, &settings, metrics);
    let view = drive_settings.view.clone();
    let stop = CancellationToken::new();
    let (handle_tx, handle_rx) = std::sync::mpsc::channel::<Vec<ServerHandle>>();

    let driver_state = state.clone();
    let driver_stop = stop.clone();
    let mode = drive_settings.mode;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("metahook-driver")
        .enable_all()
        .build()
        .map_err(SideBySideError::Runtime)?;
    // The signals are the driver thread's: it stops the servers after the
    // driver, not actix at the signal.
    let mut signals = {
        let _entered = runtime.enter();
        Signals::watch().map_err(SideBySideError::Signals)?
    };
    settings.stop_on_signals = false;
    // Its background tasks run on the driver's runtime; its server on the
    // actix System, beside the hooks'.
    let api = api
        .map(|api| ApiServer::start(&api, drive_settings.view.clone(), &runtime, stop.clone()))
        .transpose()?;
    let driver = std::thread::Builder::new()
        .name("metahook-driver".to_owned())
        .spawn(move || {
            // The driver's readiness is the service's gate: ready while
            // every cache is up to date.
            let set_ready: run::SetReady = Arc::new(move |caches| {
                driver_state.set_gate(caches.map(|caches| -> metahook_service::Gate {
                    Arc::new(move || caches.all_synced())
                }))
            });
            // The first signal stops the driver, a second one the delay.
            let (signalled, hurried) = (CancellationToken::new(), CancellationToken::new());
            let (first, second, stopping) =
                (signalled.clone(), hurried.clone(), driver_stop.clone());
            runtime.spawn(async move {
                signals.next().await;
                first.cancel();
                stopping.cancel();
                signals.next().await;
                second.cancel();
            });
            let result = runtime.block_on(run::drive(
                prepared,
                drive_settings,
                driver_metrics,
                set_ready,
                driver_stop,
            ));
            if let Err(err) = &result {
                tracing::error!(error = %metahook_driver::api_error_chain(err), "the driver stopped");
            }
            if signalled.is_cancelled() && !delay.is_zero() {
                tracing::info!(?delay, "serving a while longer before draining");
                runtime.block_on(async {
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = hurried.cancelled() => {}
                    }
                });
            }
            // Whatever ended the driver ends the servers too.
            if let Ok(handles) = handle_rx.recv() {
                for handle in handles {
                    runtime.block_on(handle.stop(true));
                }
            }
            result
        })
        .map_err(SideBySideError::Runtime)?;

    let served = actix_web::rt::System::new().block_on(async move {
        let (server, addr) = metahook_service::start(&settings, state)?;
        tracing::info!(%addr, ?mode, "serving; driving the cluster");
        // Servers beside the hooks': they have no signal handling of their
        // own, and the hook server's end (SIGTERM, or the driver stopping
        // it) ends them too.
        let mut beside = Vec::new();
        if let Some(api) = &api {
            let (api, addr) = api.server()?;
            tracing::info!(%addr, "serving the aggregated API (driver.metahook.dev/v1alpha1)");
            beside.push(api);
        }
        if let Some(listen) = debug {
            let (debug, addr) = crate::debug::server(view, listen).map_err(|source| {
                SideBySideError::DebugListen {
                    addr: listen,
                    source,
                }
            })?;
            tracing::info!(%addr, "serving /debug/driver");
            beside.push(debug);
        }
        let handles: Vec<ServerHandle> = std::iter::once(server.handle())
            .chain(beside.iter().map(|s| s.handle()))
            .collect();
        // If the driver already stopped, the receiver is gone: stop at once.
        if handle_tx.send(handles.clone()).is_err() {
            for handle in &handles {
                handle.stop(true).await;
            }
        }
        // A server runs once polled.
        let beside: Vec<_> = beside
            .into_iter()
            .map(|s| (s.handle(), actix_web::rt::spawn(s)))
            .collect();
        let served = server.await.map_err(ServeError::Server);
        for (handle, task) in beside {
            handle.stop(true).await;
            if let Ok(result) = task.await {
                result.map_err(ServeError::Server)?;
            }
        }
        Ok::<_, SideBySideError>(served?)
    });
    stop.cancel();
    let driven = driver.join().map_err(|_| SideBySideError::Panicked)?;
    driven?;
    served
}

/// The hook server's state: the hooks, health, metrics, gated on the
/// driver's readiness; nothing of the driver's view (`crate::debug`).
fn hook_state(
    controllers: &'static [Controller],
    settings: &Settings,
    metrics: Metrics,
) -> web::Data<AppState> {
    web::Data::new(AppState::with_metrics(controllers, settings, metrics).gated())
}

/// SIGTERM and SIGINT, watched from start-up on.
struct Signals {
    term: Signal,
    int: Signal,
}

impl Signals {
    /// Needs a tokio runtime entered.
    fn watch() -> std::io::Result<Self> {
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// Resolves at the next SIGTERM or SIGINT.
    async fn next(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}

/// One registry: the service's metrics, and the driver's in a sub-registry,
/// under `metahook_driver_*`; `/metrics` shows both.
fn metrics() -> (Metrics, Arc<DriverMetrics>) {
    let mut registry = Registry::with_prefix("metahook");
    let driver = Arc::new(DriverMetrics::register(
        registry.sub_registry_with_prefix("driver"),
    ));
    (Metrics::register(registry), driver)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_registry_serves_the_service_and_the_driver_under_their_names() {
        let (metrics, driver) = metrics();
        driver.queue_depth("hello", 3);
        let text = metrics.encode().unwrap();
        assert!(
            text.contains("metahook_driver_queue_depth{controller=\"hello\"} 3"),
            "{text}"
        );
        assert!(text.contains("metahook_hook_requests_in_flight"), "{text}");
    }

    /// The hook port is open to Metacontroller and Prometheus, and behind a
    /// service-mesh sidecar every request arrives from loopback: the
    /// driver's view is not there, whoever asks.
    #[actix_web::test]
    async fn the_hook_port_does_not_serve_the_driver_view() {
        use actix_web::{App, test};
        let settings = Settings::new("127.0.0.1:0".parse().unwrap());
        let state = hook_state(metahook_seeds::controllers(), &settings, metrics().0);
        let app = test::init_service(
            App::new().configure(move |cfg| metahook_service::configure(cfg, state)),
        )
        .await;
        for path in ["/debug/driver", "/debug/driver/reconciles"] {
            let local = test::TestRequest::get()
                .uri(path)
                .peer_addr("127.0.0.1:4000".parse().unwrap())
                .to_request();
            // 405 for the first: it has the shape of `/{controller}/{hook}`.
            let status = test::call_service(&app, local).await.status().as_u16();
            assert!(matches!(status, 404 | 405), "{path}: {status}");
        }
    }
}
