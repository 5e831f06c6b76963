//! What every worker shares: the controllers, the bounds, the metrics, the
//! clock, and whether the process is ready.

use crate::budget::MemoryBudget;
use crate::in_flight::InFlight;
use crate::metrics::Metrics;
use crate::settings::Settings;
use actix_web::web;
use metahook_core::Controller;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

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
    pub(crate) routes: Option<Routes>,
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

#[cfg(test)]
mod tests {
    use super::*;

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
