//! The driver seen from outside: Prometheus [`metrics`], trace IDs and
//! `traceparent` ([`otel`]), the last reconcile of each parent
//! ([`records`]) as JSON ([`view`]), and `metahook render --plan`
//! ([`preview`]: a record of what the driver would do, offline), and
//! `metahook plan --live` ([`live`]: the same for every parent in the
//! cluster, read-only).

pub mod live;
pub mod metrics;
pub mod otel;
pub use metahook_planner::preview;
pub mod records;
pub mod view;
