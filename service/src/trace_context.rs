//! A hook request continues its caller's trace: the W3C `traceparent` (and
//! `tracestate`) the driver sends makes the request's span a child of the
//! driver's hook call. Metacontroller sends none: then the request is a
//! trace of its own. Only once [`continue_traces`] said the binary exports
//! traces (an OpenTelemetry layer and the trace-context propagator
//! installed); until then one relaxed load per request and nothing more.

use actix_web::http::header::HeaderMap;
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::TraceContextExt as _;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

static EXPORTED: AtomicBool = AtomicBool::new(false);

/// Hook requests from now on continue their callers' traces and record
/// their trace IDs: the process exports traces.
pub fn continue_traces() {
    EXPORTED.store(true, Ordering::Relaxed);
}

/// Makes `span` a child of the trace in `headers`, if they carry one, and
/// records its trace ID (for the log lines) when it is traced.
pub(crate) fn continue_caller(span: &tracing::Span, headers: &HeaderMap) {
    if !EXPORTED.load(Ordering::Relaxed) {
        return;
    }
    if headers.contains_key("traceparent") {
        let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
            propagator.extract(&Headers(headers))
        });
        // Refused only when no OpenTelemetry layer is installed: then
        // there is no trace to continue.
        let _ = span.set_parent(parent);
    }
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    if sc.is_valid() {
        span.record("trace_id", tracing::field::display(sc.trace_id()));
    }
}

/// actix's header map read as OpenTelemetry reads carriers.
struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}
