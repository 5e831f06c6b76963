//! The memory budget for request bodies (`--max-buffered-bytes`), over a
//! real socket. With a budget of 1 MiB and requests of about 600 KB, one
//! request held sent but for its last byte pins more than half the budget,
//! so the refusals below are certain, not a race: a second declared body is
//! refused before it is sent, a chunked one where its buffer crosses the
//! budget. A body holds budget for what has arrived, not for what it
//! declares: a client that declares a body and sends nothing holds nothing. Each
//! refusal is 429 with `Retry-After` and the usual JSON error, `/healthz`
//! answers meanwhile, and once the budget is free the same requests get 200
//! with the hook's answer.
//!
//! The waits below poll `metahook_hook_request_bytes_buffered` with a
//! generous deadline: a liveness guard, never a timing check.

use metahook_testkit::{lenient, requests};

use metahook_seeds::controllers;
use metahook_testkit::metrics_text::sample;
use metahook_testkit::{RealServer, Response, now};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

const BUDGET: usize = 1024 * 1024;
const LIVENESS: Duration = Duration::from_secs(30);

fn server(request_timeout: Duration) -> RealServer {
    let mut settings = RealServer::settings();
    settings.max_buffered_bytes = BUDGET;
    settings.request_timeout = request_timeout;
    RealServer::start(settings, controllers())
}

/// A Hello sync request of about 600 KB: more than half the budget, so two
/// never fit at once, and one leaves room for a small request beside it.
fn big_request() -> Vec<u8> {
    let body = requests::bytes(&requests::hello(128));
    assert!(
        body.len() > BUDGET / 2 && body.len() < BUDGET * 3 / 4,
        "{} bytes",
        body.len()
    );
    body
}

/// The small fixture (7.9 KB).
fn small_request() -> Vec<u8> {
    std::fs::read(metahook_testkit::root().join("fixtures/hello/ready.json")).expect("fixture")
}

/// What the Hello sync hook answers to `body`, called directly.
fn expected(body: &[u8]) -> Vec<u8> {
    let (_, _, handler) =
        metahook_core::registry::lookup(controllers(), "hello", "sync").expect("hello sync");
    handler(body, now()).expect("the hook answers")
}

fn assert_answered(response: &Response, body: &[u8]) {
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    assert_eq!(response.body, expected(body), "the hook's own answer");
}

/// 429, whole-second `Retry-After` of at least 1 (0 would make Metacontroller
/// retry at once), and the JSON error naming the budget.
fn assert_over_budget(response: &Response) {
    assert_eq!(
        response.status,
        429,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    let retry = response
        .header("retry-after")
        .expect("429 carries Retry-After");
    assert!(
        retry.parse::<u64>().is_ok_and(|s| s >= 1),
        "Retry-After: {retry:?}"
    );
    let json = response.json();
    assert_eq!(json["status"], 429);
    assert_eq!(json["reason"], "MemoryBudgetExceeded");
    assert!(
        json["message"]
            .as_str()
            .is_some_and(|m| m.contains("--max-buffered-bytes")),
        "{json}"
    );
}

/// The value of a metric line on `/metrics` (0 when absent).
fn metric(server: &RealServer, name: &str) -> i64 {
    let metrics = server.get("/metrics");
    assert_eq!(metrics.status, 200);
    sample(&metrics.body, name) as i64
}

fn buffered(server: &RealServer) -> i64 {
    metric(server, "metahook_hook_request_bytes_buffered")
}

fn refused(server: &RealServer, reason: &str) -> i64 {
    metric(
        server,
        &format!("metahook_hook_requests_refused_total{{reason=\"{reason}\"}}"),
    )
}

/// Waits until the bodies held add up to `want` bytes.
fn wait_for_buffered(server: &RealServer, want: usize) {
    let want = i64::try_from(want).expect("small");
    wait_for_metric(server, "metahook_hook_request_bytes_buffered", want);
}

/// Waits until a metric reads `want`.
fn wait_for_metric(server: &RealServer, name: &str, want: i64) {
    let deadline = Instant::now() + LIVENESS;
    loop {
        let now = metric(server, name);
        if now == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name} stayed at {now}, never {want} (liveness guard, not a timing check)"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until some bytes are held.
fn wait_for_some_buffered(server: &RealServer) {
    let deadline = Instant::now() + LIVENESS;
    while buffered(server) == 0 {
        assert!(
            Instant::now() < deadline,
            "nothing was ever held (liveness guard, not a timing check)"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn connect(server: &RealServer) -> TcpStream {
    let stream = TcpStream::connect(server.addr).expect("connect");
    stream.set_read_timeout(Some(LIVENESS)).expect("timeout");
    stream
}

fn head(len: usize) -> String {
    format!(
        "POST /hello/sync HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
    )
}

const CHUNKED_HEAD: &[u8] = b"POST /hello/sync HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

/// `body` in chunks of 16 KiB, without the last (empty) chunk.
fn chunks(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in body.chunks(16 * 1024) {
        out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
    }
    out
}

const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Reads one response: the head, then `Content-Length` bytes. It does not
/// wait for the connection to close, which a server draining an unfinished
/// chunked body would not do.
fn read_response(stream: &mut TcpStream) -> Response {
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    // Bounded: each read waits at most LIVENESS, and a response is small.
    for _ in 0..10_000 {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = Response::parse(&raw[..end + 4]);
            let len: usize = head
                .header("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            if raw.len() >= end + 4 + len {
                return Response::parse(&raw[..end + 4 + len]);
            }
        }
        let n = stream.read(&mut buf).expect("the server answers");
        assert!(
            n > 0,
            "closed without an answer: {:?}",
            String::from_utf8_lossy(&raw)
        );
        raw.extend_from_slice(&buf[..n]);
    }
    panic!("no complete response in {} bytes", raw.len())
}

/// A request sent but for its last byte: admitted, holding its bytes.
struct Held {
    stream: TcpStream,
    rest: Vec<u8>,
}

impl Held {
    fn start(server: &RealServer, body: &[u8]) -> Self {
        let mut stream = connect(server);
        let most = body.len() - 1;
        stream.write_all(head(body.len()).as_bytes()).expect("head");
        stream.write_all(&body[..most]).expect("all but a byte");
        Held {
            stream,
            rest: body[most..].to_vec(),
        }
    }

    fn finish(mut self) -> Response {
        self.stream.write_all(&self.rest).expect("the rest");
        read_response(&mut self.stream)
    }
}

#[test]
fn a_declared_body_over_the_budget_is_refused_before_it_is_sent() {
    let server = server(Duration::from_secs(60));
    let body = big_request();
    let held = Held::start(&server, &body);
    // Held as it arrived; the last step holds the declared length.
    wait_for_buffered(&server, body.len());

    // A second one declares as much: refused on its head alone.
    let mut second = connect(&server);
    second.write_all(head(body.len()).as_bytes()).expect("head");
    assert_over_budget(&read_response(&mut second));
    drop(second);
    assert_eq!(
        buffered(&server),
        body.len() as i64,
        "a refusal holds nothing"
    );

    // The process answers health checks while the budget is taken, and a
    // request that fits beside the held one is served.
    assert_eq!(server.get("/healthz").status, 200);
    let small = small_request();
    assert_answered(
        &server.post("/hello/sync", "application/json", &small),
        &small,
    );

    // The admitted request finishes normally and gives its bytes back.
    assert_answered(&held.finish(), &body);
    wait_for_buffered(&server, 0);

    // The request refused before now fits: 200 with the hook's answer.
    assert_answered(
        &server.post("/hello/sync", "application/json", &body),
        &body,
    );
    wait_for_buffered(&server, 0);
    assert_eq!(refused(&server, "MemoryBudgetExceeded"), 1);
}

#[test]
fn a_declared_length_holds_nothing_until_its_bytes_arrive() {
    // Were a head to reserve its whole Content-Length for the body timeout,
    // two heads of 600 KB and no body would take the 1 MiB budget and every
    // other request would get 429 meanwhile.
    let server = server(Duration::from_secs(60));
    let body = big_request();
    let mut silent = Vec::new();
    for n in 1..=2 {
        let mut stream = connect(&server);
        stream.write_all(head(body.len()).as_bytes()).expect("head");
        silent.push(stream);
        // The head is admitted (counted in flight) and its body awaited.
        wait_for_metric(&server, "metahook_hook_requests_in_flight", n);
        assert_eq!(
            buffered(&server),
            0,
            "a declared length alone holds nothing"
        );
    }
    assert_answered(
        &server.post("/hello/sync", "application/json", &body),
        &body,
    );
    assert_eq!(refused(&server, "MemoryBudgetExceeded"), 0);
    drop(silent);
}

#[test]
fn a_chunked_body_is_refused_where_it_crosses_the_budget() {
    let server = server(Duration::from_secs(60));
    let body = big_request();
    let held = Held::start(&server, &body);
    wait_for_buffered(&server, body.len());

    // A chunked body as large as the held one cannot fit in what is left.
    // Its last chunk is never sent, so only a refusal at the crossing can
    // answer it before the request timeout (60 s; a 408 fails the test).
    let mut chunked = connect(&server);
    let mut writer = chunked.try_clone().expect("clone");
    let sent = [CHUNKED_HEAD, &chunks(&body)].concat();
    let sender = std::thread::spawn(move || {
        // The server may stop reading once it has refused: not an error.
        let _ = writer.write_all(&sent);
    });
    assert_over_budget(&read_response(&mut chunked));
    let _ = chunked.shutdown(Shutdown::Both);
    sender.join().expect("sender");
    // What it had reserved is given back; the held request keeps its share.
    wait_for_buffered(&server, body.len());
    assert_eq!(server.get("/healthz").status, 200);

    assert_answered(&held.finish(), &body);
    wait_for_buffered(&server, 0);

    // Within the budget, the same body chunked is read whole and answered.
    let mut again = connect(&server);
    again
        .write_all(&[CHUNKED_HEAD, &chunks(&body), LAST_CHUNK].concat())
        .expect("whole chunked body");
    assert_answered(&read_response(&mut again), &body);
    wait_for_buffered(&server, 0);
    assert_eq!(refused(&server, "MemoryBudgetExceeded"), 1);
}

#[test]
fn a_body_larger_than_the_whole_budget_is_413_not_a_retry() {
    // Retrying could never help, so it is not a 429 (Metacontroller would
    // retry it for ever), though --max-body-bytes (32 MiB) allows it.
    let server = server(Duration::from_secs(60));
    let body = requests::bytes(&requests::hello(300));
    assert!(body.len() > BUDGET);
    let response = lenient::post(&server, "/hello/sync", &body);
    assert_eq!(response.status, 413);
    assert_eq!(response.json()["reason"], "PayloadTooLarge");
    assert_eq!(buffered(&server), 0);
    assert_eq!(server.get("/healthz").status, 200);
}

#[test]
fn a_slow_sender_gives_its_share_back_when_timed_out() {
    // The timeout covers the whole body, not the gaps between its bytes: a
    // sender that trickles a little every 20 ms, for far longer than the
    // liveness deadline, is still cut off after request_timeout (1 s).
    let server = server(Duration::from_secs(1));
    let body = big_request();
    let mut slow = connect(&server);
    slow.write_all(head(body.len()).as_bytes()).expect("head");
    let mut writer = slow.try_clone().expect("clone");
    let trickle = body.clone();
    let sender = std::thread::spawn(move || {
        // 100 bytes every 20 ms: 2 minutes for the body, unless cut off.
        for piece in trickle.chunks(100).take(trickle.len() / 100 - 1) {
            if writer.write_all(piece).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    wait_for_some_buffered(&server);

    let response = read_response(&mut slow);
    assert_eq!(response.status, 408);
    assert_eq!(response.json()["reason"], "RequestTimeout");
    let _ = slow.shutdown(Shutdown::Both);
    sender.join().expect("sender");

    wait_for_buffered(&server, 0);
    assert_answered(
        &server.post("/hello/sync", "application/json", &body),
        &body,
    );
    assert_eq!(refused(&server, "RequestTimeout"), 1);
}

#[test]
fn a_client_that_goes_away_gives_its_share_back() {
    let server = server(Duration::from_secs(60));
    let body = big_request();
    for chunked in [false, true] {
        let mut gone = connect(&server);
        if chunked {
            gone.write_all(CHUNKED_HEAD).expect("head");
            let sent = chunks(&body);
            gone.write_all(&sent[..sent.len() / 2]).expect("half");
        } else {
            gone.write_all(head(body.len()).as_bytes()).expect("head");
            gone.write_all(&body[..body.len() / 2]).expect("half");
        }
        // Some bytes are held, then the client hangs up mid-body.
        wait_for_some_buffered(&server);
        drop(gone);
        wait_for_buffered(&server, 0);
    }
    assert_answered(
        &server.post("/hello/sync", "application/json", &body),
        &body,
    );
}

#[test]
fn the_budget_is_exported() {
    let server = server(Duration::from_secs(60));
    assert_eq!(
        metric(&server, "metahook_hook_request_bytes_budget"),
        BUDGET as i64
    );
    assert_eq!(buffered(&server), 0);
}
