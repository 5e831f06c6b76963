//! metahook's Kubernetes aggregated API: the driver's reconcile records as
//! `driver.metahook.dev/v1alpha1` `Reconcile`s.
//!
//! Read-only (get, list), served over HTTPS on a port of their own behind
//! kube-apiserver's aggregation layer, so that `kubectl get reconciles -A`
//! shows what the driver last did to every parent, and why, to whoever
//! RBAC lets see it.
//!
//! What a request goes through, in order (docs/architecture.md):
//! [`tls`] (the serving certificate, reloaded when its files change; the
//! client certificate taken for later) → [`front_proxy`] (the aggregator's
//! certificate checked against the request-header CA of
//! `kube-system/extension-apiserver-authentication`, then the user from its
//! headers) → [`authorize`] (a SubjectAccessReview, cached briefly) →
//! [`routes`] (discovery, OpenAPI, the resource, as JSON or a Table).
//!
//! - [`serve`]: starting it all ([`ApiServer`]); [`state`]: what the
//!   routes read (the driver's records, who is asking);
//! - [`discovery`] and [`openapi`]: the documents the aggregator and
//!   kubectl fetch; [`negotiate`]: JSON, a Table or metadata, by `Accept`;
//! - [`object`]: a record as a `Reconcile`; [`table`]: as kubectl's
//!   columns; [`selectors`]: `labelSelector` and `fieldSelector`;
//!   [`names`]: which names can exist, checked before any review;
//! - [`status`]: every failure as a Kubernetes `Status` ([`status::StatusError`]).
//!
//! ## Example
//!
//! Served beside a running driver (a cluster, a certificate directory):
//!
//! ```no_run
//! use metahook_apiserver::{ApiServer, ApiSettings};
//! use metahook_driver::observe::view::View;
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! let settings = ApiSettings {
//!     listen: "0.0.0.0:6443".parse()?,
//!     tls_dir: "/etc/metahook/api-tls".into(),
//!     reload_every: Duration::from_secs(10),
//!     limits: Default::default(),
//! };
//! let runtime = tokio::runtime::Runtime::new()?;
//! let stop = tokio_util::sync::CancellationToken::new();
//! // The driver fills the view while it leads.
//! let api = ApiServer::start(&settings, Arc::new(View::default()), &runtime, stop)?;
//! actix_web::rt::System::new().block_on(async {
//!     let (server, _addr) = api.server()?;
//!     server.await?;
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A failure, as kubectl reads it:
//!
//! ```
//! use metahook_apiserver::status::StatusError;
//!
//! let missing = StatusError::NotFound { name: "hello.web".to_owned() };
//! let status = serde_json::to_value(missing.body())?;
//! assert_eq!(status["kind"], "Status");
//! assert_eq!(status["reason"], "NotFound");
//! assert_eq!(status["code"], 404);
//! assert_eq!(status["details"]["name"], "hello.web");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

pub mod authorize;
pub mod discovery;
pub mod front_proxy;
pub mod names;
pub mod negotiate;
pub mod object;
pub mod openapi;
mod resource;
pub mod routes;
pub mod selectors;
pub mod serve;
pub mod state;
pub mod status;
pub mod table;
pub mod tls;

pub use resource::{GROUP, GROUP_VERSION, KIND, LIST_KIND, RESOURCE, SINGULAR, VERSION};
pub use serve::{ApiServer, ApiSettings, StartError};
