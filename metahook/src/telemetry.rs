//! Logging: `RUST_LOG` filters (default `info`), `--log-format` picks text or
//! JSON lines.

use crate::cli::LogFormat;
use tracing_subscriber::EnvFilter;

/// Logging could not be set up: this process already has a logger.
#[derive(Debug, thiserror::Error)]
#[error("a global logger is already installed")]
pub struct TelemetryError(#[source] tracing_subscriber::util::TryInitError);

/// Installs the process' logger, writing `format` to standard output.
pub fn init(format: LogFormat) -> Result<(), TelemetryError> {
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
    let registry = tracing_subscriber::registry().with(filter);
    let result = match format {
        LogFormat::Text => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout())),
            )
            .try_init(),
        LogFormat::Json => registry
            .with(tracing_subscriber::fmt::layer().json().flatten_event(true))
            .try_init(),
    };
    result.map_err(TelemetryError)
}
