//! Certificates for TLS tests: a CA, server and client pairs it signs,
//! written as a `kubernetes.io/tls` Secret would mount them.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    SanType,
};
use std::path::Path;

/// A certificate authority.
pub struct Ca {
    /// Its certificate, PEM.
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// A certificate and its key, PEM.
#[derive(Debug, Clone)]
pub struct Pair {
    pub cert: String,
    pub key: String,
}

impl Ca {
    pub fn new(name: &str) -> Self {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).expect("CA");
        Ca {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    fn sign(&self, mut params: CertificateParams, name: &str) -> Pair {
        let key = KeyPair::generate().expect("key");
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.signed_by(&key, &self.issuer).expect("signed");
        Pair {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }

    /// A serving certificate for DNS names and IP addresses.
    pub fn server(&self, names: &[&str]) -> Pair {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.subject_alt_names = names
            .iter()
            .map(|n| match n.parse() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*n).try_into().expect("a DNS name")),
            })
            .collect();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params, names.first().copied().unwrap_or("server"))
    }

    /// A client certificate with common name `name`.
    pub fn client(&self, name: &str) -> Pair {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params, name)
    }
}

impl Pair {
    /// Writes `tls.crt` and `tls.key` into `dir`, each replaced at once
    /// (a rename), as the kubelet swaps a Secret's files.
    pub fn write(&self, dir: &Path) {
        for (name, text) in [("tls.crt", &self.cert), ("tls.key", &self.key)] {
            let tmp = dir.join(format!(".{name}.tmp"));
            std::fs::write(&tmp, text).expect("write");
            std::fs::rename(&tmp, dir.join(name)).expect("rename");
        }
    }
}
