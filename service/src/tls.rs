//! HTTPS for the hook service (`--tls-dir`): the serving certificate of the
//! directory and, with `--tls-client-auth`, client certificates checked
//! against its `ca.crt`, all re-read when they change (`metahook_tls`, as
//! the aggregated API does).
//!
//! Client certificates are asked for, not required, at the handshake: the
//! kubelet's HTTPS probes and Prometheus present none, and `/healthz`,
//! `/readyz` and `/metrics` stay open to them on the same port (one port
//! keeps the Service, the NetworkPolicy and the ServiceMonitor as they
//! are). A certificate another CA signed fails the handshake (checked as
//! Go's TLS server checks it, X.509 v1 included: `metahook_tls::ClientCa`),
//! and the failure is counted and logged (`tls_refusals`); a request
//! without one reaches `auth`, which refuses it on every other route.

use metahook_tls::{ClientCa, ServingCert, TlsError};
use std::path::PathBuf;
use std::sync::Arc;

/// What `--tls-dir` and `--tls-client-auth` ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// Holds `tls.crt`, `tls.key` and, for client certificates, `ca.crt`.
    pub dir: PathBuf,
    /// Require a client certificate signed by `dir/ca.crt` on the hook
    /// routes (mutual TLS).
    pub client_auth: bool,
}

/// The files in use, for the server's configuration and their reload.
#[derive(Debug)]
pub struct Https {
    cert: Arc<ServingCert>,
    client_ca: Option<Arc<ClientCa>>,
}

impl Https {
    /// Reads the files: a missing or bad one fails at start.
    pub fn load(settings: &TlsSettings) -> Result<Self, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let cert = Arc::new(ServingCert::load(&settings.dir, provider.clone())?);
        let client_ca = settings
            .client_auth
            .then(|| ClientCa::load(&settings.dir, provider).map(Arc::new))
            .transpose()?;
        Ok(Https { cert, client_ca })
    }

    /// rustls' settings for the server: HTTP/1.1, as the hooks are called.
    pub fn server_config(&self) -> Result<rustls::ServerConfig, TlsError> {
        let builder = metahook_tls::server_config_builder(self.cert.provider())?;
        let mut config = match &self.client_ca {
            Some(ca) => builder.with_client_cert_verifier(ca.clone()),
            None => builder.with_no_client_auth(),
        }
        .with_cert_resolver(self.cert.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        // No session resumption: a resumed session keeps the certificates
        // of its first handshake, so a renewed serving certificate or a
        // rotated client CA would not reach a client that resumes. Callers
        // keep their connections open; a full handshake per new one costs
        // little.
        config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        config.send_tls13_tickets = 0;
        Ok(config)
    }

    /// Re-reads the files; logs what changed or failed (a bad file keeps
    /// the one in use).
    pub fn reload(&self) {
        log_reload("serving certificate", self.cert.reload());
        if let Some(ca) = &self.client_ca {
            log_reload("client CA", ca.reload());
        }
    }
}

fn log_reload(what: &str, result: Result<bool, TlsError>) {
    match result {
        Ok(true) => tracing::info!("the hook service's {what} changed; new connections use it"),
        Ok(false) => {}
        Err(err) => tracing::warn!(
            error = %metahook_core::error_chain(&err),
            "re-reading the hook service's {what} failed; the one in use stays"
        ),
    }
}
