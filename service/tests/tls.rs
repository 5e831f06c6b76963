//! `--tls-dir`, `--tls-client-auth` and `--auth-token-file` over a real
//! socket: who gets the hook's answer, who is refused and how, that probes
//! need neither, and that certificates and tokens replaced on disk are
//! used by the next connection.

use metahook_seeds::controllers;
use metahook_service::{Settings, TlsSettings};
use metahook_testkit::certs::{Ca, OpensslRecipe, Pair};
use metahook_testkit::https::HttpsClient;
use metahook_testkit::metrics_text::sample;
use metahook_testkit::{RealServer, admission_fixtures, fixtures, snapshot};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("metahook-svc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// A directory as the chart mounts it: the server's pair and the CA that
/// signed it, which also signs the callers' certificates.
fn cert_dir(name: &str, ca: &Ca) -> (PathBuf, Pair) {
    let dir = temp_dir(name);
    let pair = ca.server(&["localhost", "127.0.0.1"]);
    pair.write(&dir);
    std::fs::write(dir.join("ca.crt"), &ca.pem).expect("ca.crt");
    (dir, pair)
}

fn settings(tls: Option<TlsSettings>, token: Option<PathBuf>) -> Settings {
    let mut settings = RealServer::settings();
    settings.tls = tls;
    settings.auth_token_file = token;
    // Re-read often, so the reload tests wait little.
    settings.reload_every = Duration::from_millis(50);
    settings
}

/// The service serving the certificate in `dir`, asking callers for theirs
/// (signed by `dir`'s ca.crt).
fn mtls_server(dir: &std::path::Path) -> RealServer {
    let tls = TlsSettings {
        dir: dir.to_path_buf(),
        client_auth: true,
    };
    RealServer::start(settings(Some(tls), None), controllers())
}

fn hello_sync() -> (String, Vec<u8>, String) {
    let fixture = fixtures()
        .into_iter()
        .find(|f| f.controller == "hello" && f.url() == "/hello/sync")
        .expect("a hello sync fixture");
    (fixture.url(), fixture.body(), snapshot(&fixture))
}

/// `fixtures/hello/scale-up.json`, its path and its expected answer.
fn hello_scale_up() -> (String, Vec<u8>, String) {
    let fixture = fixtures()
        .into_iter()
        .find(|f| f.controller == "hello" && f.case == "scale-up")
        .expect("fixtures/hello/scale-up.json");
    (fixture.url(), fixture.body(), snapshot(&fixture))
}

/// Posts a fixture's request (`path`, `body`) to `addr` as `caller`:
/// answered 200 with the fixture's snapshot (`what` says why it must be).
fn assert_answered(
    caller: &HttpsClient,
    addr: SocketAddr,
    (path, body, expected): (&str, &[u8], &str),
    what: &str,
) {
    let (answer, _) = caller.post(addr, path, body, "").expect(what);
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    assert_eq!(metahook_testkit::pretty(&answer.body), expected);
}

/// What the service logs, from every test of this binary (one global
/// subscriber; each test looks for its own lines).
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("logs").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;
    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

fn logs() -> Logs {
    static LOGS: OnceLock<Logs> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Logs::default();
        tracing::subscriber::set_global_default(
            tracing_subscriber::fmt()
                .with_ansi(false)
                .with_writer(logs.clone())
                .finish(),
        )
        .expect("the only subscriber");
        logs
    })
    .clone()
}

impl Logs {
    /// The lines that contain every one of `parts`.
    fn lines_with(&self, parts: &[&str]) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().expect("logs"))
            .lines()
            .filter(|line| parts.iter().all(|p| line.contains(p)))
            .map(str::to_owned)
            .collect()
    }
}

/// `metahook_hook_tls_refusals_total{reason}` on `/metrics` (0 before the
/// first).
fn tls_refusals(client: &HttpsClient, addr: SocketAddr, reason: &str) -> u64 {
    let answer = client.get(addr, "/metrics").expect("/metrics");
    let series = format!("metahook_hook_tls_refusals_total{{reason=\"{reason}\"}}");
    sample(&answer.body, &series) as u64
}

fn der(pem: &str) -> Vec<u8> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    CertificateDer::from_pem_slice(pem.as_bytes())
        .expect("a certificate")
        .to_vec()
}

/// Polls `check` until it holds, for at most 20 s (the server re-reads its
/// files every 50 ms; the bound only keeps a broken reload from hanging).
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < Duration::from_secs(20), "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn mutual_tls_admits_only_the_cas_clients_and_keeps_probes_open() {
    let ca = Ca::new("hooks-ca");
    let (dir, serving) = cert_dir("mtls", &ca);
    let server = mtls_server(&dir);
    let (path, body, expected) = hello_sync();

    let anonymous = HttpsClient::new(&ca.pem, None);
    let (refused, shown) = anonymous
        .post(server.addr, &path, &body, "")
        .expect("no certificate still completes the handshake");
    assert_eq!(
        refused.status,
        401,
        "{}",
        String::from_utf8_lossy(&refused.body)
    );
    assert_eq!(refused.json()["reason"], "Unauthorized");
    assert!(
        refused.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("client certificate")),
        "{}",
        refused.json()
    );
    assert_eq!(shown.to_vec(), der(&serving.cert));
    for open in ["/healthz", "/readyz", "/metrics"] {
        let answer = anonymous.get(server.addr, open).expect(open);
        assert_eq!(answer.status, 200, "{open}");
    }
    // Not only the hooks: any other route too.
    assert_eq!(anonymous.get(server.addr, "/nowhere").unwrap().status, 401);
    // But the admission hooks, which kube-apiserver calls with no
    // certificate, are answered (and only theirs).
    let admission = admission_fixtures()
        .into_iter()
        .find(|f| f.controller == "hello" && f.case == "validate-create-invalid")
        .expect("fixtures/hello/admission/validate-create-invalid.json");
    let (asked, _) = anonymous
        .post(server.addr, &admission.url(), &admission.body(), "")
        .expect("answered");
    assert_eq!(
        asked.status,
        200,
        "{}",
        String::from_utf8_lossy(&asked.body)
    );
    assert_eq!(asked.json()["response"]["allowed"], false);
    assert_eq!(
        asked.json()["response"]["status"]["details"]["causes"][0]["field"],
        "spec.image"
    );

    let stranger = HttpsClient::new(&ca.pem, Some(&Ca::new("other-ca").client("metacontroller")));
    let err = stranger
        .post(server.addr, &path, &body, "")
        .expect_err("a certificate of another CA fails the handshake");
    assert!(
        err.to_string().contains("certificate") || err.to_string().contains("alert"),
        "{err}"
    );

    let caller = HttpsClient::new(&ca.pem, Some(&ca.client("metacontroller")));
    assert_answered(&caller, server.addr, (&path, &body, &expected), "answered");

    // The certificate replaced on disk: a later connection is shown it.
    let renewed = ca.server(&["localhost", "127.0.0.1"]);
    renewed.write(&dir);
    eventually("the renewed certificate is served", || {
        let (_, shown) = caller
            .post(server.addr, &path, &body, "")
            .expect("answered");
        shown.to_vec() == der(&renewed.cert)
    });

    // A new CA on disk (tls.crt, tls.key and ca.crt, as a rotated Secret):
    // its clients get in, the old CA's no longer do.
    let next = Ca::new("hooks-ca-2");
    next.server(&["localhost", "127.0.0.1"]).write(&dir);
    std::fs::write(dir.join("ca.crt"), &next.pem).expect("ca.crt");
    let next_caller = HttpsClient::new(&next.pem, Some(&next.client("metacontroller")));
    eventually("the new CA's client is admitted", || {
        next_caller
            .post(server.addr, &path, &body, "")
            .is_ok_and(|(r, _)| r.status == 200)
    });
    let old_caller = HttpsClient::new(&next.pem, Some(&ca.client("metacontroller")));
    assert!(old_caller.post(server.addr, &path, &body, "").is_err());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_v1_client_certificate_made_as_metacontrollers_example_makes_it_is_answered() {
    let logs = logs();
    let dir = temp_dir("openssl");
    let made = OpensslRecipe::new(&dir.join("made"), "DNS:localhost,IP:127.0.0.1");
    made.server.write(&dir);
    std::fs::write(dir.join("ca.crt"), &made.ca_pem).expect("ca.crt");
    let server = mtls_server(&dir);
    let (path, body, expected) = hello_scale_up();

    // What curl got status 000 for: the v1 certificate is taken.
    let caller = HttpsClient::new(&made.ca_pem, Some(&made.client));
    assert_answered(
        &caller,
        server.addr,
        (&path, &body, &expected),
        "the handshake completes with a v1 client certificate",
    );

    // A certificate made the same way by someone else's CA: refused in the
    // handshake, counted and logged with the peer and the reason.
    let probe = HttpsClient::new(&made.ca_pem, None);
    let before = tls_refusals(&probe, server.addr, "unknown_ca");
    let stranger = OpensslRecipe::new(&dir.join("stranger"), "DNS:localhost");
    let refused = HttpsClient::new(&made.ca_pem, Some(&stranger.client));
    refused
        .post(server.addr, &path, &body, "")
        .expect_err("another CA's certificate fails the handshake");
    eventually("the refusal is counted as unknown_ca", || {
        tls_refusals(&probe, server.addr, "unknown_ca") == before + 1
    });
    eventually("the refusal is logged with the peer and the reason", || {
        !logs
            .lines_with(&[
                "TLS handshake on the hook port failed",
                "peer=127.0.0.1:",
                "reason=\"unknown_ca\"",
                "CN=metacontroller",
            ])
            .is_empty()
    });

    // Plain HTTP on the TLS port is a failed handshake too.
    let before = tls_refusals(&probe, server.addr, "handshake");
    let mut plain = std::net::TcpStream::connect(server.addr).expect("connect");
    std::io::Write::write_all(&mut plain, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("write");
    let _ = std::io::Read::read_to_end(&mut plain, &mut Vec::new());
    eventually("plain HTTP is counted as a failed handshake", || {
        tls_refusals(&probe, server.addr, "handshake") == before + 1
    });
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bearer_token_is_required_and_follows_its_file() {
    let ca = Ca::new("token-ca");
    let (dir, _) = cert_dir("token", &ca);
    let token = dir.join("token");
    std::fs::write(&token, "first-token\n").expect("token");
    let server = RealServer::start(
        settings(
            Some(TlsSettings {
                dir: dir.clone(),
                client_auth: false,
            }),
            Some(token.clone()),
        ),
        controllers(),
    );
    let (path, body, _) = hello_sync();
    let client = HttpsClient::new(&ca.pem, None);
    let status = |extra: &str| {
        let (answer, _) = client
            .post(server.addr, &path, &body, extra)
            .expect("answered");
        answer
    };
    let refused = status("");
    assert_eq!(refused.status, 401);
    assert_eq!(refused.header("www-authenticate"), Some("Bearer"));
    assert_eq!(status("Authorization: Bearer wrong\r\n").status, 401);
    assert_eq!(
        status("Authorization: Basic Zmlyc3QtdG9rZW4=\r\n").status,
        401
    );
    assert_eq!(status("Authorization: Bearer first-token\r\n").status, 200);
    assert_eq!(client.get(server.addr, "/healthz").unwrap().status, 200);

    std::fs::write(&token, "second-token").expect("token");
    eventually("the new token is taken", || {
        status("Authorization: Bearer second-token\r\n").status == 200
    });
    assert_eq!(status("Authorization: Bearer first-token\r\n").status, 401);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_missing_certificate_fails_at_start() {
    let dir = temp_dir("missing");
    let mut settings = settings(
        Some(TlsSettings {
            dir: dir.clone(),
            client_auth: false,
        }),
        None,
    );
    settings.listen = "127.0.0.1:0".parse().expect("address");
    let state =
        actix_web::web::Data::new(metahook_service::AppState::new(controllers(), &settings));
    let err = actix_web::rt::System::new()
        .block_on(async { metahook_service::start(&settings, state).map(|_| ()) })
        .expect_err("no tls.crt");
    assert!(
        metahook_core::error_chain(&err).contains("tls.crt"),
        "{}",
        metahook_core::error_chain(&err)
    );
    std::fs::remove_dir_all(&dir).ok();
}
