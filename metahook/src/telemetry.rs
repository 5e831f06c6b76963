//! Logging and traces: `RUST_LOG` filters (default `info`), `--log-format`
//! picks text or JSON lines; with `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, spans are also exported as
//! OpenTelemetry traces over OTLP/HTTP (the other `OTEL_*` variables apply:
//! headers, timeout, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`), and
//! W3C `traceparent` headers carry a trace from the driver into the hooks.
//! Unset, no exporter, no propagator and no OpenTelemetry layer exist: the
//! hot path is what it was.

use crate::cli::{LogFormat, program_name};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::EnvFilter;

/// Logging or tracing could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// This process already has a logger.
    #[error("a global logger is already installed")]
    AlreadyInstalled(#[source] tracing_subscriber::util::TryInitError),
    /// The OTLP exporter could not be built from the `OTEL_*` variables.
    #[error("the OTLP trace exporter could not be built from the OTEL_* variables")]
    Exporter(#[source] opentelemetry_otlp::ExporterBuildError),
}

/// Traces being exported: dropping it sends what is still buffered (at
/// most the exporter's timeout) and stops the exporter.
#[must_use = "dropping it stops exporting traces"]
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.traces.take()
            && let Err(e) = provider.shutdown()
        {
            tracing::warn!(error = %e, "flushing the last traces failed");
        }
    }
}

/// Whether the `OTEL_*` variables ask for traces: an OTLP endpoint is set,
/// and neither `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none`.
pub fn traces_wanted(var: impl Fn(&str) -> Option<String>) -> bool {
    let set = |name: &str| var(name).is_some_and(|v| !v.trim().is_empty());
    let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let none = var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim() == "none");
    (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        && !disabled
        && !none
}

/// Installs the process' logger, writing `format` to standard output, and
/// the trace exporter if the environment asks for one.
pub fn init(format: LogFormat) -> Result<Telemetry, TelemetryError> {
    use tracing::Level;
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let mut filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // kube's HTTP trace layer logs every failed API request as an error, a
    // second time for each failure the driver reports with its context (and
    // hundreds of times while the API server restarts). Asked for by name,
    // it still shows.
    let asked = std::env::var("RUST_LOG").is_ok_and(|v| v.contains("kube_client"));
    if !asked && let Ok(quiet) = "kube_client::client::builder=off".parse() {
        filter = filter.add_directive(quiet);
    }
    let traces = if traces_wanted(|name| std::env::var(name).ok()) {
        Some(tracer_provider()?)
    } else {
        None
    };
    let result = match &traces {
        // Without traces, one filter for the whole subscriber: per-layer
        // filtering costs every request a little (bench/callgrind.sh).
        None => tracing_subscriber::registry()
            .with(filter)
            .with(log_lines(format))
            .try_init(),
        Some(provider) => {
            opentelemetry::global::set_text_map_propagator(
                opentelemetry_sdk::propagation::TraceContextPropagator::new(),
            );
            metahook_service::continue_traces();
            // The traces take what the logs leave out: kube's span of each
            // API request (debug), so that a reconcile's writes and its
            // status show as its children.
            let spans = Targets::new()
                .with_default(Level::INFO)
                .with_target("kube_client::client::builder", Level::DEBUG);
            let otel = tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("metahook"))
                .with_filter(spans);
            tracing_subscriber::registry()
                .with(otel)
                .with(log_lines(format).with_filter(filter))
                .try_init()
        }
    };
    result.map_err(TelemetryError::AlreadyInstalled)?;
    Ok(Telemetry { traces })
}

/// The log lines on standard output, as text or JSON: the layer that is
/// not asked for is `None`, which every callback skips.
fn log_lines<S>(format: LogFormat) -> impl tracing_subscriber::Layer<S> + Send + Sync
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let text = matches!(format, LogFormat::Text).then(|| {
        tracing_subscriber::fmt::layer()
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
    });
    let json = matches!(format, LogFormat::Json)
        .then(|| tracing_subscriber::fmt::layer().json().flatten_event(true));
    tracing_subscriber::Layer::and_then(text, json)
}

/// Spans batched and sent over OTLP/HTTP (protobuf) as the `OTEL_*`
/// variables say; the service is named by `OTEL_SERVICE_NAME`, else the
/// program.
fn tracer_provider() -> Result<SdkTracerProvider, TelemetryError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(TelemetryError::Exporter)?;
    let mut resource = opentelemetry_sdk::Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name(program_name());
    }
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build())
}

#[cfg(test)]
mod tests {
    use super::traces_wanted;

    #[test]
    fn traces_are_exported_only_when_an_endpoint_is_set_and_not_disabled() {
        let with = |vars: &'static [(&'static str, &'static str)]| {
            traces_wanted(move |name| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            })
        };
        assert!(!with(&[]));
        assert!(!with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]));
        assert!(with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel:4318")]));
        assert!(with(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://otel:4318/v1/traces"
        )]));
        assert!(!with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel:4318"),
            ("OTEL_SDK_DISABLED", "TRUE")
        ]));
        assert!(!with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel:4318"),
            ("OTEL_TRACES_EXPORTER", "none")
        ]));
    }
}
