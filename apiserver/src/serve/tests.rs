//! The server over a real socket and TLS, as the aggregator reaches it:
//! its connection limits, and requests that must cost no review.

use super::*;
use crate::authorize::tests::Table;
use crate::front_proxy::tests::{Pki, data, pki};
use metahook_testkit::certs::Ca;
use rustls::pki_types::ServerName;
use rustls_pki_types::pem::PemObject;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A server on a free loopback port with `limits`; the front proxy's
/// PKI; and how many reviews it asked.
struct Running {
    addr: SocketAddr,
    pki: Arc<Pki>,
    server_pem: String,
    asked: Arc<AtomicUsize>,
    handle: actix_web::dev::ServerHandle,
}

fn start(limits: Limits) -> Running {
    let dir = std::env::temp_dir().join(format!(
        "metahook-api-serve-{}-{}",
        std::process::id(),
        limits.handshake_timeout.as_millis()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    // The client trusts the CA, which signed the serving certificate.
    let ca = Ca::new("serve-tests");
    ca.server(&["localhost"]).write(&dir);
    let server_pem = ca.pem.clone();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cert = Arc::new(ServingCert::load(&dir, provider).unwrap());
    let pki = Arc::new(pki("front-proxy-client"));
    let front_proxy = Arc::new(FrontProxy::default());
    front_proxy
        .update(RequestHeader::from_data(&data(&pki.ca_pem, r#"["front-proxy-client"]"#)).unwrap());
    let asked = Arc::new(AtomicUsize::new(0));
    let authorizer = Arc::new(Authorizer::new(Box::new(Table {
        allowed: vec!["alice"],
        asked: asked.clone(),
        last: Arc::new(Mutex::new(None)),
    })));
    let api = ApiServer {
        listen: "127.0.0.1:0".parse().unwrap(),
        limits,
        state: web::Data::new(State {
            records: Arc::new(View::default()),
            authenticator: front_proxy,
            authorizer,
        }),
        tls: tls::server_config(cert).unwrap(),
    };
    let (server, addr) = api.server().unwrap();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    Running {
        addr,
        pki,
        server_pem,
        asked,
        handle,
    }
}

/// One HTTP/1.1 GET of `path` over TLS as the aggregator sends it (its
/// client certificate, the user in headers): the status and the body.
fn get(running: &Running, path: &str) -> std::io::Result<(u16, String)> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(
            rustls::pki_types::CertificateDer::from_pem_slice(running.server_pem.as_bytes())
                .unwrap(),
        )
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_client_auth_cert(
        vec![running.pki.client.clone()],
        running.pki.client_key.clone_key(),
    )
    .unwrap();
    let connection =
        rustls::ClientConnection::new(Arc::new(config), ServerName::try_from("localhost").unwrap())
            .unwrap();
    let socket = TcpStream::connect(running.addr)?;
    // Bounds the test, not the server: far above a handshake's time.
    socket.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut stream = rustls::StreamOwned::new(connection, socket);
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nX-Remote-User: alice\r\nConnection: close\r\n\r\n"
    )?;
    let mut text = Vec::new();
    // A server closing without close_notify is fine here.
    let _ = stream.read_to_end(&mut text);
    let text = String::from_utf8_lossy(&text).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no answer: {text:?}")))?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned());
    Ok((status, body.unwrap_or_default()))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[actix_rt::test]
async fn requests_that_cannot_be_answered_cost_no_review() {
    let running = Arc::new(start(Limits::default()));
    let r = running.clone();
    let answers = blocking(move || {
        let base = "/apis/driver.metahook.dev/v1alpha1/namespaces";
        let long = "n".repeat(10_000);
        let terms = vec!["a"; 101].join(",");
        [
            format!("{base}/shop/reconciles/hello.{long}"),
            format!("{base}/shop/reconciles/Hello_web"),
            format!("{base}/{long}/reconciles/hello.web"),
            format!("{base}/{long}/reconciles"),
            format!("{base}/shop/reconciles?labelSelector={terms}"),
            format!("{base}/shop/reconciles?fieldSelector=metadata.name%3D{long}"),
        ]
        .map(|path| get(&r, &path).unwrap())
    })
    .await;
    let statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    assert_eq!(statuses, [404, 404, 404, 200, 400, 400], "{answers:?}");
    let bodies: Vec<serde_json::Value> = answers
        .iter()
        .map(|(_, b)| serde_json::from_str(b).unwrap())
        .collect();
    assert_eq!(bodies[0]["reason"], "NotFound");
    assert!(
        bodies[0]["message"].as_str().unwrap().len() < 400,
        "the name is not echoed whole"
    );
    assert_eq!(bodies[3]["items"], serde_json::json!([]));
    assert_eq!(bodies[4]["kind"], "Status");
    assert!(
        bodies[4]["message"]
            .as_str()
            .unwrap()
            .contains("at most 100 are accepted"),
        "{}",
        bodies[4]
    );
    assert!(
        bodies[5]["message"]
            .as_str()
            .unwrap()
            .contains("at most 8192 are accepted"),
        "{}",
        bodies[5]
    );
    assert_eq!(running.asked.load(Ordering::SeqCst), 0, "no review asked");
    // A name that can exist is put to a review (this replica does not
    // drive, so then 503).
    let r = running.clone();
    let (status, _) = blocking(move || {
        get(
            &r,
            "/apis/driver.metahook.dev/v1alpha1/namespaces/shop/reconciles/hello.web",
        )
        .unwrap()
    })
    .await;
    assert_eq!(status, 503);
    assert_eq!(running.asked.load(Ordering::SeqCst), 1);
    running.handle.stop(false).await;
}

/// Hold `n` TCP connections that send nothing.
fn idle_sockets(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n).map(|_| TcpStream::connect(addr).unwrap()).collect()
}

/// More idle sockets than actix-tls's default handshake slots (256 per
/// worker, two workers), kept open by a handshake timeout longer than the
/// test: a new client is still served, without waiting for them.
#[actix_rt::test]
async fn idle_sockets_leave_handshakes_for_new_clients() {
    let running = Arc::new(start(Limits {
        handshake_timeout: Duration::from_secs(600),
        ..Limits::default()
    }));
    let addr = running.addr;
    let idle = blocking(move || idle_sockets(addr, 600)).await;
    let r = running.clone();
    let answer = blocking(move || get(&r, "/healthz")).await;
    assert_eq!(answer.unwrap().0, 200);
    drop(idle);
    running.handle.stop(false).await;
}

/// A socket that never starts its handshake is closed after the
/// handshake timeout (the read returns: end of stream or reset, not the
/// test's own 30-second bound).
#[actix_rt::test]
async fn an_idle_socket_is_closed_after_the_handshake_timeout() {
    let running = start(Limits {
        handshake_timeout: Duration::from_millis(300),
        ..Limits::default()
    });
    let addr = running.addr;
    let read = blocking(move || {
        let mut socket = TcpStream::connect(addr).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        socket.read(&mut [0u8; 16])
    })
    .await;
    match read {
        Ok(0) => {}
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
        Ok(n) => panic!("{n} bytes from a server that was sent nothing"),
    }
    running.handle.stop(false).await;
}
