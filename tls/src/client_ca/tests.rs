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

/// A handshake in memory between a server verifying clients with `ca` and
/// a client of `version` presenting `identity` (a chain and its key, the
/// key given as is: rustls' own check of it reads v3 certificates only).
/// The server's connection, or its error.
fn handshake(
    ca: &Arc<ClientCa>,
    version: &'static rustls::SupportedProtocolVersion,
    identity: Option<(CertificateDer<'static>, &KeyPair)>,
) -> Result<rustls::ServerConnection, rustls::Error> {
    use rustls::pki_types::PrivateKeyDer;
    let provider = provider();
    let server_key = KeyPair::generate().unwrap();
    let server_cert = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .self_signed(&server_key)
        .unwrap();
    let server = crate::server_config_builder(provider.clone())
        .unwrap()
        .with_client_cert_verifier(ca.clone())
        .with_single_cert(
            vec![server_cert.der().clone()],
            PrivateKeyDer::try_from(server_key.serialize_der()).unwrap(),
        )
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(server_cert.der().clone()).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[version])
        .unwrap()
        .with_root_certificates(roots);
    let client = match identity {
        Some((cert, key)) => {
            let key = provider
                .key_provider
                .load_private_key(PrivateKeyDer::try_from(key.serialize_der()).unwrap())
                .unwrap();
            client.with_client_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(
                rustls::sign::CertifiedKey::new(vec![cert], key),
            )))
        }
        None => client.with_no_client_auth(),
    };
    let mut client =
        rustls::ClientConnection::new(Arc::new(client), "localhost".try_into().unwrap()).unwrap();
    let mut server = rustls::ServerConnection::new(Arc::new(server)).unwrap();
    while client.is_handshaking() || server.is_handshaking() {
        let mut flight = Vec::new();
        while client.wants_write() {
            client.write_tls(&mut flight).unwrap();
        }
        server.read_tls(&mut flight.as_slice()).unwrap();
        server.process_new_packets()?;
        let mut flight = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut flight).unwrap();
        }
        client.read_tls(&mut flight.as_slice()).unwrap();
        client.process_new_packets().unwrap();
    }
    Ok(server)
}

/// Over TLS 1.2 and 1.3: `leaf` with its `key` completes the handshake
/// and is the peer's certificate; `leaf` with another key is refused as a
/// bad signature; no certificate at all completes it (probes).
fn holder_passes_and_no_other(ca: &Arc<ClientCa>, leaf: &CertificateDer<'static>, key: &KeyPair) {
    for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
        let server = handshake(ca, version, Some((leaf.clone(), key)))
            .unwrap_or_else(|e| panic!("{version:?}: {e}"));
        assert_eq!(
            server.peer_certificates(),
            Some(&[leaf.clone()][..]),
            "{version:?}"
        );
        let other_key = KeyPair::generate().unwrap();
        let err = handshake(ca, version, Some((leaf.clone(), &other_key))).unwrap_err();
        assert_eq!(
            crate::Refusal::of_rustls(&err),
            crate::Refusal::BadSignature,
            "{version:?}: {err}"
        );
        let server = handshake(ca, version, None).unwrap();
        assert!(server.peer_certificates().is_none());
    }
}

#[test]
fn a_v1_client_certificate_completes_the_handshake_over_tls_1_2_and_1_3() {
    use crate::testing::{Authority, TEN_YEARS};
    let dir = temp_dir("client-ca-handshake");
    let authority = Authority::root("webhook-auth-test-ca");
    std::fs::write(dir.join(CA_FILE), &authority.pem).unwrap();
    let ca = Arc::new(ClientCa::load(&dir, provider()).unwrap());
    let (leaf, key) = authority.v1_client("metacontroller", TEN_YEARS);
    holder_passes_and_no_other(&ca, &CertificateDer::from(leaf), &key);
    // Another CA's.
    let (stranger, key) = Authority::root("stranger").v1_client("metacontroller", TEN_YEARS);
    for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
        let err = handshake(&ca, version, Some((stranger.clone().into(), &key))).unwrap_err();
        assert_eq!(
            crate::Refusal::of_rustls(&err),
            crate::Refusal::UnknownCa,
            "{version:?}: {err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn judged_later_any_ca_passes_the_handshake_but_not_a_stolen_certificate() {
    use crate::testing::{Authority, TEN_YEARS};
    let ca = Arc::new(ClientCa::judged_later(provider()));
    assert!(!ca.reload().unwrap(), "no ca.crt to re-read");
    let (stranger, key) = Authority::root("stranger").v1_client("front-proxy", TEN_YEARS);
    holder_passes_and_no_other(&ca, &CertificateDer::from(stranger), &key);
}
