//! A client that cannot write: every request but a GET (get, list, watch)
//! is answered with an error without being sent. What `plan --live`
//! connects with ([`super::connect::connect_read_only`]), so that a bug in
//! it, or a role wider than it needs, still changes nothing.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tower::{BoxError, Layer, Service};

/// A request the read-only client did not send.
#[derive(Debug, thiserror::Error)]
#[error("not sending {method} {path}: this client only reads (get, list, watch)")]
pub struct RefusedWrite {
    /// The request's method.
    pub method: http::Method,
    /// The request's path.
    pub path: String,
}

/// Refuses every request but a GET, as a layer of a client's stack.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOnlyLayer;

impl<S> Layer<S> for ReadOnlyLayer {
    type Service = ReadOnly<S>;

    fn layer(&self, inner: S) -> ReadOnly<S> {
        ReadOnly { inner }
    }
}

/// A service behind [`ReadOnlyLayer`].
#[derive(Debug, Clone)]
pub struct ReadOnly<S> {
    inner: S,
}

type Answer<T> = Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>;

impl<S, B> Service<http::Request<B>> for ReadOnly<S>
where
    S: Service<http::Request<B>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Answer<S::Response>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        // A watch and a list are GETs too; HEAD and OPTIONS are reads, but
        // kube sends neither, so nothing past GET needs to leave.
        if request.method() == http::Method::GET {
            let answer = self.inner.call(request);
            return Box::pin(async move { answer.await.map_err(Into::into) });
        }
        let refused = RefusedWrite {
            method: request.method().clone(),
            path: request.uri().path().to_owned(),
        };
        Box::pin(async move { Err(refused.into()) })
    }
}

#[cfg(test)]
mod tests;
