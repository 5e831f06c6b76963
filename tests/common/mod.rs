//! Shared by the integration tests: the fixtures, the pinned clock, the
//! snapshots, and a raw HTTP/1.1 client for tests over a real socket.
#![allow(dead_code)] // each test binary uses a different part of this

use metahook::server::{AppState, Settings, start};
use metahook_hooks::{HookKind, Timestamp};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The time every fixture is rendered at.
pub const NOW: &str = "2026-11-22T03:00:00Z";

pub fn now() -> Timestamp {
    NOW.parse().expect("NOW is RFC 3339")
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One request file under `fixtures/<controller>/<case>.json`.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub controller: String,
    pub case: String,
    pub hook: HookKind,
    pub path: PathBuf,
}

impl Fixture {
    pub fn body(&self) -> Vec<u8> {
        std::fs::read(&self.path).expect("fixture readable")
    }

    /// The insta snapshot name of this fixture's response.
    pub fn snapshot_name(&self) -> String {
        format!("{}__{}", self.controller, self.case)
    }

    pub fn url(&self) -> String {
        format!("/{}/{}", self.controller, self.hook)
    }
}

/// The hook a fixture is for, from its name: `finalize-*` and `customize-*`
/// go to those hooks, everything else to `sync`.
pub fn hook_of(case: &str) -> HookKind {
    if case.starts_with("finalize-") {
        HookKind::Finalize
    } else if case.starts_with("customize-") {
        HookKind::Customize
    } else {
        HookKind::Sync
    }
}

/// Every fixture, sorted by controller and case.
pub fn fixtures() -> Vec<Fixture> {
    let mut out = Vec::new();
    let dir = root().join("fixtures");
    for controller in sorted_entries(&dir).into_iter().filter(|p| p.is_dir()) {
        let name = file_name(&controller);
        for path in sorted_entries(&controller) {
            if path.extension().is_some_and(|e| e == "json") {
                let case = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .expect("UTF-8 name")
                    .to_owned();
                out.push(Fixture {
                    controller: name.clone(),
                    hook: hook_of(&case),
                    case,
                    path,
                });
            }
        }
    }
    out
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("directory readable")
        .map(|e| e.expect("entry readable").path())
        .collect();
    entries.sort();
    entries
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .and_then(|s| s.to_str())
        .expect("UTF-8 name")
        .to_owned()
}

/// Indents JSON without reordering keys: what the snapshots hold.
pub fn pretty(compact: &[u8]) -> String {
    let mut out = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(compact);
    let mut ser = serde_json::Serializer::pretty(&mut out);
    serde_transcode::transcode(&mut de, &mut ser).expect("valid JSON");
    String::from_utf8(out).expect("UTF-8")
}

/// The accepted snapshot of a fixture's response (`tests/snapshots/`).
pub fn snapshot(fixture: &Fixture) -> String {
    let path = root()
        .join("tests/snapshots")
        .join(format!("fixtures__{}.snap", fixture.snapshot_name()));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "snapshot {} missing ({e}); run the fixtures test",
            path.display()
        )
    });
    // An insta file is a `---`-delimited header, then the snapshot.
    let mut parts = text.splitn(3, "---\n");
    let (_, _, body) = (parts.next(), parts.next(), parts.next());
    body.expect("insta header").trim_end().to_owned()
}

/// A server on a real socket (127.0.0.1, a free port), in its own thread.
pub struct RealServer {
    pub addr: SocketAddr,
    handle: actix_web::dev::ServerHandle,
}

impl RealServer {
    pub fn start(settings: Settings, controllers: &'static [metahook_hooks::Controller]) -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let state = actix_web::web::Data::new(
                    AppState::new(controllers, &settings).with_clock(now),
                );
                let (server, addr) = start(&settings, state).expect("server starts");
                tx.send((addr, server.handle())).expect("test waits");
                server.await.expect("server runs");
            });
        });
        let (addr, handle) = rx.recv().expect("server started");
        RealServer { addr, handle }
    }

    pub fn settings() -> Settings {
        let mut settings = Settings::new("127.0.0.1:0".parse().expect("address"));
        settings.workers = Some(2);
        settings
    }

    /// Sends raw bytes, reads the whole answer (the request asks the server
    /// to close the connection).
    pub fn send(&self, request: &[u8]) -> Response {
        let mut stream = TcpStream::connect(self.addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        stream.write_all(request).expect("write");
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).expect("read");
        Response::parse(&raw)
    }

    pub fn post(&self, path: &str, content_type: &str, body: &[u8]) -> Response {
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        self.send(&request)
    }

    pub fn get(&self, path: &str) -> Response {
        self.send(
            format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n").as_bytes(),
        )
    }
}

impl Drop for RealServer {
    fn drop(&mut self) {
        // Fire and forget: the thread ends with the server.
        drop(self.handle.stop(false));
    }
}

/// A parsed HTTP/1.1 response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn parse(raw: &[u8]) -> Self {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a complete response head");
        let head = String::from_utf8_lossy(&raw[..split]);
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .expect("status line");
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        Response {
            status,
            headers,
            body: raw[split + 4..].to_vec(),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}
