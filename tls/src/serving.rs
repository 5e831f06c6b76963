//! The serving certificate: `tls.crt` and `tls.key` of a directory,
//! replaced when the files change.

use crate::files::{CERT_FILE, KEY_FILE, TlsError, certificates, read};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::PrivateKeyDer;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// The certificate chain and key in `dir`, as their bytes (to tell a
/// change) and as rustls uses them.
fn load(dir: &Path, provider: &CryptoProvider) -> Result<(Vec<u8>, CertifiedKey), TlsError> {
    let (cert_pem, key_pem) = (read(dir, CERT_FILE)?, read(dir, KEY_FILE)?);
    let chain = certificates(&cert_pem, dir, CERT_FILE)?;
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

    /// The crypto provider it was loaded with.
    pub fn provider(&self) -> Arc<CryptoProvider> {
        self.provider.clone()
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

    fn current(&self) -> Arc<CertifiedKey> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .clone()
    }
}

impl ResolvesServerCert for ServingCert {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{provider, temp_dir, write_pair};

    #[test]
    fn a_changed_pair_is_taken_and_a_broken_one_is_not() {
        let dir = temp_dir("serving");
        write_pair(&dir, &["one.example"]);
        let cert = ServingCert::load(&dir, provider()).unwrap();
        let first = cert.current();
        assert!(!cert.reload().unwrap(), "unchanged files are not a change");
        write_pair(&dir, &["two.example"]);
        assert!(cert.reload().unwrap());
        let second = cert.current();
        assert_ne!(first.cert, second.cert);
        // Half-written: the certificate of a new pair, the old key.
        let key = std::fs::read(dir.join(KEY_FILE)).unwrap();
        write_pair(&dir, &["three.example"]);
        std::fs::write(dir.join(KEY_FILE), key).unwrap();
        assert!(matches!(cert.reload(), Err(TlsError::Mismatch { .. })));
        assert_eq!(cert.current().cert, second.cert, "the pair in use stays");
        std::fs::remove_file(dir.join(KEY_FILE)).unwrap();
        assert!(matches!(
            ServingCert::load(&dir, provider()),
            Err(TlsError::Read { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
