use super::*;
use crate::testing::{Authority, NOW, TEN_YEARS, common_name, no_extensions, v1};
use rcgen::{
    BasicConstraints, CustomExtension, ExtendedKeyUsagePurpose, GeneralSubtree, IsCa, KeyPair,
    KeyUsagePurpose,
};

fn algorithms() -> &'static [&'static dyn SignatureVerificationAlgorithm] {
    rustls::crypto::ring::default_provider()
        .signature_verification_algorithms
        .all
}

/// `leaf` (with `intermediates`) against the roots, at `now`.
fn check(
    roots: &[&Authority],
    leaf: &[u8],
    intermediates: &[&[u8]],
    now: i64,
) -> Result<(), ClientCertRefused> {
    let roots: Vec<_> = roots.iter().map(|r| r.der.clone()).collect();
    verify(&roots, leaf, intermediates, now, algorithms())
}

fn refusal(result: Result<(), ClientCertRefused>) -> crate::Refusal {
    result.expect_err("refused").refusal()
}

/// Refused as of an unknown CA (as Go says), and why the issuer of that
/// name failed.
fn unknown_ca_because(result: Result<(), ClientCertRefused>) -> Option<ClientCertRefused> {
    match result.expect_err("refused") {
        ClientCertRefused::UnknownCa { because, .. } => because.map(|b| *b),
        other => panic!("not UnknownCa: {other:?}"),
    }
}

fn client(usages: Vec<ExtendedKeyUsagePurpose>) -> rcgen::CertificateParams {
    let mut params = no_extensions();
    params.extended_key_usages = usages;
    params
}

#[test]
fn a_v1_client_certificate_made_as_metacontrollers_example_makes_it_is_accepted() {
    let ca = Authority::root("webhook-auth-test-ca");
    let (leaf, _) = ca.v1_client("metacontroller", TEN_YEARS);
    assert_eq!(Cert::parse(&leaf).unwrap().version, 1, "really v1");
    check(&[&ca], &leaf, &[], NOW).unwrap();
    // A v3 one with clientAuth, and one that names no usage, too.
    let key = KeyPair::generate().unwrap();
    let v3 = ca.issue(
        client(vec![ExtendedKeyUsagePurpose::ClientAuth]),
        "v3",
        &key,
    );
    check(&[&ca], &v3, &[], NOW).unwrap();
    check(&[&ca], &ca.issue(no_extensions(), "plain", &key), &[], NOW).unwrap();
}

#[test]
fn a_certificate_of_another_ca_is_refused_as_of_an_unknown_ca() {
    let ca = Authority::root("hooks-ca");
    let stranger = Authority::root("someone-else");
    let (leaf, _) = stranger.v1_client("metacontroller", TEN_YEARS);
    assert_eq!(
        refusal(check(&[&ca], &leaf, &[], NOW)),
        crate::Refusal::UnknownCa
    );
    assert!(unknown_ca_because(check(&[&ca], &leaf, &[], NOW)).is_none());
    // The right name, another key (two CAs made by one recipe): the
    // signature tells, and the CA is as unknown.
    let impostor = Authority::root("hooks-ca");
    let (leaf, _) = impostor.v1_client("metacontroller", TEN_YEARS);
    assert!(matches!(
        unknown_ca_because(check(&[&ca], &leaf, &[], NOW)),
        Some(ClientCertRefused::BadSignature(_))
    ));
}

#[test]
fn a_certificate_is_valid_only_between_its_dates() {
    let ca = Authority::root("hooks-ca");
    let (leaf, _) = ca.v1_client("metacontroller", TEN_YEARS);
    // 2031-01-01 and 2019-01-01.
    assert_eq!(
        refusal(check(&[&ca], &leaf, &[], 1_924_992_000)),
        crate::Refusal::Expired
    );
    assert_eq!(
        refusal(check(&[&ca], &leaf, &[], 1_546_300_800)),
        crate::Refusal::NotYetValid
    );
    // The last second of notAfter is still valid, as in Go.
    check(&[&ca], &leaf, &[], 1_893_456_000).unwrap();
}

#[test]
fn an_unknown_critical_extension_is_refused_and_a_known_one_is_not() {
    let ca = Authority::root("hooks-ca");
    let key = KeyPair::generate().unwrap();
    let mut params = client(vec![ExtendedKeyUsagePurpose::ClientAuth]);
    let mut unknown = CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 99999, 7], vec![5, 0]);
    unknown.set_criticality(true);
    params.custom_extensions = vec![unknown];
    let leaf = ca.issue(params, "metacontroller", &key);
    assert_eq!(
        refusal(check(&[&ca], &leaf, &[], NOW)),
        crate::Refusal::UnsupportedCertificate
    );
    // The root's basicConstraints is critical (as openssl makes it): handled.
    assert!(Cert::parse(&ca.der).unwrap().unhandled_critical.is_none());
}

#[test]
fn a_key_identifier_marked_critical_is_refused_as_gos_parser_refuses_it() {
    let ca = Authority::root("hooks-ca");
    // The extension, its OID and a value: authorityKeyIdentifier
    // { keyIdentifier }, subjectKeyIdentifier.
    let cases: [(&str, &[u64], &[u8]); 2] = [
        (
            "authorityKeyIdentifier",
            &[2, 5, 29, 35],
            &[0x30, 0x06, 0x80, 0x04, 1, 2, 3, 4],
        ),
        (
            "subjectKeyIdentifier",
            &[2, 5, 29, 14],
            &[0x04, 0x04, 1, 2, 3, 4],
        ),
    ];
    for (name, oid, value) in cases {
        for critical in [false, true] {
            let key = KeyPair::generate().unwrap();
            let mut params = client(vec![ExtendedKeyUsagePurpose::ClientAuth]);
            let mut extension = CustomExtension::from_oid_content(oid, value.to_vec());
            extension.set_criticality(critical);
            params.custom_extensions = vec![extension];
            let leaf = ca.issue(params, "metacontroller", &key);
            match (critical, check(&[&ca], &leaf, &[], NOW)) {
                (false, Ok(())) => {}
                (true, Err(ClientCertRefused::Unsupported(why))) => {
                    assert_eq!(
                        why,
                        format!("malformed certificate: {name} marked critical")
                    );
                }
                (critical, other) => panic!("{name}, critical {critical}: {other:?}"),
            }
        }
    }
}

#[test]
fn a_chain_through_intermediates_the_client_sends_is_followed() {
    let root = Authority::root("root");
    let intermediate = root.intermediate(no_extensions(), "intermediate");
    let (leaf, _) = intermediate.v1_client("metacontroller", TEN_YEARS);
    check(&[&root], &leaf, &[&intermediate.der], NOW).unwrap();
    assert!(
        unknown_ca_because(check(&[&root], &leaf, &[], NOW)).is_none(),
        "without the intermediate"
    );
    // Two deep, and the same intermediate twice is no loop.
    let second = intermediate.intermediate(no_extensions(), "second");
    let (deeper, _) = second.v1_client("metacontroller", TEN_YEARS);
    check(
        &[&root],
        &deeper,
        &[&second.der, &intermediate.der, &intermediate.der],
        NOW,
    )
    .unwrap();
    // A root whose pathLenConstraint is 0 may sign no intermediate.
    let mut strict = no_extensions();
    strict.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    let mut params = strict;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "strict-root");
    let strict_root = Authority::self_signed(params);
    let below = strict_root.intermediate(no_extensions(), "below");
    let (leaf, _) = below.v1_client("metacontroller", TEN_YEARS);
    assert!(matches!(
        unknown_ca_because(check(&[&strict_root], &leaf, &[&below.der], NOW)),
        Some(ClientCertRefused::NotAuthorized(_))
    ));
    // An expired intermediate.
    let old = root.intermediate(
        {
            let mut params = no_extensions();
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2010, 1, 1);
            params
        },
        "old",
    );
    let (leaf, _) = old.v1_client("metacontroller", TEN_YEARS);
    assert!(matches!(
        unknown_ca_because(check(&[&root], &leaf, &[&old.der], NOW)),
        Some(ClientCertRefused::Expired(_))
    ));
}

#[test]
fn a_v1_certificate_is_a_ca_as_a_root_and_never_as_an_intermediate() {
    // A v1 root, self-signed, in ca.crt: Go takes it.
    let root_key = KeyPair::generate().unwrap();
    let root_name = common_name("v1-root");
    let root_der = v1("v1-root", &root_key, &root_name, &root_key, TEN_YEARS);
    let key = KeyPair::generate().unwrap();
    let leaf = v1("metacontroller", &key, &root_name, &root_key, TEN_YEARS);
    let roots = vec![root_der.clone()];
    verify(&roots, &leaf, &[], NOW, algorithms()).unwrap();
    // The same v1 certificate sent as an intermediate under a v3 root.
    let v3_root = Authority::root("v3-root");
    let v1_intermediate = v1(
        "v1-root",
        &root_key,
        &v3_root.name(),
        &v3_root.key,
        TEN_YEARS,
    );
    assert!(matches!(
        unknown_ca_because(check(&[&v3_root], &leaf, &[&v1_intermediate], NOW)),
        Some(ClientCertRefused::NotAuthorized(_))
    ));
}

#[test]
fn an_issuer_must_be_allowed_to_sign_certificates() {
    // A v3 certificate without basicConstraints in ca.crt signs nothing.
    let not_ca = Authority::self_signed({
        let mut params = no_extensions();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "not-a-ca");
        params
    });
    let (leaf, _) = not_ca.v1_client("metacontroller", TEN_YEARS);
    assert!(matches!(
        unknown_ca_because(check(&[&not_ca], &leaf, &[], NOW)),
        Some(ClientCertRefused::NotAuthorized(_))
    ));
    // A CA whose keyUsage leaves out keyCertSign.
    let mut params = no_extensions();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "signing-only");
    let signing_only = Authority::self_signed(params);
    let (leaf, _) = signing_only.v1_client("metacontroller", TEN_YEARS);
    assert!(matches!(
        unknown_ca_because(check(&[&signing_only], &leaf, &[], NOW)),
        Some(ClientCertRefused::NotAuthorized(_))
    ));
}

#[test]
fn extended_key_usages_must_allow_client_authentication_down_the_chain() {
    let ca = Authority::root("hooks-ca");
    let key = KeyPair::generate().unwrap();
    let server_only = ca.issue(
        client(vec![ExtendedKeyUsagePurpose::ServerAuth]),
        "server",
        &key,
    );
    assert_eq!(
        refusal(check(&[&ca], &server_only, &[], NOW)),
        crate::Refusal::BadUsage
    );
    let any = ca.issue(client(vec![ExtendedKeyUsagePurpose::Any]), "any", &key);
    check(&[&ca], &any, &[], NOW).unwrap();
    // An intermediate that names serverAuth only bounds what it issues.
    let intermediate =
        ca.intermediate(client(vec![ExtendedKeyUsagePurpose::ServerAuth]), "servers");
    let leaf = intermediate.issue(
        client(vec![ExtendedKeyUsagePurpose::ClientAuth]),
        "leaf",
        &key,
    );
    assert_eq!(
        refusal(check(&[&ca], &leaf, &[&intermediate.der], NOW)),
        crate::Refusal::BadUsage
    );
}

#[test]
fn name_constraints_bound_the_names_below() {
    let mut params = no_extensions();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.name_constraints = Some(rcgen::NameConstraints {
        permitted_subtrees: vec![GeneralSubtree::DnsName("hooks.svc".to_owned())],
        excluded_subtrees: vec![],
    });
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "constrained");
    let ca = Authority::self_signed(params);
    let key = KeyPair::generate().unwrap();
    let named = |name: &str| {
        let mut params = client(vec![ExtendedKeyUsagePurpose::ClientAuth]);
        params.subject_alt_names = vec![rcgen::SanType::DnsName(name.try_into().unwrap())];
        ca.issue(params, "caller", &key)
    };
    check(&[&ca], &named("caller.hooks.svc"), &[], NOW).unwrap();
    assert_eq!(
        refusal(check(&[&ca], &named("caller.other"), &[], NOW)),
        crate::Refusal::NameConstraints
    );
    // No names, nothing to constrain (the v1 certificate).
    let (leaf, _) = ca.v1_client("metacontroller", TEN_YEARS);
    check(&[&ca], &leaf, &[], NOW).unwrap();
}

#[test]
fn policy_rules_below_the_root_are_refused_rather_than_ignored() {
    let root = Authority::root("root");
    let mut params = no_extensions();
    // policyConstraints { requireExplicitPolicy 0 }.
    params.custom_extensions = vec![CustomExtension::from_oid_content(
        &[2, 5, 29, 36],
        vec![0x30, 0x03, 0x80, 0x01, 0x00],
    )];
    let intermediate = root.intermediate(params, "with-policy");
    let (leaf, _) = intermediate.v1_client("metacontroller", TEN_YEARS);
    assert_eq!(
        refusal(check(&[&root], &leaf, &[&intermediate.der], NOW)),
        crate::Refusal::UnsupportedCertificate
    );
}

#[test]
fn a_leaf_that_is_itself_in_ca_crt_is_accepted() {
    let key = KeyPair::generate().unwrap();
    let leaf = v1("self", &key, &common_name("self"), &key, TEN_YEARS);
    verify(std::slice::from_ref(&leaf), &leaf, &[], NOW, algorithms()).unwrap();
}

#[test]
fn hostile_chains_are_refused_within_their_signature_budget() {
    let root = Authority::root("hooks-ca");
    let expect_unknown_ca = |what: &str, result: Result<(), ClientCertRefused>| match result {
        Err(ClientCertRefused::UnknownCa { .. }) => {}
        other => panic!("{what}: {other:?}"),
    };
    // A look-alike of the root: its name, another key.
    let look_alike = Authority::root("hooks-ca");
    let (leaf, _) = look_alike.v1_client("metacontroller", TEN_YEARS);
    expect_unknown_ca(
        "signed by a look-alike of the root",
        check(&[&root], &leaf, &[], NOW),
    );
    expect_unknown_ca(
        "the look-alike sent as an intermediate",
        check(&[&root], &leaf, &[&look_alike.der], NOW),
    );

    // Two intermediates that sign each other, neither under the root.
    let ca = |name: &str| {
        let mut params = no_extensions();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params
    };
    let (a, b) = (ca("loop-a"), ca("loop-b"));
    let (a_key, b_key) = (KeyPair::generate().unwrap(), KeyPair::generate().unwrap());
    let a_by_b = a
        .signed_by(&a_key, &rcgen::Issuer::new(b.clone(), &b_key))
        .unwrap();
    let b_by_a = b
        .signed_by(&b_key, &rcgen::Issuer::new(a.clone(), &a_key))
        .unwrap();
    let a_authority = Authority {
        der: a_by_b.der().to_vec(),
        pem: a_by_b.pem(),
        params: a,
        key: a_key,
    };
    let (leaf, _) = a_authority.v1_client("metacontroller", TEN_YEARS);
    expect_unknown_ca(
        "a loop",
        check(&[&root], &leaf, &[a_by_b.der(), b_by_a.der()], NOW),
    );

    // A chain of 110 intermediates from the root: more signatures than
    // Go's budget of 100.
    let mut chain = vec![root.intermediate(no_extensions(), "link-0")];
    for i in 1..110 {
        let next = chain[i - 1].intermediate(no_extensions(), &format!("link-{i}"));
        chain.push(next);
    }
    let (leaf, _) = chain[109].v1_client("metacontroller", TEN_YEARS);
    let sent: Vec<&[u8]> = chain.iter().rev().map(|c| c.der.as_slice()).collect();
    assert!(
        check(&[&root], &leaf, &sent, NOW).is_err(),
        "a chain of 110"
    );
    // Ten deep is fine.
    let (leaf, _) = chain[9].v1_client("metacontroller", TEN_YEARS);
    check(&[&root], &leaf, &sent[100..], NOW).unwrap();

    // 300 intermediates of the leaf issuer's name, none its key, before
    // the real one: the budget ends the search.
    let real = root.intermediate(no_extensions(), "flood");
    let (leaf, _) = real.v1_client("metacontroller", TEN_YEARS);
    let fakes: Vec<Authority> = (0..300)
        .map(|_| root.intermediate(no_extensions(), "flood"))
        .collect();
    let mut flood: Vec<&[u8]> = fakes.iter().map(|c| c.der.as_slice()).collect();
    flood.push(&real.der);
    assert!(
        check(&[&root], &leaf, &flood, NOW).is_err(),
        "a flood of 300 look-alikes"
    );
    check(&[&root], &leaf, &[&real.der], NOW).unwrap();

    // Not DER at all, and a certificate whose outer signature algorithm
    // is not the one it signed (ecdsa-with-SHA256 made SHA384).
    for garbage in [
        &b"not a certificate"[..],
        &[0x30, 0x03, 0x02, 0x01, 0x00],
        &[],
    ] {
        assert!(
            matches!(
                check(&[&root], garbage, &[], NOW),
                Err(ClientCertRefused::Unsupported(_))
            ),
            "{garbage:?}"
        );
    }
    let (mut leaf, _) = root.v1_client("metacontroller", TEN_YEARS);
    let sha256 = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
    let outer = leaf.windows(8).rposition(|w| w == sha256).unwrap();
    leaf[outer + 7] = 0x03;
    match check(&[&root], &leaf, &[], NOW) {
        Err(ClientCertRefused::Unsupported(why)) => {
            assert!(why.contains("signature algorithms differ"), "{why}")
        }
        other => panic!("swapped algorithms: {other:?}"),
    }
}
