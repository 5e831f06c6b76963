//! The fence: no write leaves a replica that is not sure it leads.
//!
//! Every create, update, patch and delete the driver sends (the Lease's own
//! excepted: it has a client of its own) passes the fence, which lets it
//! through only before the leader's deadline — the instant its last
//! successful renewal was *sent* plus the renew deadline — and abandons it
//! at that instant if it has not been answered. The deadline is read from
//! the clock at each request, not from a task that might run late: a
//! leader whose renewals stall stops writing on time even if nothing else
//! in it gets to run. Reads and watches pass freely.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tower::{BoxError, Layer, Service};

/// Until when this replica may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Term {
    /// No leader election: always.
    Always,
    /// Leading until this instant, unless renewed.
    Until(Instant),
    /// Not leading.
    Closed,
}

impl Term {
    fn permits(self, now: Instant) -> bool {
        match self {
            Term::Always => true,
            Term::Until(deadline) => now < deadline,
            Term::Closed => false,
        }
    }
}

/// Shared by the clients' fence layers and the elector that moves it.
#[derive(Debug, Clone)]
pub struct Fence {
    term: Arc<watch::Sender<Term>>,
    writes: Arc<InFlight>,
}

#[derive(Debug, Default)]
struct InFlight {
    count: AtomicUsize,
    none_left: Notify,
}

impl Fence {
    /// A fence that never closes: a single replica, no Lease.
    pub fn always() -> Self {
        Self::new(Term::Always)
    }

    /// A fence closed until the elector opens it.
    pub fn closed() -> Self {
        Self::new(Term::Closed)
    }

    fn new(term: Term) -> Self {
        Fence {
            term: Arc::new(watch::channel(term).0),
            writes: Arc::default(),
        }
    }

    pub fn term(&self) -> Term {
        *self.term.borrow()
    }

    /// Whether a write may leave now.
    pub fn permits(&self) -> bool {
        self.term().permits(Instant::now())
    }

    /// Writes may leave until `deadline`. Never reopens a closed fence
    /// (`false` then): a replica that lost the Lease takes it anew.
    pub(crate) fn extend(&self, deadline: Instant) -> bool {
        self.term.send_if_modified(|term| match term {
            Term::Until(_) => {
                *term = Term::Until(deadline);
                true
            }
            Term::Always | Term::Closed => false,
        });
        matches!(self.term(), Term::Until(_))
    }

    /// Opens a closed fence until `deadline` (a term begins).
    pub(crate) fn open_until(&self, deadline: Instant) {
        self.term.send_replace(Term::Until(deadline));
    }

    /// No write leaves from now on.
    pub(crate) fn close(&self) {
        self.term.send_if_modified(|term| match term {
            Term::Until(_) => {
                *term = Term::Closed;
                true
            }
            Term::Always | Term::Closed => false,
        });
    }

    /// Resolves once the fence is closed or its deadline has passed.
    pub async fn shut(&self) {
        let mut term = self.term.subscribe();
        loop {
            let current = *term.borrow_and_update();
            match current {
                Term::Always => std::future::pending::<()>().await,
                Term::Closed => return,
                Term::Until(deadline) => {
                    if Instant::now() >= deadline {
                        return;
                    }
                    tokio::select! {
                        () = tokio::time::sleep_until(deadline) => {}
                        changed = term.changed() => {
                            if changed.is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Writes let through and not yet answered (or abandoned).
    pub fn writes_in_flight(&self) -> usize {
        self.writes.count.load(Ordering::Acquire)
    }

    /// Resolves when no write is in flight.
    pub(crate) async fn drained(&self) {
        loop {
            let none_left = self.writes.none_left.notified();
            if self.writes_in_flight() == 0 {
                return;
            }
            none_left.await;
        }
    }

    fn enter(&self) -> WriteGuard {
        self.writes.count.fetch_add(1, Ordering::AcqRel);
        WriteGuard(self.writes.clone())
    }
}

/// One write in flight, counted until it is answered or dropped.
struct WriteGuard(Arc<InFlight>);

impl Drop for WriteGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.none_left.notify_waiters();
        }
    }
}

/// A write the fence did not let through, or abandoned at the deadline.
#[derive(Debug, thiserror::Error)]
pub enum FencedWrite {
    #[error("not sending {method} {path}: this replica does not hold the Lease")]
    NotLeading { method: http::Method, path: String },
    #[error("abandoned {method} {path}: the leader's term ended before the API server answered")]
    TermEnded { method: http::Method, path: String },
}

/// The fence as a layer of a client's stack.
#[derive(Debug, Clone)]
pub struct FenceLayer(pub Fence);

impl<S> Layer<S> for FenceLayer {
    type Service = Fenced<S>;

    fn layer(&self, inner: S) -> Fenced<S> {
        Fenced {
            inner,
            fence: self.0.clone(),
        }
    }
}

/// A service behind the fence.
#[derive(Debug, Clone)]
pub struct Fenced<S> {
    inner: S,
    fence: Fence,
}

type Answer<T> = Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>;

/// Whether a request changes something (reads and watches do not).
fn is_write(method: &http::Method) -> bool {
    !matches!(
        *method,
        http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
    )
}

impl<S, B, ResBody> Service<http::Request<B>> for Fenced<S>
where
    S: Service<http::Request<B>, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    ResBody: 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Answer<S::Response>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if !is_write(request.method()) {
            let answer = self.inner.call(request);
            return Box::pin(async move { answer.await.map_err(Into::into) });
        }
        let (method, path) = (request.method().clone(), request.uri().path().to_owned());
        let deadline = match self.fence.term() {
            Term::Always => None,
            Term::Until(deadline) if Instant::now() < deadline => Some(deadline),
            Term::Until(_) | Term::Closed => {
                return Box::pin(
                    async move { Err(FencedWrite::NotLeading { method, path }.into()) },
                );
            }
        };
        let guard = self.fence.enter();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let _guard = guard;
            match deadline {
                None => answer.await.map_err(Into::into),
                Some(deadline) => match tokio::time::timeout_at(deadline, answer).await {
                    Ok(answered) => answered.map_err(Into::into),
                    Err(_) => Err(FencedWrite::TermEnded { method, path }.into()),
                },
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tower::ServiceExt;

    fn request(method: http::Method) -> http::Request<()> {
        http::Request::builder()
            .method(method)
            .uri("/apis/apps/v1/namespaces/shop/deployments/web")
            .body(())
            .unwrap()
    }

    /// Answers after `delay`.
    fn slow_api(
        delay: Duration,
    ) -> impl Service<
        http::Request<()>,
        Response = http::Response<()>,
        Error = BoxError,
        Future = impl Future<Output = Result<http::Response<()>, BoxError>> + Send + 'static,
    > + Clone {
        tower::service_fn(move |_: http::Request<()>| async move {
            tokio::time::sleep(delay).await;
            Ok::<_, BoxError>(http::Response::new(()))
        })
    }

    async fn send(
        fence: &Fence,
        delay: Duration,
        method: http::Method,
    ) -> Result<http::Response<()>, BoxError> {
        FenceLayer(fence.clone())
            .layer(slow_api(delay))
            .oneshot(request(method))
            .await
    }

    #[tokio::test(start_paused = true)]
    async fn writes_leave_only_within_the_term_and_reads_always() {
        let fence = Fence::closed();
        let refused = send(&fence, Duration::ZERO, http::Method::PATCH).await;
        let refused = refused.unwrap_err();
        assert!(
            matches!(refused.downcast_ref(), Some(FencedWrite::NotLeading { .. })),
            "{refused}"
        );
        assert!(
            send(&fence, Duration::ZERO, http::Method::GET)
                .await
                .is_ok()
        );

        fence.open_until(Instant::now() + Duration::from_secs(10));
        for method in [
            http::Method::POST,
            http::Method::PUT,
            http::Method::PATCH,
            http::Method::DELETE,
        ] {
            assert!(send(&fence, Duration::from_secs(1), method).await.is_ok());
        }
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(!fence.permits(), "the deadline passed with no renewal");
        assert!(
            send(&fence, Duration::ZERO, http::Method::POST)
                .await
                .is_err()
        );
        assert!(
            send(&fence, Duration::ZERO, http::Method::GET)
                .await
                .is_ok()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_unanswered_at_the_deadline_is_abandoned_then() {
        let fence = Fence::closed();
        let start = Instant::now();
        fence.open_until(start + Duration::from_secs(3));
        let abandoned = send(&fence, Duration::from_secs(60), http::Method::PUT)
            .await
            .unwrap_err();
        assert!(
            matches!(
                abandoned.downcast_ref(),
                Some(FencedWrite::TermEnded { .. })
            ),
            "{abandoned}"
        );
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        assert_eq!(fence.writes_in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_renewal_extends_the_term_but_never_reopens_a_closed_fence() {
        let fence = Fence::closed();
        let start = Instant::now();
        assert!(
            !fence.extend(start + Duration::from_secs(5)),
            "closed stays closed"
        );
        fence.open_until(start + Duration::from_secs(5));
        assert!(fence.extend(start + Duration::from_secs(8)));
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert!(fence.permits());
        fence.close();
        assert!(!fence.permits());
        assert!(!fence.extend(start + Duration::from_secs(20)));
        assert!(!fence.permits());
        // Without a Lease, always open.
        assert!(Fence::always().permits());
        assert!(!Fence::always().extend(start));
    }

    #[tokio::test(start_paused = true)]
    async fn shut_resolves_at_the_deadline_or_when_closed() {
        let fence = Fence::closed();
        let start = Instant::now();
        fence.open_until(start + Duration::from_secs(4));
        let watcher = tokio::spawn({
            let fence = fence.clone();
            async move { fence.shut().await }
        });
        tokio::time::sleep(Duration::from_secs(2)).await;
        fence.extend(start + Duration::from_secs(7));
        watcher.await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_secs(7));
        let closing = tokio::spawn({
            let fence = fence.clone();
            async move { fence.shut().await }
        });
        fence.open_until(Instant::now() + Duration::from_secs(100));
        tokio::task::yield_now().await;
        fence.close();
        closing.await.unwrap();
        assert!(start.elapsed() < Duration::from_secs(8));
    }

    #[tokio::test(start_paused = true)]
    async fn drained_waits_for_the_writes_in_flight() {
        let fence = Fence::closed();
        fence.open_until(Instant::now() + Duration::from_secs(60));
        let write = tokio::spawn({
            let fence = fence.clone();
            async move { send(&fence, Duration::from_secs(2), http::Method::PATCH).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(fence.writes_in_flight(), 1);
        let start = Instant::now();
        fence.drained().await;
        assert_eq!(fence.writes_in_flight(), 0);
        assert!(start.elapsed() >= Duration::from_millis(1990));
        assert!(write.await.unwrap().is_ok());
    }
}
