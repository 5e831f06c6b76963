//! The span each request is logged and traced in.

use crate::trace_context;
use actix_web::HttpMessage;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use tracing::Span;
use tracing_actix_web::{DefaultRootSpanBuilder, RequestId, RootSpanBuilder};

/// The span every request runs in: method, path, peer, request id and
/// (at the end) status. The default span of `tracing-actix-web` records a
/// dozen OpenTelemetry fields, parses `Forwarded` headers and matches the
/// route a second time (docs/performance.md has the cost), for fields a
/// hook service's logs do not need.
pub struct RequestSpan;

impl RootSpanBuilder for RequestSpan {
    fn on_request_start(request: &ServiceRequest) -> Span {
        let request_id = request.extensions().get::<RequestId>().copied();
        let span = tracing::info_span!(
            "HTTP request",
            http.method = %request.method(),
            http.target = %request.path(),
            http.client_ip = request.peer_addr().map(|a| tracing::field::display(a.ip())),
            http.status_code = tracing::field::Empty,
            request_id = request_id.map(tracing::field::display),
            exception.message = tracing::field::Empty,
            otel.kind = "server",
            trace_id = tracing::field::Empty,
        );
        trace_context::continue_caller(&span, request.headers());
        span
    }

    fn on_request_end<B: MessageBody>(
        span: Span,
        outcome: &Result<ServiceResponse<B>, actix_web::Error>,
    ) {
        // Records the status code and, for errors, the message.
        DefaultRootSpanBuilder::on_request_end(span, outcome);
    }
}
