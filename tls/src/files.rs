//! The certificate directory: its files' names, reading them, and what
//! can go wrong doing so.

use crate::refusal::ClientCertRefused;
use std::path::{Path, PathBuf};

pub const CERT_FILE: &str = "tls.crt";
pub const KEY_FILE: &str = "tls.key";
pub const CA_FILE: &str = "ca.crt";

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
    #[error("a certificate in {path} cannot be read")]
    CaCertificate {
        path: PathBuf,
        #[source]
        source: ClientCertRefused,
    },
    #[error("building the TLS configuration failed")]
    Config(#[source] rustls::Error),
}

/// The bytes of `dir/name`.
pub(crate) fn read(dir: &Path, name: &str) -> Result<Vec<u8>, TlsError> {
    let path = dir.join(name);
    std::fs::read(&path).map_err(|source| TlsError::Read { path, source })
}

/// Every PEM certificate in `pem` (from `dir/name`); none is an error.
pub(crate) fn certificates(
    pem: &[u8],
    dir: &Path,
    name: &str,
) -> Result<Vec<rustls_pki_types::CertificateDer<'static>>, TlsError> {
    use rustls_pki_types::pem::PemObject;
    let chain: Vec<_> = rustls_pki_types::CertificateDer::pem_slice_iter(pem)
        .flatten()
        .collect();
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: dir.join(name),
        });
    }
    Ok(chain)
}
