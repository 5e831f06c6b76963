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
//! - `settings` ([`Settings`]); `state`: what every worker shares
//!   ([`AppState`]); `routes`: the routes ([`configure`]) and the app
//!   around them; `server`: binding and serving them ([`start`]);
//!   `request_span`: the span each request is logged in;
//! - `hooks`: the hook routes, one static route per hook of the table;
//!   `body`: a request's body, JSON only, bounded in size and time;
//!   `budget`: the process-wide [`MemoryBudget`] for the bodies held;
//!   `in_flight`: the bound on requests at once ([`InFlight`]);
//! - `errors`: every refusal as a status and a JSON body that says what
//!   to fix ([`RequestError`]);
//! - `probes`: `/healthz`, `/readyz` and `/metrics`; `metrics`: the
//!   Prometheus metrics ([`Metrics`]);
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
mod hooks;
mod in_flight;
mod metrics;
mod probes;
mod request_span;
mod routes;
mod server;
mod settings;
mod state;
pub mod tls;
mod tls_listener;
mod tls_refusals;
mod token;
mod trace_context;

pub use budget::MemoryBudget;
pub use errors::RequestError;
pub use in_flight::InFlight;
pub use metrics::Metrics;
pub use prometheus_client::registry::Registry;
pub use request_span::RequestSpan;
pub use routes::configure;
pub use server::{ServeError, run_blocking, start};
pub use settings::{Settings, defaults};
pub use state::{AppState, Gate, Routes};
pub use tls::TlsSettings;
pub use token::TokenError;
pub use trace_context::continue_traces;
