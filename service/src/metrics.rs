//! Prometheus metrics, served in the text format on `GET /metrics`
//! (`probes`). Label values come only from the controller table and the
//! status code, so their number is bounded whatever clients send.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub controller: &'static str,
    pub hook: &'static str,
    pub code: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HookLabels {
    pub controller: &'static str,
    pub hook: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabels {
    pub reason: &'static str,
}

type HistogramFamily = Family<HookLabels, Histogram, fn() -> Histogram>;

pub struct Metrics {
    /// Everything `/metrics` shows: these, and whatever else the process
    /// registered before handing it over (the driver's, under `--drive`).
    registry: Arc<Registry>,
    requests: Family<RequestLabels, Counter>,
    duration: HistogramFamily,
    pub in_flight: Gauge,
    /// Bytes of hook request bodies held now, kept by the memory budget.
    pub bytes_buffered: Gauge,
    /// `--max-buffered-bytes`, set once.
    pub bytes_budget: Gauge,
    refused: Family<RefusalLabels, Counter>,
    tls_refused: Family<RefusalLabels, Counter>,
}

fn latency_histogram() -> Histogram {
    // 25 µs to about 1.6 s: a hook answers in microseconds, a 1 MB request
    // in milliseconds.
    Histogram::new(exponential_buckets(0.000_025, 2.0, 17))
}

impl Metrics {
    /// The service's metrics in a registry of their own, `metahook_*`.
    pub fn new() -> Self {
        Self::register(Registry::with_prefix("metahook"))
    }

    /// Registers the service's metrics in `registry` (its other metrics,
    /// registered by the caller, are served on `/metrics` as well).
    pub fn register(mut registry: Registry) -> Self {
        let requests = Family::<RequestLabels, Counter>::default();
        let duration: HistogramFamily = Family::new_with_constructor(latency_histogram);
        let in_flight = Gauge::default();
        let bytes_buffered = Gauge::default();
        let bytes_budget = Gauge::default();
        let refused = Family::<RefusalLabels, Counter>::default();
        let tls_refused = Family::<RefusalLabels, Counter>::default();
        registry.register(
            "hook_requests",
            "Hook requests answered, by controller, hook and HTTP status code",
            requests.clone(),
        );
        registry.register(
            "hook_request_duration_seconds",
            "Time to answer a hook request, body read included",
            duration.clone(),
        );
        registry.register(
            "hook_requests_in_flight",
            "Hook requests being answered now",
            in_flight.clone(),
        );
        registry.register(
            "hook_request_bytes_buffered",
            "Bytes of hook request bodies held in memory now, counted against \
             metahook_hook_request_bytes_budget (--max-buffered-bytes)",
            bytes_buffered.clone(),
        );
        registry.register(
            "hook_request_bytes_budget",
            "The most bytes of hook request bodies held at once (--max-buffered-bytes)",
            bytes_budget.clone(),
        );
        registry.register(
            "hook_requests_refused",
            "Hook requests refused by a bound, by reason: Overloaded (--max-in-flight), \
             MemoryBudgetExceeded (--max-buffered-bytes), PayloadTooLarge (--max-body-bytes), \
             RequestTimeout (--request-timeout-seconds)",
            refused.clone(),
        );
        registry.register(
            "hook_tls_refusals",
            "TLS handshakes on the hook port that failed, by reason: the client certificate's \
             (unknown_ca, expired, not_yet_valid, bad_signature, bad_usage, name_constraints, \
             unsupported_certificate), peer_alert (the client refused ours), timeout, closed, \
             handshake (any other TLS error)",
            tls_refused.clone(),
        );
        Metrics {
            registry: Arc::new(registry),
            requests,
            duration,
            in_flight,
            bytes_buffered,
            bytes_budget,
            refused,
            tls_refused,
        }
    }

    pub fn observe(&self, controller: &'static str, hook: &'static str, code: u16, took: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                controller,
                hook,
                code,
            })
            .inc();
        self.duration
            .get_or_create(&HookLabels { controller, hook })
            .observe(took.as_secs_f64());
    }

    pub fn refused(&self, reason: &'static str) {
        self.refused.get_or_create(&RefusalLabels { reason }).inc();
    }

    /// A TLS handshake failed (`reason`: a [`metahook_tls::Refusal`]'s label).
    pub fn tls_refused(&self, reason: &'static str) {
        self.tls_refused
            .get_or_create(&RefusalLabels { reason })
            .inc();
    }

    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
