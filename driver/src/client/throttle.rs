//! The driver's client-side budget for API requests, Metacontroller's
//! `--client-go-qps` / `--client-go-burst` (docs/metacontroller.md §5): a token
//! bucket of `burst` requests refilled at `qps` a second, in front of every
//! request the kube `Client` sends — lists and watches included, as
//! client-go's limiter is (a watch spends a token when it starts, not while
//! it streams).
//!
//! The accounting is the `governor` crate's (GCRA, which admits exactly what
//! such a token bucket admits); the clock and the waiting are tokio's, so a
//! test with a paused clock drives it. The layer also counts every request
//! by method, throttled or not.

use crate::client::pressure::{self, Pressure};
use crate::observe::metrics::DriverMetrics;
use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use std::future::Future;
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

/// `--kube-qps` and `--kube-burst`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    pub qps: f64,
    pub burst: NonZeroU32,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BudgetError {
    #[error(
        "a rate (--kube-qps, --events-qps) must be a number per second above 0 and at most 1e9, not {0}"
    )]
    Qps(f64),
}

impl Budget {
    pub fn new(qps: f64, burst: NonZeroU32) -> Result<Self, BudgetError> {
        // One request per nanosecond is governor's finest period.
        if qps.is_finite() && qps > 0.0 && qps <= 1e9 {
            Ok(Budget { qps, burst })
        } else {
            Err(BudgetError::Qps(qps))
        }
    }

    pub(crate) fn quota(&self) -> Quota {
        let period = Duration::from_secs_f64(1.0 / self.qps).max(Duration::from_nanos(1));
        // `with_period` is `None` only for a zero period, excluded above.
        Quota::with_period(period)
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
            .allow_burst(self.burst)
    }
}

/// tokio's clock for governor, in nanoseconds since the limiter was made.
#[derive(Debug, Clone)]
pub(crate) struct TokioClock {
    origin: Instant,
}

impl TokioClock {
    pub(crate) fn new() -> Self {
        TokioClock {
            origin: Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    type Instant = Nanos;

    fn now(&self) -> Nanos {
        Nanos::from(self.origin.elapsed())
    }
}

type Limiter = RateLimiter<NotKeyed, InMemoryState, TokioClock, NoOpMiddleware<Nanos>>;

/// Wraps the kube client's service stack; `budget: None` only counts.
#[derive(Clone)]
pub struct ThrottleLayer {
    limiter: Option<Arc<Limiter>>,
    metrics: Arc<DriverMetrics>,
    pressure: Pressure,
}

impl ThrottleLayer {
    pub fn new(budget: Option<Budget>, metrics: Arc<DriverMetrics>) -> Self {
        let limiter =
            budget.map(|b| Arc::new(RateLimiter::direct_with_clock(b.quota(), TokioClock::new())));
        ThrottleLayer {
            limiter,
            metrics,
            pressure: Pressure::default(),
        }
    }

    /// Whether converging writes are waiting on this layer's budget.
    pub fn pressure(&self) -> Pressure {
        self.pressure.clone()
    }
}

impl<S> Layer<S> for ThrottleLayer {
    type Service = Throttle<S>;

    fn layer(&self, inner: S) -> Throttle<S> {
        Throttle {
            inner,
            limiter: self.limiter.clone(),
            metrics: Arc::clone(&self.metrics),
            pressure: self.pressure.clone(),
            sleep: None,
            waiting_since: None,
            permitted: false,
            waited: false,
        }
    }
}

/// Readiness waits for a token: kube's `Client` puts a buffer in front of
/// its stack whose one worker polls readiness before each call, so requests
/// queue there in order and each takes a token as it leaves.
pub struct Throttle<S> {
    inner: S,
    limiter: Option<Arc<Limiter>>,
    metrics: Arc<DriverMetrics>,
    pressure: Pressure,
    sleep: Option<Pin<Box<Sleep>>>,
    waiting_since: Option<Instant>,
    /// A token was taken for the next call.
    permitted: bool,
    /// The next call waited for its token.
    waited: bool,
}

impl<S, B> Service<http::Request<B>> for Throttle<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        if let Some(limiter) = &self.limiter {
            while !self.permitted {
                if let Some(sleep) = self.sleep.as_mut() {
                    ready!(sleep.as_mut().poll(cx));
                    self.sleep = None;
                }
                match limiter.check() {
                    Ok(()) => {
                        self.permitted = true;
                        if let Some(since) = self.waiting_since.take() {
                            self.metrics.api_throttled(since.elapsed());
                            self.waited = true;
                        }
                    }
                    Err(not_until) => {
                        let wait = not_until.wait_time_from(limiter.clock().now());
                        self.waiting_since.get_or_insert_with(Instant::now);
                        self.sleep = Some(Box::pin(tokio::time::sleep(wait)));
                    }
                }
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> S::Future {
        self.permitted = false;
        if std::mem::take(&mut self.waited) {
            self.pressure.waited(pressure::converging(&request));
        }
        self.metrics.api_request(method(&request));
        self.inner.call(request)
    }
}

/// The request's method, `WATCH` for a watch (a GET with `watch=true` or
/// `watch=1`), from a fixed set so the metric's labels stay bounded.
fn method<B>(request: &http::Request<B>) -> &'static str {
    let watch = request.uri().query().is_some_and(|q| {
        q.split('&')
            .any(|pair| pair == "watch=true" || pair == "watch=1")
    });
    match *request.method() {
        http::Method::GET if watch => "WATCH",
        http::Method::GET => "GET",
        http::Method::POST => "POST",
        http::Method::PUT => "PUT",
        http::Method::PATCH => "PATCH",
        http::Method::DELETE => "DELETE",
        _ => "OTHER",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::registry::Registry;
    use std::convert::Infallible;
    use std::sync::Mutex;
    use tower::ServiceExt;

    /// A service that notes when (tokio time) each request reached it.
    fn recorder(
        seen: Arc<Mutex<Vec<Duration>>>,
        origin: Instant,
    ) -> impl Service<
        http::Request<()>,
        Response = (),
        Error = Infallible,
        Future = std::future::Ready<Result<(), Infallible>>,
    > + Clone {
        tower::service_fn(move |_request: http::Request<()>| {
            seen.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(origin.elapsed());
            std::future::ready(Ok(()))
        })
    }

    /// Waits for the service's readiness (its token), then calls it.
    async fn send<S>(service: &mut S, request: http::Request<()>)
    where
        S: Service<http::Request<()>, Response = (), Error = Infallible>,
    {
        service.ready().await.unwrap().call(request).await.unwrap();
    }

    fn get(path: &str) -> http::Request<()> {
        http::Request::get(path).body(()).unwrap()
    }

    fn metrics_text(registry: &Registry) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        text
    }

    #[tokio::test(start_paused = true)]
    async fn requests_past_the_burst_wait_for_tokens() {
        let mut registry = Registry::with_prefix("metahook");
        let metrics = Arc::new(DriverMetrics::register(
            registry.sub_registry_with_prefix("driver"),
        ));
        let origin = Instant::now();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let budget = Budget::new(5.0, NonZeroU32::new(10).unwrap()).unwrap();
        let mut service =
            ThrottleLayer::new(Some(budget), metrics).layer(recorder(Arc::clone(&seen), origin));
        for _ in 0..13 {
            send(&mut service, get("/api")).await;
        }
        let seen = seen.lock().unwrap().clone();
        // The burst goes at once; then one every 1/5 s (tokio's timer has
        // millisecond resolution).
        assert!(seen[..10].iter().all(|t| *t == Duration::ZERO), "{seen:?}");
        for (i, t) in seen[10..].iter().enumerate() {
            let due = Duration::from_millis(200 * (i as u64 + 1));
            assert!(
                *t >= due && *t < due + Duration::from_millis(2),
                "request {}: at {t:?}, due {due:?}",
                i + 10
            );
        }
        let text = metrics_text(&registry);
        assert!(
            text.contains("metahook_driver_api_throttled_requests_total 3\n"),
            "{text}"
        );
        // 0.2 + 0.2 + 0.2 s waited (each waits one period after the last).
        let waited: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("metahook_driver_api_throttled_seconds_total "))
            .and_then(|v| v.parse().ok())
            .unwrap();
        assert!((0.6..0.61).contains(&waited), "{waited}");
        assert!(
            text.contains("metahook_driver_api_requests_total{method=\"GET\"} 13\n"),
            "{text}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_callers_share_one_budget_in_order() {
        // As the kube Client uses it: a buffer's single worker in front.
        let metrics = Arc::new(DriverMetrics::default());
        let origin = Instant::now();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let budget = Budget::new(10.0, NonZeroU32::new(2).unwrap()).unwrap();
        let service = tower::buffer::Buffer::new(
            ThrottleLayer::new(Some(budget), metrics).layer(recorder(Arc::clone(&seen), origin)),
            64,
        );
        let calls = (0..6).map(|_| {
            let service = service.clone();
            async move { service.oneshot(get("/apis")).await }
        });
        for result in futures::future::join_all(calls).await {
            result.unwrap();
        }
        let seen = seen.lock().unwrap().clone();
        let ms: Vec<u128> = seen.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, vec![0, 0, 100, 200, 300, 400]);
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_budget_nothing_waits_and_requests_are_counted() {
        let mut registry = Registry::with_prefix("metahook");
        let metrics = Arc::new(DriverMetrics::register(
            registry.sub_registry_with_prefix("driver"),
        ));
        let origin = Instant::now();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut service =
            ThrottleLayer::new(None, metrics).layer(recorder(Arc::clone(&seen), origin));
        for path in [
            "/api",
            "/apis/apps/v1/deployments?watch=true&timeoutSeconds=290",
        ] {
            for _ in 0..50 {
                send(&mut service, get(path)).await;
            }
        }
        assert!(seen.lock().unwrap().iter().all(|t| *t == Duration::ZERO));
        let text = metrics_text(&registry);
        assert!(text.contains("metahook_driver_api_requests_total{method=\"GET\"} 50\n"));
        assert!(text.contains("metahook_driver_api_requests_total{method=\"WATCH\"} 50\n"));
        assert!(
            text.contains("metahook_driver_api_throttled_requests_total 0\n"),
            "{text}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_converging_write_that_waits_is_pressure_a_status_write_is_not() {
        let metrics = Arc::new(DriverMetrics::default());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let budget = Budget::new(1.0, NonZeroU32::MIN).unwrap();
        let layer = ThrottleLayer::new(Some(budget), metrics);
        let pressure = layer.pressure();
        let mut service = layer.layer(recorder(seen, Instant::now()));
        let patch = |path: &str| http::Request::patch(path).body(()).unwrap();
        let status = "/apis/example.com/v1/namespaces/a/things/p/status";
        for path in [status, status] {
            send(&mut service, patch(path)).await;
        }
        assert!(!pressure.busy(), "status writes waiting are not pressure");
        let child = "/apis/apps/v1/namespaces/a/deployments/web";
        send(&mut service, patch(child)).await;
        assert!(pressure.busy());
        // Without a budget nothing waits: never pressure.
        let free = ThrottleLayer::new(None, Arc::new(DriverMetrics::default()));
        let mut service = free.layer(recorder(Arc::default(), Instant::now()));
        for _ in 0..5 {
            send(&mut service, patch(child)).await;
        }
        assert!(!free.pressure().busy());
    }

    #[test]
    fn a_budget_needs_a_positive_finite_rate() {
        let burst = NonZeroU32::new(10).unwrap();
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 2e9] {
            assert!(
                matches!(Budget::new(bad, burst), Err(BudgetError::Qps(_))),
                "{bad}"
            );
        }
        assert!(Budget::new(0.5, burst).is_ok());
    }
}
