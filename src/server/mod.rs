//! The hook service: actix-web routes, limits, errors, health and metrics.
//!
//! `POST /{controller}/{hook}` runs a hook from the registry; `GET /healthz`,
//! `/readyz` and `/metrics` are for the kubelet and Prometheus.

mod body;
mod budget;
mod errors;
mod health;
mod hooks;
mod in_flight;
mod metrics;

pub use budget::Budget;
pub use errors::ApiError;
pub use in_flight::InFlight;
pub use metrics::Metrics;

use crate::cli::ServeArgs;
use actix_web::HttpMessage;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::{App, HttpServer, web};
use metahook_hooks::Controller;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tracing::Span;
use tracing_actix_web::{DefaultRootSpanBuilder, RequestId, RootSpanBuilder, TracingLogger};

/// Everything the service is configured with.
#[derive(Debug, Clone)]
pub struct Settings {
    pub listen: SocketAddr,
    pub max_body_bytes: usize,
    pub max_buffered_bytes: usize,
    pub max_in_flight: usize,
    pub max_connections: usize,
    pub request_timeout: Duration,
    pub shutdown_timeout: Duration,
    pub workers: Option<usize>,
}

impl From<ServeArgs> for Settings {
    fn from(args: ServeArgs) -> Self {
        Settings {
            listen: args.listen,
            max_body_bytes: args.max_body_bytes,
            max_buffered_bytes: args.max_buffered_bytes,
            max_in_flight: args.max_in_flight,
            max_connections: args.max_connections,
            request_timeout: Duration::from_secs(args.request_timeout_seconds),
            shutdown_timeout: Duration::from_secs(args.shutdown_timeout_seconds),
            workers: args.workers,
        }
    }
}

impl Settings {
    /// Defaults as the CLI has them, listening on `listen`.
    pub fn new(listen: SocketAddr) -> Self {
        Settings {
            listen,
            max_body_bytes: 32 * 1024 * 1024,
            max_buffered_bytes: 128 * 1024 * 1024,
            max_in_flight: 1024,
            max_connections: 256,
            request_timeout: Duration::from_secs(10),
            shutdown_timeout: Duration::from_secs(25),
            workers: None,
        }
    }
}

/// State shared by every worker.
pub struct AppState {
    pub controllers: &'static [Controller],
    pub max_body_bytes: usize,
    pub request_timeout: Duration,
    pub in_flight: InFlight,
    /// Bytes of request bodies held at once, across workers.
    pub budget: Budget,
    pub metrics: Metrics,
    /// Where hooks get `now` from: the system clock, or a pinned one in tests.
    pub clock: fn() -> jiff::Timestamp,
    ready: AtomicBool,
    /// With `--drive`, ready also needs the driver: asked on every
    /// `/readyz`, so it follows the driver's caches as they fall out of date
    /// and catch up. Not ready while there is none.
    needs_driver: bool,
    driver_gate: RwLock<Option<Gate>>,
}

/// Whether something the service depends on is ready now.
pub type Gate = Arc<dyn Fn() -> bool + Send + Sync>;

impl AppState {
    pub fn new(controllers: &'static [Controller], settings: &Settings) -> Self {
        let metrics = Metrics::new();
        let budget = Budget::new(settings.max_buffered_bytes, metrics.bytes_buffered.clone());
        metrics
            .bytes_budget
            .set(i64::try_from(budget.max()).unwrap_or(i64::MAX));
        if settings.max_body_bytes > budget.max() {
            tracing::warn!(
                max_body_bytes = settings.max_body_bytes,
                max_buffered_bytes = budget.max(),
                "--max-body-bytes is over --max-buffered-bytes: bodies larger than the budget get 413"
            );
        }
        AppState {
            controllers,
            max_body_bytes: settings.max_body_bytes,
            request_timeout: settings.request_timeout,
            in_flight: InFlight::new(settings.max_in_flight, metrics.in_flight.clone()),
            budget,
            metrics,
            clock: jiff::Timestamp::now,
            ready: AtomicBool::new(false),
            needs_driver: false,
            driver_gate: RwLock::new(None),
        }
    }

    /// The same state, ready only once the driver says so too, with the
    /// driver's metrics registered.
    pub fn gated_on_driver(mut self) -> Self {
        self.needs_driver = true;
        self.metrics.enable_driver();
        self
    }

    /// What `/readyz` asks the driver from now on (`None`: not ready).
    pub fn set_driver_gate(&self, gate: Option<Gate>) {
        *self.driver_gate.write().unwrap_or_else(|p| p.into_inner()) = gate;
    }

    /// The same state with hooks seeing `clock()` as the time.
    pub fn with_clock(mut self, clock: fn() -> jiff::Timestamp) -> Self {
        self.clock = clock;
        self
    }

    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
            && (!self.needs_driver
                || self
                    .driver_gate
                    .read()
                    .unwrap_or_else(|p| p.into_inner())
                    .as_ref()
                    .is_some_and(|gate| gate()))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("binding {addr} failed")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the HTTP server stopped with an error")]
    Server(#[source] std::io::Error),
}

/// Routes, for the real server and for in-process tests alike.
pub fn configure(cfg: &mut web::ServiceConfig, state: web::Data<AppState>) {
    let controllers = state.controllers;
    cfg.app_data(state)
        .configure(health::configure)
        .configure(metrics::configure)
        .configure(|cfg| hooks::configure(cfg, controllers))
        .default_service(web::to(errors::not_found));
}

/// Binds `settings.listen` and starts serving `state`; the returned server
/// runs until stopped (SIGTERM or SIGINT stop it gracefully).
pub fn start(
    settings: &Settings,
    state: web::Data<AppState>,
) -> Result<(actix_web::dev::Server, SocketAddr), ServeError> {
    let listener = TcpListener::bind(settings.listen).map_err(|source| ServeError::Bind {
        addr: settings.listen,
        source,
    })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: settings.listen,
        source,
    })?;
    let app_state = state.clone();
    let mut server = HttpServer::new(move || {
        let state = app_state.clone();
        App::new()
            .wrap(TracingLogger::<RequestSpan>::new())
            .configure(move |cfg| configure(cfg, state))
    })
    .client_request_timeout(settings.request_timeout)
    .shutdown_timeout(settings.shutdown_timeout.as_secs());
    // actix counts connections per worker.
    let workers = settings
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .max(1);
    server = server
        .workers(workers)
        .max_connections(settings.max_connections.div_ceil(workers).max(1));
    let server = server
        .listen(listener)
        .map_err(|source| ServeError::Bind {
            addr: settings.listen,
            source,
        })?
        .run();
    state.set_ready(true);
    Ok((server, addr))
}

/// The span every request runs in: method, path, peer, request id and
/// (at the end) status. The default span of `tracing-actix-web` records a
/// dozen OpenTelemetry fields, parses `Forwarded` headers and matches the
/// route a second time: 10% of a Hello sync's instructions, for fields a
/// hook service's logs do not need.
pub struct RequestSpan;

impl RootSpanBuilder for RequestSpan {
    fn on_request_start(request: &ServiceRequest) -> Span {
        let request_id = request.extensions().get::<RequestId>().copied();
        tracing::info_span!(
            "HTTP request",
            http.method = %request.method(),
            http.target = %request.path(),
            http.client_ip = request.peer_addr().map(|a| tracing::field::display(a.ip())),
            http.status_code = tracing::field::Empty,
            request_id = request_id.map(tracing::field::display),
            exception.message = tracing::field::Empty,
        )
    }

    fn on_request_end<B: MessageBody>(
        span: Span,
        outcome: &Result<ServiceResponse<B>, actix_web::Error>,
    ) {
        // Records the status code and, for errors, the message.
        DefaultRootSpanBuilder::on_request_end(span, outcome);
    }
}

/// Serves until SIGTERM or SIGINT, then drains requests in flight.
pub fn run_blocking(settings: Settings) -> Result<(), ServeError> {
    actix_web::rt::System::new().block_on(async move {
        let state = web::Data::new(AppState::new(metahook_hooks::CONTROLLERS, &settings));
        let (server, addr) = start(&settings, state)?;
        tracing::info!(%addr, "serving hooks");
        server.await.map_err(ServeError::Server)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn readiness_follows_the_driver_gate() {
        let settings = Settings::new(([127, 0, 0, 1], 0).into());
        let state = AppState::new(&[], &settings).gated_on_driver();
        state.set_ready(true);
        assert!(!state.is_ready(), "no driver yet");
        let caches_current = Arc::new(AtomicBool::new(true));
        let current = caches_current.clone();
        state.set_driver_gate(Some(Arc::new(move || current.load(Ordering::Acquire))));
        assert!(state.is_ready());
        caches_current.store(false, Ordering::Release);
        assert!(!state.is_ready(), "a cache fell out of date");
        caches_current.store(true, Ordering::Release);
        assert!(state.is_ready(), "and caught up");
        state.set_driver_gate(None);
        assert!(!state.is_ready(), "the driver stopped leading");
    }
}
