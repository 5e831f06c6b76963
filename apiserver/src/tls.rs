//! The HTTPS side: the serving certificate (a mounted Secret's `tls.crt`
//! and `tls.key`, re-read when they change: `metahook_tls`, shared with the
//! hook service), and client certificates asked for but judged later. A
//! certificate the front-proxy CA did not sign must be a 401 with a reason,
//! not a failed handshake, and the CA itself comes and changes with a
//! ConfigMap: so the handshake only checks that the client holds the
//! certificate's key, and [`crate::front_proxy`] decides who signed it.

pub use metahook_tls::{CERT_FILE, KEY_FILE, PeerCerts, ServingCert, TlsError, keep_peer_certs};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};
use std::sync::Arc;

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
    let provider = cert.provider();
    let verifier = Arc::new(ClientCertLater {
        algorithms: provider.signature_verification_algorithms,
    });
    Ok(metahook_tls::server_config_builder(provider)?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(cert))
}
