use super::*;
use actix_web::http::header::{HeaderName, HeaderValue};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

/// A CA and a client certificate it signs with common name `cn`.
pub(crate) struct Pki {
    pub ca_pem: String,
    pub client: CertificateDer<'static>,
    pub client_key: rustls_pki_types::PrivateKeyDer<'static>,
}

pub(crate) fn pki(cn: &str) -> Pki {
    pki_named(&[(rcgen::DnType::CommonName, cn.into())])
}

/// A CA and a client certificate it signs whose subject holds
/// `attributes`, in order.
pub(crate) fn pki_named(attributes: &[(rcgen::DnType, rcgen::DnValue)]) -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "front-proxy-ca");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    for (kind, value) in attributes {
        params.distinguished_name.push(kind.clone(), value.clone());
    }
    let client = params.signed_by(&key, &issuer).unwrap();
    Pki {
        ca_pem: ca.pem(),
        client: client.der().clone(),
        client_key: rustls_pki_types::PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
    }
}

pub(crate) fn data(ca_pem: &str, allowed: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("requestheader-client-ca-file".to_owned(), ca_pem.to_owned()),
        ("requestheader-allowed-names".to_owned(), allowed.to_owned()),
        (
            "requestheader-username-headers".to_owned(),
            r#"["X-Remote-User"]"#.to_owned(),
        ),
        (
            "requestheader-group-headers".to_owned(),
            r#"["X-Remote-Group"]"#.to_owned(),
        ),
        (
            "requestheader-extra-headers-prefix".to_owned(),
            r#"["X-Remote-Extra-"]"#.to_owned(),
        ),
    ])
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (k, v) in pairs {
        map.append(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    map
}

#[test]
fn the_front_proxys_certificate_makes_its_headers_believed() {
    let pki = pki("front-proxy-client");
    let settings =
        RequestHeader::from_data(&data(&pki.ca_pem, r#"["front-proxy-client"]"#)).unwrap();
    let h = headers(&[
        ("X-Remote-User", "alice"),
        ("X-Remote-Group", "devs"),
        ("X-Remote-Group", "ops"),
        ("X-Remote-Extra-Scopes%2fread", "a"),
        ("X-Remote-Extra-Scopes%2fread", "b"),
    ]);
    let user = settings
        .authenticate(Some(std::slice::from_ref(&pki.client)), &h)
        .unwrap();
    assert_eq!(user.name, "alice");
    assert_eq!(user.groups, ["devs", "ops", "system:authenticated"]);
    assert_eq!(user.extra.get("scopes/read").unwrap(), &["a", "b"]);
    // The aggregator's own check carries no group: it still gets the
    // group every authenticated user has.
    let aggregator = settings
        .authenticate(
            Some(std::slice::from_ref(&pki.client)),
            &headers(&[("X-Remote-User", "system:kube-aggregator")]),
        )
        .unwrap();
    assert_eq!(aggregator.groups, ["system:authenticated"]);
}

#[test]
fn without_the_front_proxys_certificate_nothing_is_believed() {
    let proxy = pki("front-proxy-client");
    let settings =
        RequestHeader::from_data(&data(&proxy.ca_pem, r#"["front-proxy-client"]"#)).unwrap();
    let h = headers(&[
        ("X-Remote-User", "alice"),
        ("X-Remote-Group", "system:masters"),
    ]);
    let none = settings.authenticate(None, &h).unwrap_err();
    assert!(none.starts_with("no client certificate"), "{none}");
    // Signed by another CA.
    let stranger = pki("front-proxy-client");
    let other = settings
        .authenticate(Some(&[stranger.client]), &h)
        .unwrap_err();
    assert!(other.contains("not the front proxy's"), "{other}");
    // Signed by the CA, but not an allowed name.
    let signed_other_name = {
        let same_ca =
            RequestHeader::from_data(&data(&proxy.ca_pem, r#"["someone-else"]"#)).unwrap();
        same_ca
            .authenticate(Some(std::slice::from_ref(&proxy.client)), &h)
            .unwrap_err()
    };
    assert!(
        signed_other_name.contains("not an allowed front-proxy name"),
        "{signed_other_name}"
    );
    // No allowed names: any certificate the CA signed.
    let any_name = RequestHeader::from_data(&data(&proxy.ca_pem, "")).unwrap();
    assert!(
        any_name
            .authenticate(Some(std::slice::from_ref(&proxy.client)), &h)
            .is_ok()
    );
    // No user name.
    let nameless = settings
        .authenticate(
            Some(std::slice::from_ref(&proxy.client)),
            &headers(&[("X-Remote-Group", "g")]),
        )
        .unwrap_err();
    assert!(nameless.contains("no user name"), "{nameless}");
    // Before the ConfigMap is read: nobody.
    let unread = FrontProxy::default();
    assert!(unread.authenticate(Some(&[proxy.client]), &h).is_err());
}

#[test]
fn allowed_names_are_judged_by_the_common_name_kube_apiserver_reads() {
    use rcgen::{DnType, DnValue};
    let cn = |name: &str| (DnType::CommonName, DnValue::from(name));
    // rcgen keeps one value per attribute type: a second CN is the
    // CN's OID under another name.
    let second_cn = |name: &str| (DnType::CustomDnType(vec![2, 5, 4, 3]), DnValue::from(name));
    let not_a_string = (
        DnType::OrganizationName,
        DnValue::UniversalString("front-proxy-client".try_into().unwrap()),
    );
    let h = headers(&[("X-Remote-User", "alice")]);
    // (the subject, the allowed names, whether the request is trusted)
    let cases = [
        (
            vec![cn("front-proxy-client")],
            r#"["front-proxy-client"]"#,
            true,
        ),
        (
            vec![cn("front-proxy-client"), second_cn("other-name")],
            r#"["front-proxy-client"]"#,
            false,
        ),
        (
            vec![cn("other-name"), second_cn("front-proxy-client")],
            r#"["front-proxy-client"]"#,
            true,
        ),
        (
            vec![cn("front-proxy-client"), not_a_string.clone()],
            r#"["front-proxy-client"]"#,
            false,
        ),
        // Any name allowed: still only a subject kube-apiserver can read.
        (vec![cn("front-proxy-client"), not_a_string], "", false),
        (vec![cn("anyone")], "", true),
    ];
    for (subject, allowed, trusted) in cases {
        let pki = pki_named(&subject);
        let settings = RequestHeader::from_data(&data(&pki.ca_pem, allowed)).unwrap();
        let result = settings.authenticate(Some(std::slice::from_ref(&pki.client)), &h);
        assert_eq!(
            result.is_ok(),
            trusted,
            "{subject:?} with {allowed:?}: {result:?}"
        );
    }
}

#[test]
fn a_cluster_without_an_aggregation_layer_is_named() {
    let err = RequestHeader::from_data(&BTreeMap::new()).unwrap_err();
    assert!(matches!(err, RequestHeaderError::NoCa));
    let mut bad = data(&pki("x").ca_pem, "not json");
    bad.insert(
        "requestheader-allowed-names".to_owned(),
        "not json".to_owned(),
    );
    assert!(matches!(
        RequestHeader::from_data(&bad),
        Err(RequestHeaderError::List {
            key: "requestheader-allowed-names",
            ..
        })
    ));
}
