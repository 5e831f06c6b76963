//! Logging: `RUST_LOG` filters (default `info`), `--log-format` picks text or
//! JSON lines.

use crate::cli::LogFormat;
use tracing_subscriber::EnvFilter;

#[derive(Debug, thiserror::Error)]
#[error("a global logger is already installed")]
pub struct TelemetryError(#[source] tracing_subscriber::util::TryInitError);

pub fn init(format: LogFormat) -> Result<(), TelemetryError> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
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
