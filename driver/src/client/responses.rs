//! Counts every answer the API server gives the driver, by status code, one
//! attempt at a time: this layer sits inside the retry layer, so a 429 that
//! is retried and then succeeds still shows (`api_responses{code="429"}`:
//! the server throttled the driver).

use crate::observe::metrics::DriverMetrics;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Layer, Service};

tokio::task_local! {
    /// The code of the last answer within [`remembering_answers`]: kube's
    /// `Api` turns an answer into a value or an error and keeps no code
    /// (a 201 is `Ok`, a 404 of `get_opt` is `Ok(None)`).
    static LAST_ANSWER: Cell<Option<u16>>;
}

/// Runs `work` so that [`last_answer`] tells, after each request it makes
/// through a client with this layer, the code the API server answered.
/// The layer's future runs in the caller's task (tower's buffer hands the
/// inner future back to it), where the task-local is.
pub async fn remembering_answers<F: Future>(work: F) -> F::Output {
    LAST_ANSWER.scope(Cell::new(None), work).await
}

/// The code of the last answer since the last call, inside
/// [`remembering_answers`]: `None` outside it, when no answer came, or
/// when the client has no [`CountResponsesLayer`] (a test's).
pub fn last_answer() -> Option<u16> {
    LAST_ANSWER.try_with(Cell::take).ok().flatten()
}

#[derive(Clone)]
pub struct CountResponsesLayer {
    metrics: Arc<DriverMetrics>,
}

impl CountResponsesLayer {
    pub fn new(metrics: Arc<DriverMetrics>) -> Self {
        CountResponsesLayer { metrics }
    }
}

impl<S> Layer<S> for CountResponsesLayer {
    type Service = CountResponses<S>;

    fn layer(&self, inner: S) -> CountResponses<S> {
        CountResponses {
            inner,
            metrics: Arc::clone(&self.metrics),
        }
    }
}

#[derive(Clone)]
pub struct CountResponses<S> {
    inner: S,
    metrics: Arc<DriverMetrics>,
}

type Counted<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, Req, ResBody> Service<Req> for CountResponses<S>
where
    S: Service<Req, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
    ResBody: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Counted<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let metrics = Arc::clone(&self.metrics);
        let answer = self.inner.call(request);
        Box::pin(async move {
            let result = answer.await;
            let code = match &result {
                Ok(response) => Some(response.status().as_u16()),
                Err(_) => None,
            };
            metrics.api_response(code.unwrap_or(0));
            // Outside `remembering_answers`, nobody asks.
            let _ = LAST_ANSWER.try_with(|last| last.set(code));
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use tower::ServiceExt;

    #[tokio::test]
    async fn every_answer_is_counted_by_its_code() {
        let metrics = Arc::new(DriverMetrics::default());
        let answers = tower::service_fn(|code: u16| async move {
            Ok::<_, Infallible>(
                http::Response::builder()
                    .status(code)
                    .body(())
                    .expect("a response"),
            )
        });
        let mut counted = CountResponsesLayer::new(metrics.clone()).layer(answers);
        for code in [200, 429, 429, 200, 201] {
            counted.ready().await.unwrap().call(code).await.unwrap();
        }
        assert_eq!(metrics.api_responses_for_tests(429), 2);
        assert_eq!(metrics.api_responses_for_tests(200), 2);
        assert_eq!(metrics.api_responses_for_tests(201), 1);
    }
}
