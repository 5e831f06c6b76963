//! Client certificates checked against `ca.crt` of a directory, re-read
//! when it changes, as Go's TLS server checks them (`chain`). Asked for,
//! not required: a client without one gets through the handshake (the
//! kubelet's probes and Prometheus have none) and the routes decide
//! ([`crate::PeerCerts`] is there only for a verified certificate); a
//! certificate another CA signed fails the handshake.

use crate::certificate::Cert;
use crate::chain;
use crate::files::{CA_FILE, TlsError, certificates, read};
use crate::refusal::ClientCertRefused;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, SubjectPublicKeyInfoDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// The certificates of `ca.crt`: its bytes (to tell a change) and each
/// certificate's DER, every one readable.
type Roots = (Vec<u8>, Arc<Vec<Vec<u8>>>);

fn load(dir: &Path) -> Result<Roots, TlsError> {
    let pem = read(dir, CA_FILE)?;
    let roots = certificates(&pem, dir, CA_FILE)?
        .into_iter()
        .map(|cert| cert.to_vec())
        .collect::<Vec<_>>();
    for der in &roots {
        Cert::parse(der).map_err(|source| TlsError::CaCertificate {
            path: dir.join(CA_FILE),
            source,
        })?;
    }
    Ok((pem, Arc::new(roots)))
}

/// The client CA, replaced when `ca.crt` changes, and the client
/// certificate verifier that uses it: see `chain` for what it checks (as
/// Go's TLS server does, v1 certificates included). Or no CA
/// ([`ClientCa::judged_later`]): any certificate whose key the client
/// proves it holds.
#[derive(Debug)]
pub struct ClientCa {
    /// `None` for a certificate judged later.
    ca: Option<Ca>,
    provider: Arc<CryptoProvider>,
}

/// Where `ca.crt` is, and its certificates as last read.
#[derive(Debug)]
struct Ca {
    dir: PathBuf,
    current: RwLock<Roots>,
}

impl ClientCa {
    /// Reads `dir/ca.crt`: a missing or bad one fails at start.
    pub fn load(dir: &Path, provider: Arc<CryptoProvider>) -> Result<Self, TlsError> {
        Ok(ClientCa {
            ca: Some(Ca {
                dir: dir.to_owned(),
                current: RwLock::new(load(dir)?),
            }),
            provider,
        })
    }

    /// No CA: the handshake checks only that the client holds its
    /// certificate's key, and the caller judges who signed it (a stand-in
    /// API server answers a stranger with a 401 and a reason, not a failed
    /// handshake, and its CA comes and goes with a ConfigMap).
    pub fn judged_later(provider: Arc<CryptoProvider>) -> Self {
        ClientCa { ca: None, provider }
    }

    /// Re-reads `ca.crt`: `Ok(true)` when it changed and was taken; a bad
    /// one keeps the CA in use.
    pub fn reload(&self) -> Result<bool, TlsError> {
        let Some(ca) = &self.ca else {
            return Ok(false);
        };
        let (pem, roots) = load(&ca.dir)?;
        let mut current = ca.current.write().unwrap_or_else(|p| p.into_inner());
        if current.0 == pem {
            return Ok(false);
        }
        *current = (pem, roots);
        Ok(true)
    }

    fn algorithms(&self) -> &WebPkiSupportedAlgorithms {
        &self.provider.signature_verification_algorithms
    }
}

/// The client's key, from its certificate (which the chain check read).
struct ClientKey {
    spki: Vec<u8>,
    /// The contents of its AlgorithmIdentifier.
    algorithm: Vec<u8>,
    key: Vec<u8>,
}

fn client_key(cert: &CertificateDer<'_>) -> Result<ClientKey, rustls::Error> {
    let cert = Cert::parse(cert)?;
    Ok(ClientKey {
        spki: cert.spki.to_vec(),
        algorithm: cert.key_algorithm.to_vec(),
        key: cert.key.to_vec(),
    })
}

fn bad_handshake_signature(why: impl std::fmt::Display) -> rustls::Error {
    ClientCertRefused::BadSignature(format!(
        "the client's handshake signature does not verify with its certificate's key: {why}"
    ))
    .into()
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
        let Some(ca) = &self.ca else {
            return Ok(ClientCertVerified::assertion());
        };
        let roots = ca
            .current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .clone();
        let intermediates: Vec<&[u8]> = intermediates.iter().map(|c| c.as_ref()).collect();
        let now = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        chain::verify(
            &roots,
            end_entity,
            &intermediates,
            now,
            self.algorithms().all,
        )?;
        Ok(ClientCertVerified::assertion())
    }

    // rustls' verify_tls12_signature and verify_tls13_signature read the
    // certificate with webpki, which refuses a v1 one: these verify with
    // the same algorithms from the certificate's key.

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // TLS 1.2 tries each algorithm of the scheme, as rustls does.
        let Some((_, algorithms)) = self
            .algorithms()
            .mapping
            .iter()
            .find(|(s, _)| *s == dss.scheme)
        else {
            return Err(rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme.into());
        };
        let client = client_key(cert)?;
        match chain::verify_signature(
            algorithms,
            &client.algorithm,
            &client.key,
            message,
            dss.signature(),
        ) {
            Some(true) => Ok(HandshakeSignatureValid::assertion()),
            Some(false) => Err(bad_handshake_signature(format!("{:?}", dss.scheme))),
            None => Err(ClientCertRefused::Unsupported(format!(
                "signature scheme {:?} does not fit the client's key",
                dss.scheme
            ))
            .into()),
        }
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let client = client_key(cert)?;
        rustls::crypto::verify_tls13_signature_with_raw_key(
            message,
            &SubjectPublicKeyInfoDer::from(client.spki),
            dss,
            self.algorithms(),
        )
        .map_err(|err| match err {
            rustls::Error::InvalidCertificate(_) => bad_handshake_signature(err),
            other => other,
        })
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms().supported_schemes()
    }
}

#[cfg(test)]
mod tests;
