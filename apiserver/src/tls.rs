//! The HTTPS side: the serving certificate (a mounted Secret's `tls.crt`
//! and `tls.key`, re-read when they change), and client certificates asked
//! for but judged later. A certificate the front-proxy CA did not sign must
//! be a 401 with a reason, not a failed handshake, and the CA itself comes
//! and changes with a ConfigMap: so the handshake only checks that the
//! client holds the certificate's key, and [`crate::front_proxy`] decides
//! who signed it.

use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

pub const CERT_FILE: &str = "tls.crt";
pub const KEY_FILE: &str = "tls.key";

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading {path} failed")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} holds no PEM certificate")]
    NoCertificate { path: PathBuf },
    #[error("{path} holds no usable PEM private key")]
    Key {
        path: PathBuf,
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    #[error("the key in {path} does not match the certificate, or is of an unsupported type")]
    Mismatch {
        path: PathBuf,
        #[source]
        source: rustls::Error,
    },
    #[error("building the TLS configuration failed")]
    Config(#[source] rustls::Error),
}

/// The certificate chain and key in `dir`, as their bytes (to tell a
/// change) and as rustls uses them.
fn load(dir: &Path, provider: &CryptoProvider) -> Result<(Vec<u8>, CertifiedKey), TlsError> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).map_err(|source| TlsError::Read { path, source })
    };
    let (cert_pem, key_pem) = (read(CERT_FILE)?, read(KEY_FILE)?);
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .flatten()
        .collect();
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: dir.join(CERT_FILE),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|source| TlsError::Key {
        path: dir.join(KEY_FILE),
        source,
    })?;
    let certified =
        CertifiedKey::from_der(chain, key, provider).map_err(|source| TlsError::Mismatch {
            path: dir.join(KEY_FILE),
            source,
        })?;
    let mut both = cert_pem;
    both.extend_from_slice(&key_pem);
    Ok((both, certified))
}

/// The serving certificate, replaced when the files change.
#[derive(Debug)]
pub struct ServingCert {
    dir: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<(Vec<u8>, Arc<CertifiedKey>)>,
}

impl ServingCert {
    /// Reads `dir`: a missing or bad pair fails at start.
    pub fn load(dir: &Path, provider: Arc<CryptoProvider>) -> Result<Self, TlsError> {
        let (bytes, key) = load(dir, &provider)?;
        Ok(ServingCert {
            dir: dir.to_owned(),
            provider,
            current: RwLock::new((bytes, Arc::new(key))),
        })
    }

    /// Re-reads the files: `Ok(true)` when they changed and were taken.
    /// A bad pair (say, the certificate written and the key not yet) keeps
    /// the one in use.
    pub fn reload(&self) -> Result<bool, TlsError> {
        let (bytes, key) = load(&self.dir, &self.provider)?;
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        if current.0 == bytes {
            return Ok(false);
        }
        *current = (bytes, Arc::new(key));
        Ok(true)
    }
}

impl ResolvesServerCert for ServingCert {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .1
                .clone(),
        )
    }
}

/// Asks every client for a certificate, requires none, and accepts any
/// whose key the client proves it holds (see the module's doc).
#[derive(Debug)]
struct ClientCertLater {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for ClientCertLater {
    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        // None: a client sends the certificate it has.
        &[]
    }

    fn verify_client_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The server's TLS settings around `cert`.
pub fn server_config(cert: Arc<ServingCert>) -> Result<ServerConfig, TlsError> {
    let provider = cert.provider.clone();
    let verifier = Arc::new(ClientCertLater {
        algorithms: provider.signature_verification_algorithms,
    });
    Ok(ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Config)?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(cert))
}

/// The client's certificate chain, leaf first, kept with its connection.
#[derive(Debug, Clone)]
pub struct PeerCerts(pub Vec<CertificateDer<'static>>);

/// actix-web's `on_connect`: keeps the client certificate chain of a TLS
/// connection for its requests.
pub fn keep_peer_certs(connection: &dyn std::any::Any, data: &mut actix_web::dev::Extensions) {
    type Tls = actix_tls::accept::rustls_0_23::TlsStream<actix_web::rt::net::TcpStream>;
    if let Some(tls) = connection.downcast_ref::<Tls>()
        && let Some(chain) = tls.get_ref().1.peer_certificates()
    {
        data.insert(PeerCerts(
            chain.iter().map(|c| c.clone().into_owned()).collect(),
        ));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rcgen::{CertificateParams, KeyPair};

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

    fn provider() -> Arc<CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    #[test]
    fn a_changed_pair_is_taken_and_a_broken_one_is_not() {
        let dir = std::env::temp_dir().join(format!("metahook-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write_pair(&dir, &["one.example"]);
        let cert = ServingCert::load(&dir, provider()).unwrap();
        let first = cert.current.read().unwrap().1.clone();
        assert!(!cert.reload().unwrap(), "unchanged files are not a change");
        write_pair(&dir, &["two.example"]);
        assert!(cert.reload().unwrap());
        let second = cert.current.read().unwrap().1.clone();
        assert_ne!(first.cert, second.cert);
        // Half-written: the certificate of a new pair, the old key.
        let key = std::fs::read(dir.join(KEY_FILE)).unwrap();
        write_pair(&dir, &["three.example"]);
        std::fs::write(dir.join(KEY_FILE), key).unwrap();
        assert!(matches!(cert.reload(), Err(TlsError::Mismatch { .. })));
        assert_eq!(
            cert.current.read().unwrap().1.cert,
            second.cert,
            "the pair in use stays"
        );
        std::fs::remove_file(dir.join(KEY_FILE)).unwrap();
        assert!(matches!(
            ServingCert::load(&dir, provider()),
            Err(TlsError::Read { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
