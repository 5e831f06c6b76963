//! Certificates for the verifier's tests: v3 ones from rcgen, and X.509
//! v1 ones shaped as `openssl x509 -req` without an extensions file makes
//! them (Metacontroller's webhook-auth example): version 1, an EC P-256
//! key, ecdsa-with-SHA256, a subject of one common name, nothing else.

use crate::certificate::Cert;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use yasna::models::{ObjectIdentifier, UTCTime};

/// 2025-06-01T00:00:00Z: inside every validity below but the expired ones.
pub(crate) const NOW: i64 = 1_748_736_000;

/// A certificate authority: its certificate and what signs with it.
pub(crate) struct Authority {
    pub der: Vec<u8>,
    pub pem: String,
    pub params: CertificateParams,
    pub key: KeyPair,
}

/// `name` as an X.509 Name of one common name, as openssl's `-subj /CN=`.
pub(crate) fn common_name(name: &str) -> Vec<u8> {
    yasna::construct_der(|w| {
        w.write_sequence(|w| {
            w.next().write_set(|w| {
                w.next().write_sequence(|w| {
                    w.next()
                        .write_oid(&ObjectIdentifier::from_slice(&[2, 5, 4, 3]));
                    w.next().write_utf8_string(name);
                })
            })
        })
    })
}

fn ecdsa_with_sha256(w: yasna::DERWriter<'_>) {
    w.write_sequence(|w| {
        w.next()
            .write_oid(&ObjectIdentifier::from_slice(&[1, 2, 840, 10045, 4, 3, 2]))
    })
}

/// A v1 certificate for `key` named `subject`, issued by `issuer_name`
/// (an encoded Name) and signed by `signer`, valid from `not_before` to
/// `not_after` (UTCTime text, `YYMMDDhhmmssZ`).
pub(crate) fn v1(
    subject: &str,
    key: &KeyPair,
    issuer_name: &[u8],
    signer: &KeyPair,
    (not_before, not_after): (&str, &str),
) -> Vec<u8> {
    use rcgen::{PublicKeyData, SigningKey};
    let time = |t: &str| UTCTime::parse(t.as_bytes()).unwrap();
    let tbs = yasna::construct_der(|w| {
        w.write_sequence(|w| {
            // No [0] version: v1, the default.
            w.next().write_u64(0x1234);
            ecdsa_with_sha256(w.next());
            w.next().write_der(issuer_name);
            w.next().write_sequence(|w| {
                w.next().write_utctime(&time(not_before));
                w.next().write_utctime(&time(not_after));
            });
            w.next().write_der(&common_name(subject));
            w.next().write_der(&key.subject_public_key_info());
        })
    });
    let signature = signer.sign(&tbs).unwrap();
    yasna::construct_der(|w| {
        w.write_sequence(|w| {
            w.next().write_der(&tbs);
            ecdsa_with_sha256(w.next());
            w.next().write_bitvec_bytes(&signature, signature.len() * 8);
        })
    })
}

/// Valid from 2020 to 2030, as `-days 3650`.
pub(crate) const TEN_YEARS: (&str, &str) = ("200101000000Z", "300101000000Z");

impl Authority {
    /// A root as `openssl req -x509` makes one (v3, basicConstraints cA).
    pub fn root(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        Self::self_signed(params)
    }

    pub fn self_signed(params: CertificateParams) -> Self {
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Authority {
            der: cert.der().to_vec(),
            pem: cert.pem(),
            params,
            key,
        }
    }

    /// Its subject, encoded, as a certificate it issues names it.
    pub fn name(&self) -> Vec<u8> {
        Cert::parse(&self.der).unwrap().subject.to_vec()
    }

    /// A v3 certificate of `params` (its common name `name`) for `key`.
    pub fn issue(&self, params: CertificateParams, name: &str, key: &KeyPair) -> Vec<u8> {
        self.sign(params, name, key).der().to_vec()
    }

    fn sign(&self, mut params: CertificateParams, name: &str, key: &KeyPair) -> rcgen::Certificate {
        params.distinguished_name.push(DnType::CommonName, name);
        let issuer = Issuer::new(self.params.clone(), &self.key);
        params.signed_by(key, &issuer).unwrap()
    }

    /// A v3 CA under this one.
    pub fn intermediate(&self, mut params: CertificateParams, name: &str) -> Authority {
        if params.is_ca == IsCa::NoCa {
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        let key = KeyPair::generate().unwrap();
        let cert = self.sign(params.clone(), name, &key);
        params.distinguished_name.push(DnType::CommonName, name);
        Authority {
            der: cert.der().to_vec(),
            pem: cert.pem(),
            params,
            key,
        }
    }

    /// A v1 client certificate as Metacontroller's example makes one.
    pub fn v1_client(&self, name: &str, validity: (&str, &str)) -> (Vec<u8>, KeyPair) {
        let key = KeyPair::generate().unwrap();
        (v1(name, &key, &self.name(), &self.key, validity), key)
    }
}

pub(crate) fn no_extensions() -> CertificateParams {
    CertificateParams::new(Vec::<String>::new()).unwrap()
}
