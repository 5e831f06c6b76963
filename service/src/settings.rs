//! What the service is configured with, and the defaults the command
//! line starts from.

use crate::tls::TlsSettings;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Everything the service is configured with.
#[derive(Debug, Clone)]
pub struct Settings {
    pub listen: SocketAddr,
    pub max_body_bytes: usize,
    pub max_buffered_bytes: usize,
    pub max_in_flight: usize,
    pub max_connections: usize,
    pub request_timeout: Duration,
    pub shutdown_timeout: Duration,
    pub workers: Option<usize>,
    /// HTTPS, and perhaps client certificates (`--tls-dir`).
    pub tls: Option<TlsSettings>,
    /// A file holding the bearer token callers must send.
    pub auth_token_file: Option<PathBuf>,
    /// How often the certificate files and the token file are re-read. A
    /// mounted Secret is updated by the kubelet within about a minute.
    pub reload_every: Duration,
    /// Whether SIGTERM and SIGINT stop the server. `serve --drive` turns
    /// it off and stops the server itself, once the driver has stopped.
    pub stop_on_signals: bool,
}

/// The defaults of every setting: the command line's defaults are these.
pub mod defaults {
    /// Metacontroller sends every child whole.
    pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
    /// Half of the chart's 256 MiB memory limit (docs/robustness.md).
    pub const MAX_BUFFERED_BYTES: usize = 128 * 1024 * 1024;
    pub const MAX_IN_FLIGHT: usize = 1024;
    pub const MAX_CONNECTIONS: usize = 256;
    pub const REQUEST_TIMEOUT_SECONDS: u64 = 10;
    /// Within Kubernetes' default 30 s termination grace period.
    pub const SHUTDOWN_TIMEOUT_SECONDS: u64 = 25;
    pub const RELOAD_SECONDS: u64 = 10;
}

impl Settings {
    /// The defaults, listening on `listen`.
    pub fn new(listen: SocketAddr) -> Self {
        Settings {
            listen,
            max_body_bytes: defaults::MAX_BODY_BYTES,
            max_buffered_bytes: defaults::MAX_BUFFERED_BYTES,
            max_in_flight: defaults::MAX_IN_FLIGHT,
            max_connections: defaults::MAX_CONNECTIONS,
            request_timeout: Duration::from_secs(defaults::REQUEST_TIMEOUT_SECONDS),
            shutdown_timeout: Duration::from_secs(defaults::SHUTDOWN_TIMEOUT_SECONDS),
            workers: None,
            tls: None,
            auth_token_file: None,
            reload_every: Duration::from_secs(defaults::RELOAD_SECONDS),
            stop_on_signals: true,
        }
    }
}
