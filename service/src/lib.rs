//! metahook's hook service: Metacontroller's sync, finalize and customize
//! webhooks over actix-web, with limits, errors, health and metrics.
//!
//! `POST /{controller}/{hook}` runs a hook from the registry; `GET /healthz`,
//! `/readyz` and `/metrics` are for the kubelet and Prometheus. No
//! Kubernetes client, no driver: whatever else the process runs reaches the
//! service as a readiness [`Gate`] and as metrics in the registry it hands
//! over. Every request is bounded (in flight, bytes held, time), so a
//! burst or a hostile client costs a 429 or a 413, not the process.
//!
//! The modules, all private but [`tls`]:
//!
//! - `hooks`: the hook routes, one static route per hook of the table;
//!   `body`: a request's body, JSON only, bounded in size and time;
//!   `budget`: the process-wide [`MemoryBudget`] for the bodies held;
//!   `in_flight`: the bound on requests at once ([`InFlight`]);
//! - `errors`: every refusal as a status and a JSON body that says what
//!   to fix ([`RequestError`]);
//! - `health`: `/healthz` and `/readyz`; `metrics`: Prometheus' text on
//!   `/metrics` ([`Metrics`]);
//! - [`tls`]: HTTPS with `--tls-dir`; `tls_listener`: its listener, whose
//!   failed handshakes `tls_refusals` counts and logs with the peer and
//!   the reason; `auth` and `token`: with `--tls-client-auth` or
//!   `--auth-token-file`, only callers that present a client certificate
//!   or the token reach the hooks.
//!
//! ## Example
//!
//! The routes in-process, as the service's tests call them:
//!
//! ```
//! use actix_web::{App, test, web};
//! use metahook_service::{AppState, Settings, configure};
//!
//! actix_web::rt::System::new().block_on(async {
//!     let settings = Settings::new("127.0.0.1:0".parse().unwrap());
//!     let state = web::Data::new(AppState::new(metahook_seeds::controllers(), &settings));
//!     let app = test::init_service(App::new().configure(|cfg| configure(cfg, state))).await;
//!
//!     let health = test::TestRequest::get().uri("/healthz").to_request();
//!     let body: serde_json::Value = test::call_and_read_body_json(&app, health).await;
//!     assert_eq!(body["status"], "ok");
//!
//!     // A hook that does not exist is named, with those that do.
//!     let typo = test::TestRequest::post().uri("/helo/sync").to_request();
//!     let answer = test::call_service(&app, typo).await;
//!     assert_eq!(answer.status(), 404);
//!     let body: serde_json::Value = test::read_body_json(answer).await;
//!     assert_eq!(body["reason"], "UnknownController");
//! });
//! ```
#![forbid(unsafe_code)]

mod auth;
mod body;
mod budget;
mod errors;
mod health;
mod hooks;
mod in_flight;
mod metrics;
pub mod tls;
mod tls_listener;
mod tls_refusals;
mod token;
mod trace_context;
pub use trace_context::continue_traces;

pub use budget::MemoryBudget;
pub use errors::RequestError;
pub use in_flight::InFlight;
pub use metrics::Metrics;
pub use prometheus_client::registry::Registry;
pub use tls::TlsSettings;
pub use token::TokenError;

use actix_web::HttpMessage;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::{App, HttpServer, web};
use metahook_core::Controller;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
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
    /// HTTPS, and perhaps client certificates (`--tls-dir`).
    pub tls: Option<TlsSettings>,
    /// A file holding the bearer token callers must send.
    pub auth_token_file: Option<PathBuf>,
    /// How often the certificate files and the token file are re-read. A
    /// mounted Secret is updated by the kubelet within about a minute.
    pub reload_every: Duration,
    /// Whether SIGTERM and SIGINT stop the server. `serve --drive` turns
    /// it off and stops the server itself, once the driver has stopped.
    pub stop_on_signals: bool,
}

/// The defaults of every setting: the command line's defaults are these.
pub mod defaults {
    /// Metacontroller sends every child whole.
    pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
    /// Half of the chart's 256 MiB memory limit (docs/robustness.md).
    pub const MAX_BUFFERED_BYTES: usize = 128 * 1024 * 1024;
    pub const MAX_IN_FLIGHT: usize = 1024;
    pub const MAX_CONNECTIONS: usize = 256;
    pub const REQUEST_TIMEOUT_SECONDS: u64 = 10;
    /// Within Kubernetes' default 30 s termination grace period.
    pub const SHUTDOWN_TIMEOUT_SECONDS: u64 = 25;
    pub const RELOAD_SECONDS: u64 = 10;
}

impl Settings {
    /// The defaults, listening on `listen`.
    pub fn new(listen: SocketAddr) -> Self {
        Settings {
            listen,
            max_body_bytes: defaults::MAX_BODY_BYTES,
            max_buffered_bytes: defaults::MAX_BUFFERED_BYTES,
            max_in_flight: defaults::MAX_IN_FLIGHT,
            max_connections: defaults::MAX_CONNECTIONS,
            request_timeout: Duration::from_secs(defaults::REQUEST_TIMEOUT_SECONDS),
            shutdown_timeout: Duration::from_secs(defaults::SHUTDOWN_TIMEOUT_SECONDS),
            workers: None,
            tls: None,
            auth_token_file: None,
            reload_every: Duration::from_secs(defaults::RELOAD_SECONDS),
            stop_on_signals: true,
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
    pub budget: MemoryBudget,
    pub metrics: Metrics,
    /// Where hooks get `now` from: the system clock, or a pinned one in tests.
    pub clock: fn() -> jiff::Timestamp,
    ready: AtomicBool,
    /// Set by [`AppState::gated`]: ready also needs the gate, asked on
    /// every `/readyz` (so it follows, say, a driver's caches as they fall
    /// out of date and catch up). Not ready while there is none.
    gated: bool,
    gate: RwLock<Option<Gate>>,
    /// Routes the process adds beside the hooks (set by [`AppState::with_routes`]).
    routes: Option<Routes>,
}

/// Whether something the service depends on is ready now.
pub type Gate = Arc<dyn Fn() -> bool + Send + Sync>;

/// Routes of the process's own, served beside the hooks (the binary's
/// `/debug/driver`): the service knows nothing of what they serve.
pub type Routes = Arc<dyn Fn(&mut web::ServiceConfig) + Send + Sync>;

impl AppState {
    /// The service alone, its metrics in a registry of their own.
    pub fn new(controllers: &'static [Controller], settings: &Settings) -> Self {
        Self::with_metrics(controllers, settings, Metrics::new())
    }

    /// With `metrics` registered in a registry the caller shares.
    pub fn with_metrics(
        controllers: &'static [Controller],
        settings: &Settings,
        metrics: Metrics,
    ) -> Self {
        let budget = MemoryBudget::new(settings.max_buffered_bytes, metrics.bytes_buffered.clone());
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
            gated: false,
            gate: RwLock::new(None),
            routes: None,
        }
    }

    /// The same state, serving `routes` too.
    pub fn with_routes(mut self, routes: Routes) -> Self {
        self.routes = Some(routes);
        self
    }

    /// The same state, ready only while a gate says so too.
    pub fn gated(mut self) -> Self {
        self.gated = true;
        self
    }

    /// What `/readyz` asks from now on (`None`: not ready).
    pub fn set_gate(&self, gate: Option<Gate>) {
        *self.gate.write().unwrap_or_else(|p| p.into_inner()) = gate;
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
            && (!self.gated
                || self
                    .gate
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
    #[error("the hook service's certificates (--tls-dir)")]
    Tls(#[from] metahook_tls::TlsError),
    #[error("the hook service's token (--auth-token-file)")]
    Token(#[from] TokenError),
}

/// An error and its sources, one after another: "a: b: c".
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Routes, for the real server and for in-process tests alike.
pub fn configure(cfg: &mut web::ServiceConfig, state: web::Data<AppState>) {
    let controllers = state.controllers;
    // The process's own routes first: the hooks' `/{controller}/{hook}`
    // would otherwise answer any two-segment path.
    if let Some(routes) = state.routes.clone() {
        routes(cfg);
    }
    cfg.app_data(state)
        .configure(health::configure)
        .configure(metrics::configure)
        .configure(|cfg| hooks::configure(cfg, controllers))
        .default_service(web::to(errors::not_found));
}

/// The app every worker serves: the routes, behind the callers' check
/// and, outermost, the request log (refused requests are logged too).
fn app(
    state: web::Data<AppState>,
    callers: Arc<auth::Callers>,
) -> App<
    impl actix_web::dev::ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .wrap(actix_web::middleware::from_fn(move |request, next| {
            auth::require(callers.clone(), request, next)
        }))
        .wrap(TracingLogger::<RequestSpan>::new())
        .configure(move |cfg| configure(cfg, state))
}

/// Binds `settings.listen` and starts serving `state`; the returned server
/// runs until stopped (SIGTERM or SIGINT stop it gracefully, unless
/// `settings.stop_on_signals` is off).
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
    let https = settings.tls.as_ref().map(tls::Https::load).transpose()?;
    let token = settings
        .auth_token_file
        .as_deref()
        .map(token::TokenFile::load)
        .transpose()?
        .map(Arc::new);
    let callers = Arc::new(auth::Callers {
        client_cert: settings.tls.as_ref().is_some_and(|t| t.client_auth),
        token: token.clone(),
    });
    let workers = settings
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .max(1);
    // actix counts connections per worker.
    let max_connections = settings.max_connections.div_ceil(workers).max(1);
    let app_state = state.clone();
    let new_app = move || app(app_state.clone(), callers.clone());
    let bind_err = |source| ServeError::Bind {
        addr: settings.listen,
        source,
    };
    let server = match &https {
        Some(https) => tls_listener::serve(
            listener,
            https.server_config()?,
            new_app,
            &tls_listener::Bounds {
                workers,
                max_connections,
                request_timeout: settings.request_timeout,
                shutdown_timeout: settings.shutdown_timeout,
                stop_on_signals: settings.stop_on_signals,
            },
            Arc::new(tls_refusals::TlsRefusals::new(state.clone())),
        )
        .map_err(bind_err)?,
        None => {
            let mut server = HttpServer::new(new_app)
                .client_request_timeout(settings.request_timeout)
                .shutdown_timeout(settings.shutdown_timeout.as_secs())
                .workers(workers)
                .max_connections(max_connections);
            if !settings.stop_on_signals {
                server = server.disable_signals();
            }
            server.listen(listener).map_err(bind_err)?.run()
        }
    };
    if https.is_some() || token.is_some() {
        actix_web::rt::spawn(reload(https, token, settings.reload_every));
    }
    state.set_ready(true);
    Ok((server, addr))
}

/// Re-reads the certificate and token files every `every`, for as long as
/// the actix System runs.
async fn reload(https: Option<tls::Https>, token: Option<Arc<token::TokenFile>>, every: Duration) {
    let mut ticks = actix_web::rt::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        if let Some(https) = &https {
            https.reload();
        }
        if let Some(token) = &token {
            token.reload_logged();
        }
    }
}

/// The span every request runs in: method, path, peer, request id and
/// (at the end) status. The default span of `tracing-actix-web` records a
/// dozen OpenTelemetry fields, parses `Forwarded` headers and matches the
/// route a second time (docs/performance.md has the cost), for fields a
/// hook service's logs do not need.
pub struct RequestSpan;

impl RootSpanBuilder for RequestSpan {
    fn on_request_start(request: &ServiceRequest) -> Span {
        let request_id = request.extensions().get::<RequestId>().copied();
        let span = tracing::info_span!(
            "HTTP request",
            http.method = %request.method(),
            http.target = %request.path(),
            http.client_ip = request.peer_addr().map(|a| tracing::field::display(a.ip())),
            http.status_code = tracing::field::Empty,
            request_id = request_id.map(tracing::field::display),
            exception.message = tracing::field::Empty,
            otel.kind = "server",
            trace_id = tracing::field::Empty,
        );
        trace_context::continue_caller(&span, request.headers());
        span
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
pub fn run_blocking(
    settings: Settings,
    controllers: &'static [Controller],
) -> Result<(), ServeError> {
    actix_web::rt::System::new().block_on(async move {
        let state = web::Data::new(AppState::new(controllers, &settings));
        let (server, addr) = start(&settings, state)?;
        tracing::info!(%addr, https = settings.tls.is_some(), "serving hooks");
        server.await.map_err(ServeError::Server)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn readiness_follows_the_gate() {
        let settings = Settings::new(([127, 0, 0, 1], 0).into());
        let state = AppState::new(&[], &settings).gated();
        state.set_ready(true);
        assert!(!state.is_ready(), "no driver yet");
        let caches_current = Arc::new(AtomicBool::new(true));
        let current = caches_current.clone();
        state.set_gate(Some(Arc::new(move || current.load(Ordering::Acquire))));
        assert!(state.is_ready());
        caches_current.store(false, Ordering::Release);
        assert!(!state.is_ready(), "a cache fell out of date");
        caches_current.store(true, Ordering::Release);
        assert!(state.is_ready(), "and caught up");
        state.set_gate(None);
        assert!(!state.is_ready(), "the driver stopped leading");
    }
}
