//! Client certificates checked against `ca.crt` of a directory, re-read
//! when it changes. Asked for, not required: a client without one gets
//! through the handshake (the kubelet's probes and Prometheus have none)
//! and the routes decide ([`crate::PeerCerts`] is there only for a verified
//! certificate); a certificate another CA signed fails the handshake.

use crate::{CA_FILE, TlsError, certificates, read};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

type Verifier = Arc<dyn ClientCertVerifier>;

/// rustls' WebPKI client verifier for the CA in `dir`.
fn load(dir: &Path, provider: &Arc<CryptoProvider>) -> Result<(Vec<u8>, Verifier), TlsError> {
    let pem = read(dir, CA_FILE)?;
    let mut roots = RootCertStore::empty();
    for cert in certificates(&pem, dir, CA_FILE)? {
        roots.add(cert).map_err(|source| TlsError::CaCertificate {
            path: dir.join(CA_FILE),
            source,
        })?;
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|source| TlsError::Ca {
            path: dir.join(CA_FILE),
            source,
        })?;
    Ok((pem, verifier))
}

/// The client CA, replaced when `ca.crt` changes.
#[derive(Debug)]
pub struct ClientCa {
    dir: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<(Vec<u8>, Verifier)>,
}

impl ClientCa {
    /// Reads `dir/ca.crt`: a missing or bad one fails at start.
    pub fn load(dir: &Path, provider: Arc<CryptoProvider>) -> Result<Self, TlsError> {
        let current = load(dir, &provider)?;
        Ok(ClientCa {
            dir: dir.to_owned(),
            provider,
            current: RwLock::new(current),
        })
    }

    /// Re-reads `ca.crt`: `Ok(true)` when it changed and was taken; a bad
    /// one keeps the CA in use.
    pub fn reload(&self) -> Result<bool, TlsError> {
        let (pem, verifier) = load(&self.dir, &self.provider)?;
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        if current.0 == pem {
            return Ok(false);
        }
        *current = (pem, verifier);
        Ok(true)
    }

    fn verifier(&self) -> Verifier {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .clone()
    }
}

impl ClientCertVerifier for ClientCa {
    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        // None (the CA can change under a borrowed list): a client sends
        // the certificate it has, and one of another CA fails.
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.verifier()
            .verify_client_cert(end_entity, intermediates, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier().verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier().verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.verifier().supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{ca, provider, temp_dir};
    use rcgen::{CertificateParams, KeyPair};

    fn leaf(issuer: &rcgen::Issuer<'static, KeyPair>) -> CertificateDer<'static> {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        params.signed_by(&key, issuer).unwrap().der().clone()
    }

    #[test]
    fn a_certificate_of_the_current_ca_passes_and_of_another_does_not() {
        let dir = temp_dir("client-ca");
        let (first_pem, first) = ca("first");
        let (second_pem, second) = ca("second");
        std::fs::write(dir.join(CA_FILE), &first_pem).unwrap();
        let verifier = ClientCa::load(&dir, provider()).unwrap();
        assert!(!verifier.client_auth_mandatory(), "probes have none");
        let now = UnixTime::now();
        assert!(verifier.verify_client_cert(&leaf(&first), &[], now).is_ok());
        assert!(
            verifier
                .verify_client_cert(&leaf(&second), &[], now)
                .is_err()
        );
        assert!(!verifier.reload().unwrap());
        std::fs::write(dir.join(CA_FILE), &second_pem).unwrap();
        assert!(verifier.reload().unwrap());
        assert!(
            verifier
                .verify_client_cert(&leaf(&second), &[], now)
                .is_ok()
        );
        assert!(
            verifier
                .verify_client_cert(&leaf(&first), &[], now)
                .is_err()
        );
        std::fs::write(dir.join(CA_FILE), "not a certificate").unwrap();
        assert!(matches!(
            verifier.reload(),
            Err(TlsError::NoCertificate { .. })
        ));
        assert!(
            verifier
                .verify_client_cert(&leaf(&second), &[], now)
                .is_ok(),
            "the CA in use stays"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
