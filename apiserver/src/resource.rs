//! The API group the project owns, its one version, the resource: the
//! names every document and route is built from.

/// The API group the project owns, its one version, the resource.
pub const GROUP: &str = "driver.metahook.dev";
pub const VERSION: &str = "v1alpha1";
pub const GROUP_VERSION: &str = "driver.metahook.dev/v1alpha1";
pub const RESOURCE: &str = "reconciles";
pub const SINGULAR: &str = "reconcile";
pub const KIND: &str = "Reconcile";
pub const LIST_KIND: &str = "ReconcileList";
