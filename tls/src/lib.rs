//! metahook's HTTPS serving pieces, shared by the hook service and the
//! aggregated API.
//!
//! A certificate directory (`tls.crt`, `tls.key`, and for client
//! certificates `ca.crt`: a mounted `kubernetes.io/tls` Secret) is read at
//! start and re-read when its files change, so a renewed certificate is
//! served without a restart; the client's certificate is kept with its
//! connection for the routes to judge (the client CA checks the chain, as
//! Go's TLS servers do, the routes decide what it may do); a failed
//! handshake is told with its peer and its [`Refusal`].
//!
//! ```text
//! dir/tls.crt + tls.key → ServingCert (rustls' certificate resolver)
//! dir/ca.crt            → ClientCa (rustls' client verifier, as Go's)
//! a TCP connection      → acceptor → the handshake, or a Refusal with the peer
//! the handshake         → keep_peer_certs → PeerCerts per request
//! ```
//!
//! The modules are private: `files` (the directory's files, [`TlsError`]);
//! `serving` ([`ServingCert`]); `client_ca` ([`ClientCa`]), which checks
//! chains as Go's TLS server does (`chain`, `certificate`,
//! `name_constraints`); `refusal` ([`Refusal`], why a handshake failed);
//! `accept` ([`acceptor`], the handshake with the peer's address); and
//! `peer` ([`PeerCerts`], [`keep_peer_certs`]).
//!
//! ## Example
//!
//! A pair written as a Secret mounts it, loaded into a server configuration:
//!
//! ```
//! use metahook_tls::{CERT_FILE, KEY_FILE, ServingCert, server_config_builder};
//! use std::sync::Arc;
//!
//! let key = rcgen::KeyPair::generate()?;
//! let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])?.self_signed(&key)?;
//! let dir = std::env::temp_dir().join(format!("metahook-tls-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! std::fs::write(dir.join(CERT_FILE), cert.pem())?;
//! std::fs::write(dir.join(KEY_FILE), key.serialize_pem())?;
//!
//! let provider = Arc::new(rustls::crypto::ring::default_provider());
//! let serving = Arc::new(ServingCert::load(&dir, provider.clone())?);
//! let config = server_config_builder(provider)?
//!     .with_no_client_auth()
//!     .with_cert_resolver(serving.clone());
//! assert!(config.alpn_protocols.is_empty());
//! // The same files again: nothing to take.
//! assert!(!serving.reload()?);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod accept;
mod certificate;
mod chain;
mod client_ca;
mod files;
mod name_constraints;
mod peer;
mod refusal;
mod serving;
#[cfg(test)]
mod testing;

pub use accept::{HandshakeError, TlsStream, acceptor};
pub use client_ca::ClientCa;
pub use files::{CA_FILE, CERT_FILE, KEY_FILE, TlsError};
pub use peer::{PeerCerts, keep_peer_certs};
pub use refusal::{ClientCertRefused, Refusal};
pub use serving::ServingCert;

/// A server configuration with safe protocol versions for `provider`.
pub fn server_config_builder(
    provider: std::sync::Arc<rustls::crypto::CryptoProvider>,
) -> Result<rustls::ConfigBuilder<rustls::ServerConfig, rustls::WantsVerifier>, TlsError> {
    rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Config)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rcgen::{CertificateParams, Issuer, KeyPair};
    use std::path::{Path, PathBuf};

    /// A fresh directory under the system's temporary one.
    pub(crate) fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("metahook-tls-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Writes a self-signed pair for `names` into `dir`; returns the PEM.
    pub(crate) fn write_pair(dir: &Path, names: &[&str]) -> String {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap()
            .self_signed(&key)
            .unwrap();
        std::fs::write(dir.join(CERT_FILE), cert.pem()).unwrap();
        std::fs::write(dir.join(KEY_FILE), key.serialize_pem()).unwrap();
        cert.pem()
    }

    /// A CA: its PEM and what signs with it.
    pub(crate) fn ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), Issuer::new(params, key))
    }

    pub(crate) fn provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
        std::sync::Arc::new(rustls::crypto::ring::default_provider())
    }
}
