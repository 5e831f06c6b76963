//! A client for requests the server may refuse before reading their body
//! (413, 429): it writes in one thread while reading in another, so an
//! early answer is read even if the server closes before the body is sent.
use crate::server::{RealServer, Response};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

pub fn send(server: &RealServer, request: &[u8]) -> Response {
    let mut stream = TcpStream::connect(server.addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut writer = stream.try_clone().expect("clone");
    let request = request.to_vec();
    let sender = std::thread::spawn(move || {
        // Refused early: the rest is not wanted, and that is the point.
        let _ = writer.write_all(&request);
    });
    let mut raw = Vec::new();
    // A reset after the answer still leaves the answer in `raw`.
    let _ = stream.read_to_end(&mut raw);
    // Unblocks the writer if the server stopped reading without closing.
    let _ = stream.shutdown(Shutdown::Both);
    let _ = sender.join();
    Response::parse(&raw)
}

pub fn post(server: &RealServer, path: &str, body: &[u8]) -> Response {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    send(server, &request)
}
