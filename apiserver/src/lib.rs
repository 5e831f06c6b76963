//! The driver's reconcile records as a Kubernetes aggregated API:
//! `driver.metahook.dev/v1alpha1` `Reconcile`s, read-only (get, list),
//! served over HTTPS on a port of their own behind kube-apiserver's
//! aggregation layer, so that `kubectl get reconciles -A` shows what the
//! driver last did to every parent, and why.
//!
//! What a request goes through, in order (docs/architecture.md):
//! `tls` (the serving certificate, reloaded when its files change; the
//! client certificate taken for later) → `front_proxy` (the aggregator's
//! certificate checked against the request-header CA of
//! `kube-system/extension-apiserver-authentication`, then the user from its
//! headers) → `authorize` (a SubjectAccessReview, cached briefly) →
//! `routes` (discovery, OpenAPI, the resource, as JSON or a Table).
#![forbid(unsafe_code)]

pub mod authorize;
pub mod discovery;
pub mod front_proxy;
pub mod names;
pub mod negotiate;
pub mod object;
pub mod openapi;
pub mod routes;
pub mod selectors;
pub mod serve;
pub mod state;
pub mod status;
pub mod table;
pub mod tls;

/// The API group the project owns, its one version, the resource.
pub const GROUP: &str = "driver.metahook.dev";
pub const VERSION: &str = "v1alpha1";
pub const GROUP_VERSION: &str = "driver.metahook.dev/v1alpha1";
pub const RESOURCE: &str = "reconciles";
pub const SINGULAR: &str = "reconcile";
pub const KIND: &str = "Reconcile";
pub const LIST_KIND: &str = "ReconcileList";

pub use serve::{ApiServer, ApiSettings, StartError};
