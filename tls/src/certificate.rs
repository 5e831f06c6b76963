//! One certificate as Go's `crypto/x509` sees it when it verifies a chain:
//! the fields `Certificate.Verify` reads, parsed with x509-parser, and the
//! certificates Go's parser refuses refused here too (a v1 or v2
//! certificate with extensions, an extension twice, inner and outer
//! signature algorithms that differ, a malformed extension it reads, a
//! key identifier or authorityInfoAccess marked critical).

use crate::refusal::ClientCertRefused;
use x509_parser::asn1_rs::{Any, FromDer};
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::X509Certificate;

/// A name of a subject alternative name or of a name constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Name<'a> {
    Dns(&'a str),
    /// The address (4 or 16 bytes), or for a constraint address and mask.
    Ip(&'a [u8]),
    Email(&'a str),
    Uri(&'a str),
    /// Any other kind: Go reads none of them.
    Other,
}

/// A `nameConstraints` extension.
#[derive(Debug, Default)]
pub(crate) struct NameConstraints<'a> {
    pub permitted: Vec<Name<'a>>,
    pub excluded: Vec<Name<'a>>,
}

/// What `Certificate.Verify` reads of a certificate.
#[derive(Debug)]
pub(crate) struct Cert<'a> {
    pub der: &'a [u8],
    /// 1, 2 or 3.
    pub version: u32,
    /// The encoded names: Go matches issuer to subject byte for byte.
    pub subject: &'a [u8],
    pub issuer: &'a [u8],
    pub not_before: i64,
    pub not_after: i64,
    /// The whole SubjectPublicKeyInfo, its AlgorithmIdentifier's contents
    /// (as rustls' algorithms name theirs) and the key.
    pub spki: &'a [u8],
    pub key_algorithm: &'a [u8],
    pub key: &'a [u8],
    /// What the issuer signed, how, and the signature.
    pub tbs: &'a [u8],
    pub signature_algorithm: &'a [u8],
    pub signature: &'a [u8],
    /// `basicConstraints`: cA, and pathLenConstraint if given.
    pub basic_constraints: Option<(bool, Option<u32>)>,
    /// Whether `keyUsage` allows keyCertSign; `None` when absent or empty
    /// (Go: any use).
    pub key_cert_sign: Option<bool>,
    /// `extKeyUsage`, when it names any usage: (anyExtendedKeyUsage,
    /// clientAuth).
    pub ext_key_usage: Option<(bool, bool)>,
    /// The `subjectAltName` extension's value (Go compares it to tell two
    /// certificates of one subject and key apart) and its names.
    pub san: Option<(&'a [u8], Vec<Name<'a>>)>,
    pub name_constraints: Option<NameConstraints<'a>>,
    /// `policyConstraints` or `policyMappings`: what can make Go's RFC 5280
    /// policy check refuse a chain (its other inputs cannot, with the
    /// options a TLS server passes).
    pub policy_rules: bool,
    /// The first critical extension Go does not handle.
    pub unhandled_critical: Option<String>,
}

/// `2.5.29.n` (id-ce), as the bytes of the OID's contents.
fn id_ce(oid: &[u8]) -> Option<u8> {
    match oid {
        [0x55, 0x1d, n] => Some(*n),
        _ => None,
    }
}

/// id-pe-authorityInfoAccess, 1.3.6.1.5.5.7.1.1.
const AUTHORITY_INFO_ACCESS: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x01, 0x01];

fn malformed(what: &str) -> ClientCertRefused {
    ClientCertRefused::Unsupported(format!("malformed certificate: {what}"))
}

/// The contents of the next DER element of `input`, and what follows it.
fn element(input: &[u8]) -> Option<(&[u8], Any<'_>)> {
    Any::from_der(input).ok()
}

/// The signed TBSCertificate (header included), the outer signature
/// algorithm and the one inside the TBSCertificate (their contents), which
/// Go requires to be the same.
fn signed_parts(der: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let (_, cert) = element(der)?;
    let (rest, tbs) = element(cert.data)?;
    let signed = &cert.data[..cert.data.len() - rest.len()];
    let (_, outer) = element(rest)?;
    let (mut rest, first) = element(tbs.data)?;
    if first.header.is_contextspecific() && first.header.tag().0 == 0 {
        (rest, _) = element(rest)?; // the version, then the serial number
    }
    let (_, inner) = element(rest)?;
    Some((signed, outer.data, inner.data))
}

/// The names Go reads, and for a constraint (`constraint`) refuses the
/// IP address values it refuses (not an address and a mask).
fn names<'a: 'b, 'b>(
    general: impl Iterator<Item = &'b GeneralName<'a>>,
    constraint: bool,
) -> Result<Vec<Name<'a>>, ClientCertRefused> {
    general
        .map(|name| match *name {
            GeneralName::DNSName(dns) => Ok(Name::Dns(dns)),
            GeneralName::IPAddress(ip) => match (constraint, ip.len()) {
                (false, 4 | 16) | (true, 8 | 32) => Ok(Name::Ip(ip)),
                _ => Err(malformed("an IP address of the wrong length")),
            },
            GeneralName::RFC822Name(email) => Ok(Name::Email(email)),
            GeneralName::URI(uri) => Ok(Name::Uri(uri)),
            GeneralName::Invalid(..) => Err(malformed("an unreadable name")),
            _ => Ok(Name::Other),
        })
        .collect()
}

impl<'a> Cert<'a> {
    /// Parses `der`; what Go's `x509.ParseCertificate` refuses is refused.
    pub fn parse(der: &'a [u8]) -> Result<Self, ClientCertRefused> {
        let (rest, cert): (_, X509Certificate<'a>) = x509_parser::parse_x509_certificate(der)
            .map_err(|e| ClientCertRefused::Unsupported(format!("unreadable certificate: {e}")))?;
        if !rest.is_empty() {
            return Err(malformed("trailing data"));
        }
        let tbs = &cert.tbs_certificate;
        let version = tbs.version.0 + 1;
        if version > 3 {
            return Err(malformed("version over 3"));
        }
        if version < 3 && !tbs.extensions().is_empty() {
            return Err(malformed("extensions in a certificate before version 3"));
        }
        let (signed, outer, inner) =
            signed_parts(der).ok_or_else(|| malformed("no signature algorithm"))?;
        if outer != inner {
            return Err(malformed("inner and outer signature algorithms differ"));
        }
        let spki = &tbs.subject_pki;
        let (_, spki_sequence) = element(spki.raw).ok_or_else(|| malformed("public key"))?;
        let (_, key_algorithm) =
            element(spki_sequence.data).ok_or_else(|| malformed("public key algorithm"))?;
        if spki.subject_public_key.unused_bits != 0 || cert.signature_value.unused_bits != 0 {
            return Err(malformed("a key or signature of partial bytes"));
        }
        let key: &'a [u8] = match &spki.subject_public_key.data {
            std::borrow::Cow::Borrowed(key) => key,
            std::borrow::Cow::Owned(_) => return Err(malformed("public key")),
        };
        let signature: &'a [u8] = match &cert.signature_value.data {
            std::borrow::Cow::Borrowed(signature) => signature,
            std::borrow::Cow::Owned(_) => return Err(malformed("signature")),
        };
        let mut parsed = Cert {
            der,
            version,
            subject: tbs.subject.as_raw(),
            issuer: tbs.issuer.as_raw(),
            not_before: tbs.validity.not_before.timestamp(),
            not_after: tbs.validity.not_after.timestamp(),
            spki: spki.raw,
            key_algorithm: key_algorithm.data,
            key,
            tbs: signed,
            signature_algorithm: outer,
            signature,
            basic_constraints: None,
            key_cert_sign: None,
            ext_key_usage: None,
            san: None,
            name_constraints: None,
            policy_rules: false,
            unhandled_critical: None,
        };
        parsed.read_extensions(&cert)?;
        Ok(parsed)
    }

    /// Go's `processExtensions`: the extensions it reads, and which
    /// critical ones it leaves unhandled.
    fn read_extensions(&mut self, cert: &X509Certificate<'a>) -> Result<(), ClientCertRefused> {
        let extensions = cert.tbs_certificate.extensions();
        for (i, ext) in extensions.iter().enumerate() {
            let oid = ext.oid.as_bytes();
            if extensions[..i].iter().any(|e| e.oid.as_bytes() == oid) {
                return Err(malformed("an extension twice"));
            }
            let parsed = ext.parsed_extension();
            let handled = match id_ce(oid) {
                // keyUsage, basicConstraints, subjectAltName, nameConstraints,
                // cRLDistributionPoints, authorityKeyIdentifier,
                // policyConstraints, extKeyUsage, subjectKeyIdentifier,
                // certificatePolicies, policyMappings, inhibitAnyPolicy.
                Some(15 | 19 | 17 | 30 | 31 | 35 | 36 | 37 | 14 | 32 | 33 | 54) => {
                    // Go's parser: "incorrectly marked critical" (RFC 5280
                    // 4.2.1.1, 4.2.1.2).
                    match id_ce(oid) {
                        Some(35) if ext.critical => {
                            return Err(malformed("authorityKeyIdentifier marked critical"));
                        }
                        Some(14) if ext.critical => {
                            return Err(malformed("subjectKeyIdentifier marked critical"));
                        }
                        _ => {}
                    }
                    if let ParsedExtension::ParseError { error } = parsed {
                        return Err(malformed(&format!(
                            "extension {}: {error}",
                            ext.oid.to_id_string()
                        )));
                    }
                    self.read(oid, parsed, ext.critical, ext.value)?
                }
                _ if oid == AUTHORITY_INFO_ACCESS && ext.critical => {
                    return Err(malformed("authorityInfoAccess marked critical"));
                }
                _ => oid == AUTHORITY_INFO_ACCESS,
            };
            if ext.critical && !handled && self.unhandled_critical.is_none() {
                self.unhandled_critical = Some(ext.oid.to_id_string());
            }
        }
        Ok(())
    }

    /// Takes one extension Go reads; whether Go handles it as it is.
    fn read(
        &mut self,
        oid: &[u8],
        parsed: &ParsedExtension<'a>,
        critical: bool,
        value: &'a [u8],
    ) -> Result<bool, ClientCertRefused> {
        match parsed {
            ParsedExtension::BasicConstraints(bc) => {
                self.basic_constraints = Some((bc.ca, bc.path_len_constraint));
            }
            ParsedExtension::KeyUsage(usage) => {
                self.key_cert_sign = (usage.flags != 0).then_some(usage.key_cert_sign());
            }
            ParsedExtension::ExtendedKeyUsage(eku) => {
                let named = eku.any
                    || eku.server_auth
                    || eku.client_auth
                    || eku.code_signing
                    || eku.email_protection
                    || eku.time_stamping
                    || eku.ocsp_signing
                    || !eku.other.is_empty();
                self.ext_key_usage = named.then_some((eku.any, eku.client_auth));
            }
            ParsedExtension::SubjectAlternativeName(san) => {
                let names = names(san.general_names.iter(), false)?;
                // Go leaves a critical one with none of the names it reads
                // unhandled.
                let readable = names.iter().any(|n| *n != Name::Other);
                self.san = Some((value, names));
                return Ok(readable);
            }
            ParsedExtension::NameConstraints(nc) => {
                let subtrees = |trees: &Option<Vec<_>>| match trees {
                    Some(trees) => names(
                        trees
                            .iter()
                            .map(|t: &x509_parser::extensions::GeneralSubtree<'a>| &t.base),
                        true,
                    ),
                    None => Ok(Vec::new()),
                };
                let constraints = NameConstraints {
                    permitted: subtrees(&nc.permitted_subtrees)?,
                    excluded: subtrees(&nc.excluded_subtrees)?,
                };
                if constraints.permitted.is_empty() && constraints.excluded.is_empty() {
                    return Err(malformed("empty name constraints"));
                }
                // Go leaves a critical one with a kind of name it does not
                // read unhandled.
                let readable = !constraints
                    .permitted
                    .iter()
                    .chain(&constraints.excluded)
                    .any(|n| *n == Name::Other);
                self.name_constraints = Some(constraints);
                return Ok(readable || !critical);
            }
            ParsedExtension::PolicyConstraints(_) | ParsedExtension::PolicyMappings(_) => {
                self.policy_rules = true;
            }
            // x509-parser reads these itself when they are well formed.
            _ if matches!(id_ce(oid), Some(36 | 33)) => self.policy_rules = true,
            _ => {}
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, CustomExtension, KeyPair};

    #[test]
    fn the_fields_go_reads_are_read_and_an_unknown_critical_extension_is_noted() {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["a.example".to_owned()]).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(1));
        params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let mut unknown =
            CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 99999, 1], vec![5, 0]);
        unknown.set_criticality(true);
        params.custom_extensions = vec![unknown];
        let der = params.self_signed(&key).unwrap().der().to_vec();
        let cert = Cert::parse(&der).unwrap();
        assert_eq!(cert.version, 3);
        assert_eq!(cert.subject, cert.issuer);
        assert_eq!(cert.basic_constraints, Some((true, Some(1))));
        assert_eq!(cert.key_cert_sign, Some(true));
        assert_eq!(cert.ext_key_usage, Some((false, false)), "serverAuth only");
        assert_eq!(
            cert.san.as_ref().map(|(_, names)| names.clone()),
            Some(vec![Name::Dns("a.example")])
        );
        assert_eq!(
            cert.unhandled_critical.as_deref(),
            Some("1.3.6.1.4.1.99999.1")
        );
        assert!(cert.not_before < cert.not_after);
        let mut trailing = der.clone();
        trailing.push(0);
        assert!(Cert::parse(&trailing).is_err());
    }
}
