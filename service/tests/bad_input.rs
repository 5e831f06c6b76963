//! The bad-input matrix, over a real socket. Every case gets its documented
//! status and a JSON error body (`status`, `reason`, `message`, plus `line`
//! and `column` for malformed JSON, `path` for a wrong shape); none reaches
//! a panic (no 500), and the server answers `/healthz` afterwards.
//!
//! | input                                           | status | reason                |
//! |-------------------------------------------------|--------|-----------------------|
//! | malformed, truncated, empty, NaN, non-UTF-8     | 400    | MalformedJson (line/column) |
//! | number too large for any integer (`1e400`)      | 400    | MalformedJson         |
//! | top level not an object (deeply nested or not), |        |                       |
//! | `parent` missing,                               |        |                       |
//! | `children` null or a list, a duplicate key,     | 422    | InvalidRequest (path) |
//! | a number where a string belongs                 |        |                       |
//! | a child without `kind`                          | 200    | (not a Deployment: ignored) |
//! | a spec of the wrong shape, deeply nested or not | 200    | (the status says why: the user's object, not the request) |
//! | deep nesting in anything skipped (managedFields) | 200   | (skipped without recursion) |
//! | a huge string, 1,000 children (within limits)   | 200    |                       |
//! | more Deployments than a Hello could have (1,001) | 422   | InvalidRequest (path) |
//! | a body over `--max-body-bytes`                  | 413    | PayloadTooLarge       |
//! | GET on a hook                                   | 405    | MethodNotAllowed, `Allow: POST` |
//! | a content type other than JSON                  | 415    | UnsupportedMediaType  |
//! | headers, then a body that never comes           | 408    | RequestTimeout        |
//!
//! Deep nesting cannot overflow the stack: skipped values are skipped
//! without recursion, a typed field stops at the first level of the wrong
//! type, and serde_json's recursion limit (128 levels) bounds the rest.
//!
//! A child without `kind` cannot be a Deployment, so Hello ignores it, as it
//! ignores any observed object that is not an `apps/v1` Deployment.

use metahook_testkit::{lenient, requests};

use metahook_testkit::{RealServer, Response, fixtures};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Small enough to test the limit cheaply, large enough for a huge string.
const LIMIT: usize = 4 * 1024 * 1024;

fn server() -> RealServer {
    let mut settings = RealServer::settings();
    settings.max_body_bytes = LIMIT;
    settings.request_timeout = Duration::from_secs(1);
    RealServer::start(settings, metahook_seeds::controllers())
}

fn ready() -> Value {
    let fixture = fixtures()
        .into_iter()
        .find(|f| f.controller == "hello" && f.case == "ready")
        .expect("fixtures/hello/ready.json");
    serde_json::from_slice(&fixture.body()).expect("fixture is JSON")
}

/// A valid request with one change made to it.
fn with(change: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut request = ready();
    change(&mut request);
    serde_json::to_vec(&request).expect("encodes")
}

type Check = Box<dyn Fn(&Value)>;

/// What a case must get back.
enum Want {
    /// 200 and a response that passes the check.
    Ok(Check),
    /// An error with this status and reason; the check looks at the rest.
    Error(u16, &'static str, Check),
}

fn ok(check: impl Fn(&Value) + 'static) -> Want {
    Want::Ok(Box::new(check))
}

fn err(status: u16, reason: &'static str, check: impl Fn(&Value) + 'static) -> Want {
    Want::Error(status, reason, Box::new(check))
}

fn any(_: &Value) {}

fn has_position(error: &Value) {
    assert!(error["line"].as_u64().is_some(), "no line: {error}");
    assert!(error["column"].as_u64().is_some(), "no column: {error}");
}

fn path_is(want: &'static str) -> impl Fn(&Value) {
    move |error: &Value| assert_eq!(error["path"], want, "{error}")
}

/// The path of a field of an observed child, ending in `suffix`.
fn child_path_ends(suffix: &'static str) -> impl Fn(&Value) {
    move |error: &Value| {
        assert!(
            error["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("children.") && p.ends_with(suffix)),
            "{error}"
        )
    }
}

/// The spec is the user's object: a bad one is reported in the status
/// (`SpecValid` False, naming the field), not refused.
fn spec_invalid(field: &'static str) -> impl Fn(&Value) {
    move |response: &Value| {
        let valid = &response["status"]["conditions"][1];
        assert_eq!(valid["type"], "SpecValid");
        assert_eq!(valid["status"], "False", "{valid}");
        assert!(
            valid["message"].as_str().is_some_and(|m| m.contains(field)),
            "{valid}"
        );
    }
}

fn check(name: &str, response: &Response, want: &Want) {
    assert_ne!(response.status, 500, "{name}: reached a 500: {response:?}");
    let body: Value = serde_json::from_slice(&response.body)
        .unwrap_or_else(|e| panic!("{name}: body is not JSON ({e}): {response:?}"));
    match want {
        Want::Ok(check) => {
            assert_eq!(response.status, 200, "{name}: {body}");
            check(&body);
        }
        Want::Error(status, reason, detail) => {
            assert_eq!(response.status, *status, "{name}: {body}");
            assert_eq!(body["status"], *status, "{name}: {body}");
            assert_eq!(body["reason"], *reason, "{name}: {body}");
            assert!(
                body["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{name}: no message: {body}"
            );
            detail(&body);
        }
    }
}

fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn the_matrix() {
    let server = server();
    let json = "application/json";
    let ready_bytes = serde_json::to_vec(&ready()).expect("encodes");
    let deep = 100_000;

    // Not JSON: 400, saying where it stops being JSON.
    let malformed = [
        ("truncated", ready_bytes[..ready_bytes.len() / 2].to_vec()),
        ("empty", Vec::new()),
        ("trailing garbage", [ready_bytes.as_slice(), b"}"].concat()),
        ("NaN", b"{\"parent\": NaN}".to_vec()),
        (
            "not UTF-8 inside a string",
            [
                b"{\"parent\": {\"metadata\": {\"name\": \"".as_slice(),
                b"\xff\xfe\"}}}",
            ]
            .concat(),
        ),
        ("not UTF-8 at all", b"\xff\xfe\x00{\x80".to_vec()),
        (
            "a lone surrogate escape",
            br#"{"parent": {"metadata": {"name": "\ud800"}}}"#.to_vec(),
        ),
        (
            "an integer out of range",
            with(|r| r["parent"]["metadata"]["generation"] = json!(987_654_321))
                .replace_first(b"987654321", b"1e400"),
        ),
    ];
    // JSON, but not a request: 422.
    let wrong_shape = [
        (
            // serde reads a struct from an array too (positionally); the
            // first element is the skipped `controller`, so this is a
            // request with one field: the wrong shape.
            "deeply nested at the top",
            nested(deep).into_bytes(),
        ),
        ("top level is a list", b"[]".to_vec()),
        ("top level is null", b"null".to_vec()),
        (
            "missing children",
            with(|r| {
                r.as_object_mut().map(|o| o.remove("children"));
            }),
        ),
        (
            "a child group a list",
            with(|r| r["children"]["Deployment.apps/v1"] = json!([])),
        ),
        ("duplicate parent", {
            let mut bytes = ready_bytes.clone();
            bytes.pop(); // the closing brace
            [bytes.as_slice(), b",\"parent\":{}}"].concat()
        }),
    ];
    // The wrong type at a field: 422 naming the field's path.
    let wrong_field = [
        (
            "children null",
            with(|r| r["children"] = Value::Null),
            "children",
        ),
        (
            "children a list",
            with(|r| r["children"] = json!([])),
            "children",
        ),
        (
            // After the parent, whose spec and status are read as raw text:
            // the field path must still point here.
            "a string for finalizing",
            with(|r| r["finalizing"] = json!("yes")),
            "finalizing",
        ),
        (
            "a number for the parent's name",
            with(|r| r["parent"]["metadata"]["name"] = json!(42)),
            "parent.metadata.name",
        ),
        (
            "a number for a label value",
            with(|r| r["parent"]["metadata"]["labels"] = json!({"a": 1})),
            "parent.metadata.labels.a",
        ),
        (
            "a fraction for the generation",
            with(|r| r["parent"]["metadata"]["generation"] = json!(1.5)),
            "parent.metadata.generation",
        ),
    ];
    // Hostile only where the hook does not look: answered as usual.
    let unread = [
        (
            // Skipped values are skipped without recursion: no stack, no
            // limit, and the request is otherwise fine.
            "deeply nested in the ignored controller",
            deep_at(|r| &mut r["controller"]["spec"], deep),
        ),
        (
            "deeply nested in a child's managedFields",
            deep_at(
                |r| &mut r["children"]["Deployment.apps/v1"]["hello"]["metadata"]["managedFields"],
                deep,
            ),
        ),
        (
            // The parent's status is only read to carry condition times
            // over; an unreadable one counts as absent.
            "deeply nested in the parent's status",
            deep_at(|r| &mut r["parent"]["status"], deep),
        ),
        (
            "a huge string in an ignored field",
            with(|r| r["controller"]["metadata"]["annotations"]["x"] = json!("x".repeat(3 << 20))),
        ),
    ];
    // Each with an answer of its own to check.
    let particular: Vec<(&str, Vec<u8>, Want)> = vec![
        (
            "malformed",
            b"{\"parent\": {,}}".to_vec(),
            err(400, "MalformedJson", |e| {
                assert_eq!(e["line"], 1, "{e}");
                assert_eq!(e["column"], 13, "{e}");
            }),
        ),
        (
            // The spec is the user's object: read leniently and reported in
            // the status (nothing lost: the observed child is held).
            "deeply nested in the spec",
            deep_at(|r| &mut r["parent"]["spec"]["image"], deep),
            ok(|response| {
                spec_invalid("spec.image")(response);
                assert_eq!(response["children"][0]["spec"]["replicas"], 2);
            }),
        ),
        (
            "deeply nested as the spec",
            deep_at(|r| &mut r["parent"]["spec"], deep),
            ok(|response| {
                assert_eq!(response["status"]["conditions"][1]["status"], "False");
            }),
        ),
        (
            "missing parent",
            with(|r| {
                r.as_object_mut().map(|o| o.remove("parent"));
            }),
            err(422, "InvalidRequest", |e| {
                assert!(
                    e["message"].as_str().unwrap_or("").contains("parent"),
                    "{e}"
                );
            }),
        ),
        (
            "a number for a child's name",
            with(|r| {
                for child in children_mut(r) {
                    child["metadata"]["name"] = json!(7);
                }
            }),
            err(422, "InvalidRequest", child_path_ends("metadata.name")),
        ),
        (
            "a string for a child's ready replicas",
            with(|r| {
                for child in children_mut(r) {
                    child["status"]["readyReplicas"] = json!("2");
                }
            }),
            err(
                422,
                "InvalidRequest",
                child_path_ends("status.readyReplicas"),
            ),
        ),
        (
            "a child without kind is not a Deployment",
            with(|r| {
                for child in children_mut(r) {
                    child.as_object_mut().map(|o| o.remove("kind"));
                }
            }),
            ok(|response| {
                // Not observed: the Deployment is desired afresh and the
                // status counts no pods.
                assert_eq!(response["children"][0]["kind"], "Deployment");
                assert_eq!(response["status"]["replicas"], 0, "{response}");
            }),
        ),
        (
            "a spec of the wrong shape",
            with(|r| r["parent"]["spec"]["replicas"] = json!("three")),
            ok(spec_invalid("spec.replicas")),
        ),
        (
            "a huge string the hook reads",
            with(|r| r["parent"]["spec"]["image"] = json!("i".repeat(3 << 20))),
            ok(|response| {
                let image =
                    &response["children"][0]["spec"]["template"]["spec"]["containers"][0]["image"];
                assert_eq!(image.as_str().map(str::len), Some(3 << 20));
            }),
        ),
        (
            // Hooks build in proportion to the objects: a request holds at
            // most `Observed::MAX` of a type (docs/robustness.md).
            "1,001 Deployments",
            children(1001),
            err(422, "InvalidRequest", |e| {
                assert_eq!(e["path"], "children.Deployment.apps/v1");
                assert!(
                    e["message"]
                        .as_str()
                        .is_some_and(|m| m.contains("more than 1000"))
                );
            }),
        ),
        (
            "1,000 children",
            children(1000),
            ok(|response| {
                // The Hello's own Deployment is among them and is reported.
                assert_eq!(response["status"]["replicas"], 2, "{}", response["status"]);
                assert_eq!(response["children"].as_array().map(Vec::len), Some(1));
            }),
        ),
    ];

    let cases = malformed
        .into_iter()
        .map(|(name, body)| (name, body, err(400, "MalformedJson", has_position)))
        .chain(
            wrong_shape
                .into_iter()
                .map(|(name, body)| (name, body, err(422, "InvalidRequest", any))),
        )
        .chain(
            wrong_field
                .into_iter()
                .map(|(name, body, path)| (name, body, err(422, "InvalidRequest", path_is(path)))),
        )
        .chain(unread.into_iter().map(|(name, body)| (name, body, ok(any))))
        .chain(particular);

    for (name, body, want) in cases {
        let response = server.post("/hello/sync", json, &body);
        check(name, &response, &want);
    }

    // Framing and routing.
    let over = vec![b' '; LIMIT + 1];
    check(
        "over the limit, declared",
        &lenient::send(
            &server,
            format!(
                "POST /hello/sync HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                LIMIT + 1
            )
            .as_bytes(),
        ),
        &err(413, "PayloadTooLarge", any),
    );
    check(
        "over the limit, chunked",
        &lenient::send(&server, &chunked("/hello/sync", &over)),
        &err(413, "PayloadTooLarge", any),
    );
    check(
        "within the limit, chunked",
        &server.send(&chunked("/hello/sync", &ready_bytes)),
        &ok(any),
    );
    let get = server.get("/hello/sync");
    check("GET on a hook", &get, &err(405, "MethodNotAllowed", any));
    assert_eq!(get.header("allow"), Some("POST"));
    for content_type in ["text/plain", "application/x-www-form-urlencoded", ""] {
        check(
            &format!("content type {content_type:?}"),
            &server.post("/hello/sync", content_type, &ready_bytes),
            &err(415, "UnsupportedMediaType", any),
        );
    }
    check(
        "unknown controller",
        &server.post("/nope/sync", json, &ready_bytes),
        &err(404, "UnknownController", any),
    );
    check(
        "unknown hook",
        &server.post("/hello/customize", json, &ready_bytes),
        &err(404, "UnknownHook", any),
    );

    // The whole matrix did no harm.
    let health = server.get("/healthz");
    assert_eq!(health.status, 200);
    check(
        "a good request after the matrix",
        &server.post("/hello/sync", json, &ready_bytes),
        &ok(any),
    );
}

/// Headers, then silence: the server answers 408 once `request_timeout`
/// (1 s here) has passed, and serves other clients meanwhile.
#[test]
fn a_stalled_client_is_timed_out_and_others_are_served() {
    let server = server();
    let mut stalled = stall(
        &server,
        b"POST /hello/sync HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"parent\":",
    );

    // Meanwhile, others are served (two workers; the stall holds neither).
    let body = serde_json::to_vec(&ready()).expect("encodes");
    for _ in 0..8 {
        assert_eq!(
            server.post("/hello/sync", "application/json", &body).status,
            200
        );
        assert_eq!(server.get("/healthz").status, 200);
    }

    let mut raw = Vec::new();
    stalled
        .read_to_end(&mut raw)
        .expect("the server answers or closes");
    let response = Response::parse(&raw);
    check("stalled body", &response, &err(408, "RequestTimeout", any));
    assert_eq!(server.get("/healthz").status, 200);
}

/// A client that never finishes its request head is cut off by actix-web's
/// own `client_request_timeout` (no hook runs, so the answer, if any, is
/// actix's bare 408); the server keeps serving.
#[test]
fn a_stalled_head_is_cut_off() {
    let server = server();
    let mut stalled = stall(&server, b"POST /hello/sync HTTP/1.1\r\nHost: te");
    assert_eq!(server.get("/healthz").status, 200);
    let mut raw = Vec::new();
    // Closed (maybe after a 408) rather than held open forever.
    let _ = stalled.read_to_end(&mut raw);
    if !raw.is_empty() {
        assert_eq!(Response::parse(&raw).status, 408);
    }
    assert_eq!(server.get("/healthz").status, 200);
}

/// A connection that sends `start` of a request and then nothing, waiting
/// at most 30 s for what the server does about it.
fn stall(server: &RealServer, start: &[u8]) -> TcpStream {
    let mut stalled = TcpStream::connect(server.addr).expect("connect");
    stalled
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    stalled.write_all(start).expect("write the start");
    stalled
}

/// The ready request with `depth` nested arrays at the place `at` picks
/// (spliced in as bytes: serialising them would recurse in the test).
fn deep_at(at: impl FnOnce(&mut Value) -> &mut Value, depth: usize) -> Vec<u8> {
    let mut request = ready();
    *at(&mut request) = json!("DEEP-MARKER");
    serde_json::to_vec(&request)
        .expect("encodes")
        .replace_first(b"\"DEEP-MARKER\"", nested(depth).as_bytes())
}

fn children_mut(request: &mut Value) -> Vec<&mut Value> {
    request["children"]
        .as_object_mut()
        .into_iter()
        .flat_map(|groups| groups.values_mut())
        .filter_map(Value::as_object_mut)
        .flat_map(|objects| objects.values_mut())
        .collect()
}

/// The Hello's own Deployment (whole, from the generator) plus `n - 1`
/// small ones.
fn children(n: usize) -> Vec<u8> {
    let mut request = requests::hello(1);
    let group = &mut request["children"]["Deployment.apps/v1"];
    for i in 1..n {
        group[format!("default/other-{i:05}")] = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": format!("other-{i:05}"), "namespace": "default"},
            "status": {"replicas": 1}
        });
    }
    let bytes = requests::bytes(&request);
    assert!(bytes.len() < LIMIT, "{} bytes", bytes.len());
    bytes
}

fn chunked(path: &str, body: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    for chunk in body.chunks(64 * 1024) {
        request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        request.extend_from_slice(chunk);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    request
}

trait ReplaceFirst {
    fn replace_first(self, from: &[u8], to: &[u8]) -> Vec<u8>;
}

impl ReplaceFirst for Vec<u8> {
    fn replace_first(self, from: &[u8], to: &[u8]) -> Vec<u8> {
        match self.windows(from.len()).position(|w| w == from) {
            Some(i) => [&self[..i], to, &self[i + from.len()..]].concat(),
            None => panic!("{} not found", String::from_utf8_lossy(from)),
        }
    }
}
