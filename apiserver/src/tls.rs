//! The HTTPS side: the serving certificate (a mounted Secret's `tls.crt`
//! and `tls.key`, re-read when they change: `metahook_tls`, shared with the
//! hook service), and client certificates asked for but judged later. A
//! certificate the front-proxy CA did not sign must be a 401 with a reason,
//! not a failed handshake, and the CA itself comes and changes with a
//! ConfigMap: so the handshake only checks that the client holds the
//! certificate's key, and [`crate::front_proxy`] decides who signed it.

use metahook_tls::ClientCa;
pub use metahook_tls::{CERT_FILE, KEY_FILE, PeerCerts, ServingCert, TlsError, keep_peer_certs};
use rustls::ServerConfig;
use std::sync::Arc;

/// The server's TLS settings around `cert`.
pub fn server_config(cert: Arc<ServingCert>) -> Result<ServerConfig, TlsError> {
    let provider = cert.provider();
    let verifier = Arc::new(ClientCa::judged_later(provider.clone()));
    Ok(metahook_tls::server_config_builder(provider)?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(cert))
}
