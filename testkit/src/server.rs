//! The hook service on a real socket, and a raw HTTP/1.1 client for it.

use crate::fixtures::now;
use metahook_service::{AppState, Settings, start};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A server on a real socket (127.0.0.1, a free port), in its own thread.
pub struct RealServer {
    pub addr: SocketAddr,
    handle: actix_web::dev::ServerHandle,
}

impl RealServer {
    pub fn start(settings: Settings, controllers: &'static [metahook_core::Controller]) -> Self {
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
