//! Calling a webhook with `caBundle`, `clientTLS`, `authorization` and
//! `basicAuth`, against a local HTTPS server that requires a client
//! certificate, with the Secrets served by a scripted API server.

use crate::config::{self, WebhookAuth};
use crate::hook::call::tests::{exchange, http_target_with, serve_once};
use crate::hook::call::{HookCallError, HookCaller};
use crate::observe::metrics::DriverMetrics;
use crate::test_support::manifest;
use crate::test_support::scripted_api::{ApiHandle, bounded, mock_client};
use base64::Engine as _;
use metahook_testkit::certs::{Ca, Pair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const OK: &str = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}";

/// An HTTPS server on 127.0.0.1 serving `serving`, requiring a client
/// certificate signed by `client_ca`; it answers `connections` requests
/// with 200 and hands back each request, or the handshake's error.
async fn https_server(
    serving: &Pair,
    client_ca: &Ca,
    connections: usize,
) -> (String, tokio::task::JoinHandle<Vec<Result<String, String>>>) {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(client_ca.pem.as_bytes()).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            CertificateDer::pem_slice_iter(serving.cert.as_bytes())
                .collect::<Result<_, _>>()
                .unwrap(),
            PrivateKeyDer::from_pem_slice(serving.key.as_bytes()).unwrap(),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut seen = Vec::new();
        for _ in 0..connections {
            let (socket, _) = listener.accept().await.unwrap();
            seen.push(match acceptor.accept(socket).await {
                Ok(tls) => exchange(tls, OK).await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            });
        }
        seen
    });
    (format!("https://localhost:{}/demo/sync", addr.port()), task)
}

/// A scripted API server answering GETs of Secrets from `secrets`
/// (namespace/name → data), 404 otherwise; counts the requests.
fn secrets(mut handle: ApiHandle, secrets: BTreeMap<&'static str, Value>) -> Arc<AtomicUsize> {
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    tokio::spawn(async move {
        while let Some((request, send)) = handle.next_request().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let path = request.uri().path().to_owned();
            let found = secrets.iter().find_map(|(key, data)| {
                let (ns, name) = key.split_once('/')?;
                (path == format!("/api/v1/namespaces/{ns}/secrets/{name}")).then(|| {
                    json!({"apiVersion": "v1", "kind": "Secret",
                           "metadata": {"name": name, "namespace": ns}, "data": data})
                })
            });
            let (code, body) = match found {
                Some(body) => (200, body),
                None => (
                    404,
                    crate::test_support::scripted_api::status_body(404, "NotFound"),
                ),
            };
            send.send_response(
                http::Response::builder()
                    .status(code)
                    .header("content-type", "application/json")
                    .body(kube::client::Body::from(serde_json::to_vec(&body).unwrap()))
                    .unwrap(),
            );
        }
    });
    count
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// The webhook fields of a manifest, as the driver reads them.
fn auth(webhook_fields: &str) -> WebhookAuth {
    let spec = format!(
        r#"  parentResource: {{apiVersion: example.com/v1, resource: things}}
  hooks:
    sync:
      webhook:
        url: https://localhost/demo/sync
{webhook_fields}
"#
    );
    config::parse("demo.yaml", &manifest("CompositeController", "demo", &spec))
        .unwrap()
        .hooks
        .sync
        .webhook
        .auth
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("            {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn mutual_tls_with_a_bearer_token_reaches_the_hook_and_reads_the_secrets_once() {
    bounded(async {
        let ca = Ca::new("hooks-ca");
        let client_pair = ca.client("metacontroller");
        let (url, server) = https_server(&ca.server(&["localhost"]), &ca, 2).await;
        let (client, handle) = mock_client();
        let reads = secrets(
            handle,
            BTreeMap::from([
                (
                    "hooks/client",
                    json!({"tls.crt": b64(&client_pair.cert), "tls.key": b64(&client_pair.key)}),
                ),
                ("hooks/token", json!({"token": b64(" s3cret\n")})),
            ]),
        );
        let fields = format!(
            "        caBundle:\n          inline: |\n{}\n        clientTLS:\n          secretRef: {{name: client, namespace: hooks}}\n        authorization:\n          secretRef: {{name: token, namespace: hooks, key: token}}",
            indent(&ca.pem)
        );
        let caller = HookCaller::with_http(jiff::Timestamp::now, Arc::new(DriverMetrics::default()))
            .unwrap()
            .reading_credentials_with(client);
        let hook = http_target_with(url, auth(&fields));
        for _ in 0..2 {
            let body = caller.call("demo", &hook, b"{}".to_vec()).await.unwrap();
            assert_eq!(body, b"{}");
        }
        let seen = server.await.unwrap();
        for request in &seen {
            let request = request.as_ref().unwrap();
            assert!(
                request
                    .to_ascii_lowercase()
                    .contains("\r\nauthorization: bearer s3cret\r\n"),
                "{request}"
            );
        }
        assert_eq!(reads.load(Ordering::SeqCst), 2, "each Secret read once");
    })
    .await;
}

#[tokio::test]
async fn a_wrong_ca_bundle_or_no_client_certificate_fails_the_call_and_says_why() {
    bounded(async {
        let ca = Ca::new("hooks-ca");
        let (url, server) = https_server(&ca.server(&["localhost"]), &ca, 2).await;
        let (client, handle) = mock_client();
        let client_pair = ca.client("metacontroller");
        secrets(
            handle,
            BTreeMap::from([(
                "hooks/client",
                json!({"tls.crt": b64(&client_pair.cert), "tls.key": b64(&client_pair.key)}),
            )]),
        );
        let caller = HookCaller::with_http(jiff::Timestamp::now, Arc::new(DriverMetrics::default()))
            .unwrap()
            .reading_credentials_with(client);
        let wrong = format!(
            "        caBundle:\n          inline: |\n{}\n        clientTLS:\n          secretRef: {{name: client, namespace: hooks}}",
            indent(&Ca::new("another-ca").pem)
        );
        let err = caller
            .call("demo", &http_target_with(url.clone(), auth(&wrong)), b"{}".to_vec())
            .await
            .unwrap_err();
        let chain = crate::api_error_chain(&err);
        assert!(matches!(err, HookCallError::Http { .. }), "{chain}");
        assert!(chain.contains("UnknownIssuer"), "{chain}");
        // The right CA, no client certificate: the server refuses.
        let anonymous = format!("        caBundle:\n          inline: |\n{}", indent(&ca.pem));
        let err = caller
            .call("demo", &http_target_with(url, auth(&anonymous)), b"{}".to_vec())
            .await
            .unwrap_err();
        assert!(matches!(err, HookCallError::Http { .. }), "{err}");
        let seen = server.await.unwrap();
        assert!(
            seen.iter().all(|r| r.is_err()),
            "no request reached the hook: {seen:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn basic_auth_and_missing_secrets_as_metacontroller_reads_them() {
    bounded(async {
        let (url, server) = serve_once(OK).await;
        let (client, handle) = mock_client();
        secrets(
            handle,
            BTreeMap::from([
                ("hooks/basic", json!({"username": b64(" user \n"), "password": b64("p:ss\n")})),
                ("hooks/colon", json!({"username": b64("us:er"), "password": b64("x")})),
            ]),
        );
        let caller = HookCaller::with_http(jiff::Timestamp::now, Arc::new(DriverMetrics::default()))
            .unwrap()
            .reading_credentials_with(client);
        let basic = |name: &str| {
            auth(&format!(
                "        basicAuth:\n          secretRef: {{name: {name}, namespace: hooks}}"
            ))
        };
        caller
            .call("demo", &http_target_with(url.clone(), basic("basic")), b"{}".to_vec())
            .await
            .unwrap();
        let request = server.await.unwrap();
        let expected = format!("authorization: basic {}", b64("user:p:ss")).to_ascii_lowercase();
        assert!(request.to_ascii_lowercase().contains(&expected), "{request}");

        let err = caller
            .call("demo", &http_target_with(url.clone(), basic("colon")), b"{}".to_vec())
            .await
            .unwrap_err();
        assert!(
            crate::api_error_chain(&err).contains("basicAuth: the username in Secret hooks/colon contains ':'"),
            "{}",
            crate::api_error_chain(&err)
        );
        let err = caller
            .call("demo", &http_target_with(url.clone(), basic("gone")), b"{}".to_vec())
            .await
            .unwrap_err();
        let chain = crate::api_error_chain(&err);
        assert!(matches!(err, HookCallError::Credentials { .. }), "{chain}");
        assert!(
            chain.contains("basicAuth: reading Secret hooks/gone failed"),
            "{chain}"
        );
        let missing_key = auth(
            "        authorization:\n          secretRef: {name: basic, namespace: hooks, key: token}",
        );
        let err = caller
            .call("demo", &http_target_with(url, missing_key), b"{}".to_vec())
            .await
            .unwrap_err();
        assert!(
            crate::api_error_chain(&err)
                .contains("authorization: Secret hooks/basic has no key \"token\""),
            "{}",
            crate::api_error_chain(&err)
        );
    })
    .await;
}

/// Runs openssl with `args` in `dir`.
fn openssl(dir: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("running openssl (Metacontroller's webhook-auth example makes its certificates with it)");
    assert!(status.success(), "openssl {args:?}");
}

#[test]
fn an_x509_v1_client_certificate_is_presented_and_a_foreign_key_refused() {
    // As Metacontroller's webhook-auth example makes it: `openssl x509 -req`
    // with no extensions is an X.509 v1 certificate, which webpki does not
    // parse; rustls's with_client_auth_cert refused it
    // (UnsupportedCertVersion) where Go presents it.
    let dir = std::env::temp_dir().join(format!("metahook-v1-cert-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    openssl(
        &dir,
        &[
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
            "-days", "1", "-subj", "/CN=ca",
        ],
    );
    openssl(
        &dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "client.key",
            "-out",
            "client.csr",
            "-subj",
            "/CN=client",
        ],
    );
    openssl(
        &dir,
        &[
            "x509",
            "-req",
            "-in",
            "client.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "client.crt",
            "-days",
            "1",
        ],
    );
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let client_crt = read("client.crt");
    let text = String::from_utf8_lossy(&client_crt).into_owned();
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&client_crt)
        .map(Result::unwrap)
        .collect();
    // The first byte after the TBSCertificate's header is the serial (an
    // INTEGER, 0x02) in a v1 certificate, the [0] version tag (0xa0) in v3.
    assert_eq!(chain[0].as_ref()[8], 0x02, "not a v1 certificate: {text}");
    let key = PrivateKeyDer::from_pem_slice(&read("client.key")).unwrap();
    let ca = read("ca.crt");
    crate::hook::auth::tls_config(Some(&ca), Some((chain.clone(), key)))
        .expect("a v1 client certificate with its own key");
    let _ = std::fs::remove_dir_all(&dir);
    // A certificate webpki parses (v3) is still checked against its key.
    let ca = Ca::new("hooks-ca");
    let v3 = ca.client("driver");
    let other = ca.client("someone-else");
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(v3.cert.as_bytes())
        .map(Result::unwrap)
        .collect();
    let foreign = PrivateKeyDer::from_pem_slice(other.key.as_bytes()).unwrap();
    let refused = crate::hook::auth::tls_config(Some(ca.pem.as_bytes()), Some((chain, foreign)));
    assert!(
        matches!(refused, Err(crate::hook::auth::CredentialError::Tls(_))),
        "another key than the certificate's: {refused:?}"
    );
}
