//! The driver's Prometheus metrics, registered in the service's registry
//! (served on `/metrics`). Every label value comes from the controller
//! manifests or a fixed set, so their number is bounded.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    pub controller: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RevisionLabels {
    pub controller: String,
    /// The hooks' declared revision: one per process.
    pub revision: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileLabels {
    pub controller: String,
    /// `ok`, `error`, `retry_after` (a hook's 429), `waiting` (a cache not
    /// yet synced), `stale` (a guarded patch met a newer object).
    pub result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HookCallLabels {
    pub controller: String,
    pub hook: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HookResultLabels {
    pub controller: String,
    pub hook: &'static str,
    /// `ok`, `error`, `too_many_requests`.
    pub result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApiLabels {
    pub controller: String,
    pub operation: &'static str,
    pub kind: String,
    /// HTTP status code, 200 for success, 0 when no response came.
    pub code: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CacheLabels {
    /// The watched type: `Kind.group/version` (from the manifests).
    pub resource: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CodeLabels {
    /// The HTTP status code, 0 when no answer came.
    pub code: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MethodLabels {
    /// The HTTP method, `WATCH` for a watch.
    pub method: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn reconcile_histogram() -> Histogram {
    // 1 ms to about 65 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

fn hook_histogram() -> Histogram {
    // 25 µs (in-process) to about 13 s (an HTTP hook near its timeout).
    Histogram::new(exponential_buckets(0.000_025, 2.0, 20))
}

/// Every driver metric; cheap to clone.
#[derive(Debug, Clone)]
pub struct DriverMetrics {
    reconciles: Family<ReconcileLabels, Counter>,
    reconcile_duration: Histograms<ControllerLabels>,
    hook_calls: Family<HookResultLabels, Counter>,
    hook_duration: Histograms<HookCallLabels>,
    queue_depth: Family<ControllerLabels, Gauge>,
    parents: Family<ControllerLabels, Gauge>,
    parents_answered: Family<RevisionLabels, Gauge>,
    api_operations: Family<ApiLabels, Counter>,
    api_requests: Family<MethodLabels, Counter>,
    api_responses: Family<CodeLabels, Counter>,
    api_throttled: Counter,
    api_throttled_seconds: Counter<f64, AtomicU64>,
    leader: Gauge,
    cache_synced: Family<CacheLabels, Gauge>,
    cache_relists: Family<CacheLabels, Counter>,
    longest_backoff: Family<ControllerLabels, Gauge<f64, AtomicU64>>,
    statuses_deferred: Family<ControllerLabels, Counter>,
    events_dropped: Counter,
}

impl Default for DriverMetrics {
    fn default() -> Self {
        DriverMetrics {
            reconciles: Family::default(),
            reconcile_duration: Family::new_with_constructor(reconcile_histogram),
            hook_calls: Family::default(),
            hook_duration: Family::new_with_constructor(hook_histogram),
            queue_depth: Family::default(),
            parents: Family::default(),
            parents_answered: Family::default(),
            api_operations: Family::default(),
            api_requests: Family::default(),
            api_responses: Family::default(),
            api_throttled: Counter::default(),
            api_throttled_seconds: Counter::default(),
            leader: Gauge::default(),
            cache_synced: Family::default(),
            cache_relists: Family::default(),
            longest_backoff: Family::default(),
            statuses_deferred: Family::default(),
            events_dropped: Counter::default(),
        }
    }
}

impl DriverMetrics {
    /// New metrics, registered in `registry`: the binary hands the driver
    /// a `driver` sub-registry, so they read `metahook_driver_*`.
    pub fn register(sub: &mut Registry) -> Self {
        let m = Self::default();
        sub.register(
            "reconciles",
            "Reconciles of a parent, by controller and result",
            m.reconciles.clone(),
        );
        sub.register(
            "reconcile_duration_seconds",
            "Time one reconcile took, hook call and API writes included",
            m.reconcile_duration.clone(),
        );
        sub.register(
            "hook_calls",
            "Hook calls by controller, hook and result",
            m.hook_calls.clone(),
        );
        sub.register(
            "hook_call_duration_seconds",
            "Hook call latency by controller and hook",
            m.hook_duration.clone(),
        );
        sub.register(
            "queue_depth",
            "Parents waiting in a controller's work queue",
            m.queue_depth.clone(),
        );
        sub.register(
            "parents",
            "Parents the controller handles, counted each time it queues them all (a start, a takeover, a resync)",
            m.parents.clone(),
        );
        sub.register(
            "parents_answered",
            "Parents whose last answer came from the hooks of this revision (of those above: the rollout's progress)",
            m.parents_answered.clone(),
        );
        sub.register(
            "api_operations",
            "API server writes (and uncached reads) by controller, operation, kind and status code",
            m.api_operations.clone(),
        );
        sub.register(
            "api_requests",
            "Every request the driver sent the API server, by method (WATCH for a watch)",
            m.api_requests.clone(),
        );
        sub.register(
            "api_responses",
            "Every answer of the API server to the driver, by status code, retried attempts included (429: the server throttled)",
            m.api_responses.clone(),
        );
        sub.register(
            "api_throttled_requests",
            "API requests that waited for the client-side budget (--kube-qps, --kube-burst)",
            m.api_throttled.clone(),
        );
        sub.register(
            "api_throttled_seconds",
            "Time API requests spent waiting for the client-side budget",
            m.api_throttled_seconds.clone(),
        );
        sub.register(
            "leader",
            "1 while this replica drives the controllers, else 0",
            m.leader.clone(),
        );
        sub.register(
            "cache_synced",
            "1 while a type's cache is up to date (listed, watch unbroken), else 0",
            m.cache_synced.clone(),
        );
        sub.register(
            "cache_relists",
            "Times a type's cache listed it again after its watch failed (410 Gone included)",
            m.cache_relists.clone(),
        );
        sub.register(
            "longest_backoff_seconds",
            "The longest a failed parent of the controller waits before its next try (0: none failing)",
            m.longest_backoff.clone(),
        );
        sub.register(
            "statuses_deferred",
            "Status changes left for a later pass while the client-side budget held back children's writes",
            m.statuses_deferred.clone(),
        );
        sub.register(
            "events_dropped",
            "Events not sent: over the per-object limit (--events-qps, --events-burst)",
            m.events_dropped.clone(),
        );
        m
    }

    pub fn longest_backoff(&self, controller: &str, backoff: Duration) {
        self.longest_backoff
            .get_or_create(&ControllerLabels {
                controller: controller.to_owned(),
            })
            .set(backoff.as_secs_f64());
    }

    pub fn cache_synced(&self, resource: &str, synced: bool) {
        self.cache_synced
            .get_or_create(&CacheLabels {
                resource: resource.to_owned(),
            })
            .set(i64::from(synced));
    }

    pub fn cache_relisted(&self, resource: &str) {
        self.cache_relists
            .get_or_create(&CacheLabels {
                resource: resource.to_owned(),
            })
            .inc();
    }

    pub fn reconciled(&self, controller: &str, result: &'static str, took: Duration) {
        self.reconciles
            .get_or_create(&ReconcileLabels {
                controller: controller.to_owned(),
                result,
            })
            .inc();
        self.reconcile_duration
            .get_or_create(&ControllerLabels {
                controller: controller.to_owned(),
            })
            .observe(took.as_secs_f64());
    }

    pub fn hook_called(
        &self,
        controller: &str,
        hook: &'static str,
        result: &'static str,
        took: Duration,
    ) {
        self.hook_calls
            .get_or_create(&HookResultLabels {
                controller: controller.to_owned(),
                hook,
                result,
            })
            .inc();
        self.hook_duration
            .get_or_create(&HookCallLabels {
                controller: controller.to_owned(),
                hook,
            })
            .observe(took.as_secs_f64());
    }

    pub fn queue_depth(&self, controller: &str, depth: usize) {
        self.queue_depth
            .get_or_create(&ControllerLabels {
                controller: controller.to_owned(),
            })
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    /// The parents the controller handles, all counted.
    pub fn parents(&self, controller: &str, parents: usize) {
        self.parents
            .get_or_create(&ControllerLabels {
                controller: controller.to_owned(),
            })
            .set(i64::try_from(parents).unwrap_or(i64::MAX));
    }

    /// The parents the hooks of `revision` answered last.
    pub fn parents_answered(&self, controller: &str, revision: &str, parents: usize) {
        self.parents_answered
            .get_or_create(&RevisionLabels {
                controller: controller.to_owned(),
                revision: revision.to_owned(),
            })
            .set(i64::try_from(parents).unwrap_or(i64::MAX));
    }

    pub fn api_operation(&self, controller: &str, operation: &'static str, kind: &str, code: u16) {
        self.api_operations
            .get_or_create(&ApiLabels {
                controller: controller.to_owned(),
                operation,
                kind: kind.to_owned(),
                code,
            })
            .inc();
    }

    /// One request sent to the API server.
    pub fn api_request(&self, method: &'static str) {
        self.api_requests
            .get_or_create(&MethodLabels { method })
            .inc();
    }

    /// One answer of the API server (0: none came).
    pub fn api_response(&self, code: u16) {
        self.api_responses.get_or_create(&CodeLabels { code }).inc();
    }

    #[cfg(test)]
    pub fn api_responses_for_tests(&self, code: u16) -> u64 {
        self.api_responses.get_or_create(&CodeLabels { code }).get()
    }

    /// A parent's status change was left for a later pass.
    pub fn status_deferred(&self, controller: &str) {
        self.statuses_deferred
            .get_or_create(&ControllerLabels {
                controller: controller.to_owned(),
            })
            .inc();
    }

    /// An Event over its object's limit was not sent.
    pub fn event_dropped(&self) {
        self.events_dropped.inc();
    }

    /// One request that waited `waited` for the client-side budget.
    pub fn api_throttled(&self, waited: Duration) {
        self.api_throttled.inc();
        self.api_throttled_seconds.inc_by(waited.as_secs_f64());
    }

    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_exposed_under_metahook_driver() {
        let mut registry = Registry::with_prefix("metahook");
        let m = DriverMetrics::register(registry.sub_registry_with_prefix("driver"));
        m.reconciled("hello", "ok", Duration::from_millis(3));
        m.hook_called("hello", "sync", "ok", Duration::from_micros(40));
        m.queue_depth("hello", 2);
        m.api_operation("hello", "apply", "Deployment", 200);
        m.set_leader(true);
        m.parents("hello", 50);
        m.parents_answered("hello", "0.2.0", 12);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            "metahook_driver_reconciles_total{controller=\"hello\",result=\"ok\"} 1",
            "metahook_driver_hook_calls_total{controller=\"hello\",hook=\"sync\",result=\"ok\"} 1",
            "metahook_driver_queue_depth{controller=\"hello\"} 2",
            "metahook_driver_api_operations_total{controller=\"hello\",operation=\"apply\",kind=\"Deployment\",code=\"200\"} 1",
            "metahook_driver_leader 1",
            "metahook_driver_parents{controller=\"hello\"} 50",
            "metahook_driver_parents_answered{controller=\"hello\",revision=\"0.2.0\"} 12",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        assert!(
            text.contains(
                "metahook_driver_reconcile_duration_seconds_count{controller=\"hello\"} 1"
            )
        );
        assert!(text.contains(
            "metahook_driver_hook_call_duration_seconds_count{controller=\"hello\",hook=\"sync\"} 1"
        ));
    }
}
