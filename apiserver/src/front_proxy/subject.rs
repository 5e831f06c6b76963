//! A front-proxy certificate's common name as kube-apiserver reads it:
//! Go's `Subject.CommonName`, which is the subject's *last* CN attribute
//! (crypto/x509/pkix `FillFromRDNSequence` assigns each in turn). Go's
//! parser decodes every attribute value of the subject as one of six string
//! types and refuses the whole certificate when one is anything else
//! (crypto/x509 `parseName`), so such a subject is refused here too: the
//! name judged is always the one kube-apiserver would judge.

use x509_parser::asn1_rs::{Any, Class, Tag};
use x509_parser::oid_registry::OID_X509_COMMON_NAME;
use x509_parser::x509::X509Name;

/// Why a certificate's subject has no name kube-apiserver would read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SubjectError {
    #[error("the client certificate cannot be read: {0}")]
    Unreadable(String),
    #[error(
        "the client certificate's subject holds a value kube-apiserver does not read as a string ({0})"
    )]
    NotAString(String),
}

/// The common name kube-apiserver reads from certificate `der`: the
/// subject's last CN, `None` when it has none.
pub(crate) fn common_name(der: &[u8]) -> Result<Option<String>, SubjectError> {
    let (_, cert) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| SubjectError::Unreadable(e.to_string()))?;
    last_common_name(cert.subject())
}

fn last_common_name(subject: &X509Name<'_>) -> Result<Option<String>, SubjectError> {
    let mut name = None;
    for attribute in subject.iter().flat_map(|rdn| rdn.iter()) {
        let value = go_string(attribute.attr_value())?;
        if *attribute.attr_type() == OID_X509_COMMON_NAME {
            name = Some(value);
        }
    }
    Ok(name)
}

/// An attribute value as Go's `parseASN1String` decodes it, or why Go
/// would refuse it.
fn go_string(value: &Any<'_>) -> Result<String, SubjectError> {
    let header = &value.header;
    let data = value.data;
    let refused = |what: &str| Err(SubjectError::NotAString(what.to_owned()));
    if header.class() != Class::Universal || header.is_constructed() {
        return refused("not a universal primitive value");
    }
    match header.tag() {
        Tag::Utf8String => match std::str::from_utf8(data) {
            Ok(text) => Ok(text.to_owned()),
            Err(_) => refused("UTF8String of invalid UTF-8"),
        },
        Tag::PrintableString if data.iter().all(|&b| printable(b)) => {
            Ok(data.iter().map(|&b| b as char).collect())
        }
        Tag::PrintableString => refused("PrintableString with a character outside its set"),
        // T.61 read as Latin-1, as Go (and BoringSSL) read it.
        Tag::TeletexString => Ok(data.iter().map(|&b| b as char).collect()),
        Tag::Ia5String if data.is_ascii() => Ok(data.iter().map(|&b| b as char).collect()),
        Tag::Ia5String => refused("IA5String with a byte over 127"),
        Tag::NumericString if data.iter().all(|&b| b.is_ascii_digit() || b == b' ') => {
            Ok(data.iter().map(|&b| b as char).collect())
        }
        Tag::NumericString => refused("NumericString with a character other than a digit or space"),
        Tag::BmpString => bmp(data).ok_or_else(|| {
            SubjectError::NotAString(
                "BMPString of an odd length or a reserved code point".to_owned(),
            )
        }),
        tag => Err(SubjectError::NotAString(format!("ASN.1 tag {}", tag.0))),
    }
}

/// Go's PrintableString set, with the `*` and `&` it lets in because
/// certificates in use carry them.
fn printable(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"'()+,-./ :=?*&".contains(&b)
}

/// UCS-2, big-endian, with a terminating NUL dropped; surrogates and
/// noncharacters refused, as Go refuses them.
fn bmp(data: &[u8]) -> Option<String> {
    if !data.len().is_multiple_of(2) {
        return None;
    }
    let data = data.strip_suffix(&[0, 0]).unwrap_or(data);
    data.chunks_exact(2)
        .map(|pair| {
            let point = u16::from_be_bytes([pair[0], pair[1]]);
            let reserved = point == 0xfffe
                || point == 0xffff
                || (0xfdd0..=0xfdef).contains(&point)
                || (0xd800..=0xdfff).contains(&point);
            if reserved {
                None
            } else {
                char::from_u32(u32::from(point))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DistinguishedName, DnType, DnValue, KeyPair};

    /// A self-signed certificate whose subject holds `attributes`, in order.
    fn certificate(attributes: &[(DnType, DnValue)]) -> Vec<u8> {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        let mut name = DistinguishedName::new();
        for (kind, value) in attributes {
            name.push(kind.clone(), value.clone());
        }
        params.distinguished_name = name;
        let key = KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    /// A second CN: rcgen keeps one value per attribute type, and this is
    /// the CN's OID under another name.
    fn another_cn() -> DnType {
        DnType::CustomDnType(vec![2, 5, 4, 3])
    }

    fn utf8(text: &str) -> DnValue {
        DnValue::Utf8String(text.to_owned())
    }

    /// What a subject's attributes are, and the name read from them
    /// (`Err`: the certificate is refused).
    type Case<'a> = (&'a str, Vec<(DnType, DnValue)>, Result<Option<&'a str>, ()>);

    #[test]
    fn the_name_judged_is_the_one_kube_apiserver_reads() {
        let proxy = "front-proxy-client";
        let cases: Vec<Case<'_>> = vec![
            (
                "one CN",
                vec![(DnType::CommonName, utf8(proxy))],
                Ok(Some(proxy)),
            ),
            (
                "two CNs: the last",
                vec![
                    (DnType::CommonName, utf8(proxy)),
                    (another_cn(), utf8("other-name")),
                ],
                Ok(Some("other-name")),
            ),
            (
                "two CNs the other way round",
                vec![
                    (DnType::CommonName, utf8("other-name")),
                    (another_cn(), utf8(proxy)),
                ],
                Ok(Some(proxy)),
            ),
            (
                "no CN",
                vec![(DnType::OrganizationName, utf8("system:masters"))],
                Ok(None),
            ),
            (
                "PrintableString",
                vec![(
                    DnType::CommonName,
                    DnValue::PrintableString(proxy.try_into().unwrap()),
                )],
                Ok(Some(proxy)),
            ),
            (
                "IA5String",
                vec![(
                    DnType::CommonName,
                    DnValue::Ia5String(proxy.try_into().unwrap()),
                )],
                Ok(Some(proxy)),
            ),
            (
                "BMPString",
                vec![(
                    DnType::CommonName,
                    DnValue::BmpString(proxy.try_into().unwrap()),
                )],
                Ok(Some(proxy)),
            ),
            (
                "TeletexString",
                vec![(
                    DnType::CommonName,
                    DnValue::TeletexString(proxy.try_into().unwrap()),
                )],
                Ok(Some(proxy)),
            ),
            (
                "a value Go does not read as a string, beside the CN",
                vec![
                    (DnType::CommonName, utf8(proxy)),
                    (
                        DnType::OrganizationName,
                        DnValue::UniversalString(proxy.try_into().unwrap()),
                    ),
                ],
                Err(()),
            ),
        ];
        for (what, attributes, expected) in cases {
            let got = common_name(&certificate(&attributes));
            match (&got, expected) {
                (Ok(name), Ok(want)) => assert_eq!(name.as_deref(), want, "{what}"),
                (Err(SubjectError::NotAString(_)), Err(())) => {}
                _ => panic!("{what}: {got:?}"),
            }
        }
    }

    #[test]
    fn go_strings_are_decoded_as_go_decodes_them() {
        assert!(printable(b'*') && printable(b'&') && printable(b' '));
        assert!(!printable(b'@') && !printable(b'_') && !printable(0x80));
        // UCS-2 with its terminator; a surrogate, a noncharacter and an odd
        // length refused.
        assert_eq!(bmp(&[0, b'h', 0, b'i', 0, 0]).as_deref(), Some("hi"));
        assert_eq!(bmp(&[0xd8, 0x00]), None);
        assert_eq!(bmp(&[0xff, 0xfe]), None);
        assert_eq!(bmp(&[0, b'h', 0]), None);
        assert!(common_name(b"not a certificate").is_err());
    }
}
