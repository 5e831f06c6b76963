//! The OpenTelemetry side of the driver's spans: a span's trace ID (for
//! logs and records) and the W3C `traceparent` header on hook calls. Both
//! are no-ops unless the binary installed an OpenTelemetry layer and the
//! trace-context propagator (metahook's telemetry, when `OTEL_*` asks).

use opentelemetry::trace::TraceContextExt as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The trace `span` belongs to (32 lowercase hex digits), if it is traced.
pub fn trace_id(span: &tracing::Span) -> Option<String> {
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| sc.trace_id().to_string())
}

/// Adds the current span's `traceparent` (and `tracestate`) to `headers`,
/// if it is traced.
pub fn inject(headers: &mut http::HeaderMap) {
    let cx = tracing::Span::current().context();
    if !cx.span().span_context().is_valid() {
        return;
    }
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&cx, &mut opentelemetry_http::HeaderInjector(headers));
    });
}
