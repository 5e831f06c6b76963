use super::*;

#[test]
fn retry_after_forms() {
    let now: jiff::Timestamp = "2026-11-22T03:00:00Z".parse().unwrap();
    assert_eq!(parse_retry_after("7", now), Duration::from_secs(7));
    assert_eq!(
        parse_retry_after("Sun, 22 Nov 2026 03:00:30 GMT", now),
        Duration::from_secs(30)
    );
    assert_eq!(
        parse_retry_after("Sun, 22 Nov 2026 02:00:00 GMT", now),
        Duration::ZERO
    );
    assert_eq!(parse_retry_after("soon", now), Duration::ZERO);
}

fn caller() -> HookCaller {
    HookCaller::in_process(jiff::Timestamp::now, Arc::new(DriverMetrics::default()))
}

fn target(
    handler: impl Fn(&[u8], metahook_core::Timestamp) -> Result<Vec<u8>, metahook_core::HookError>
    + Send
    + Sync
    + 'static,
) -> HookTarget {
    let handler: Handler = std::sync::Arc::new(handler);
    HookTarget {
        kind: HookKind::Sync,
        version: HookVersion::V2,
        strict: true,
        endpoint: Endpoint::InProcess(handler),
        revision: None,
    }
}

#[tokio::test]
async fn in_process_panics_become_errors() {
    let panicking = target(|_, _| panic!("boom"));
    let err = caller()
        .call("demo", &panicking, b"{}".to_vec())
        .await
        .unwrap_err();
    assert!(
        matches!(err, HookCallError::Panicked { ref message, .. } if message == "boom"),
        "{err}"
    );
    let echo = target(|body, _| Ok(body.to_vec()));
    assert_eq!(
        caller().call("demo", &echo, b"{}".to_vec()).await.unwrap(),
        b"{}"
    );
}

/// Reads one request (head and small body) from `socket`, answers
/// `response`, and returns the request.
pub(crate) async fn exchange<S>(mut socket: S, response: &str) -> std::io::Result<String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 65536];
    let mut got = Vec::new();
    loop {
        let n = socket.read(&mut buf).await?;
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some(head_end) = text.find("\r\n\r\n") {
            let len = text
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .and_then(|v| v.trim().parse::<usize>().ok())
                })
                .unwrap_or(0);
            if got.len() >= head_end + 4 + len {
                break;
            }
        }
        if n == 0 {
            break;
        }
    }
    socket.write_all(response.as_bytes()).await?;
    socket.shutdown().await?;
    Ok(String::from_utf8_lossy(&got).to_string())
}

/// A one-shot HTTP server answering `response` to the first request and
/// handing the request back.
pub(crate) async fn serve_once(
    response: &'static str,
) -> (String, tokio::task::JoinHandle<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        exchange(socket, response).await.unwrap()
    });
    (format!("http://{addr}/demo/sync"), task)
}

fn http_target(url: String) -> HookTarget {
    http_target_with(url, WebhookAuth::default())
}

/// A v2 sync hook at `url` with the webhook's `auth` fields.
pub(crate) fn http_target_with(url: String, auth: WebhookAuth) -> HookTarget {
    HookTarget {
        kind: HookKind::Sync,
        version: HookVersion::V2,
        strict: true,
        endpoint: Endpoint::Http {
            url,
            timeout: Duration::from_secs(30),
            auth: Arc::new(auth),
            etag: None,
        },
        revision: None,
    }
}

fn http_caller() -> HookCaller {
    HookCaller::with_http(jiff::Timestamp::now, Arc::new(DriverMetrics::default())).unwrap()
}

#[tokio::test]
async fn http_posts_json_and_reads_200() {
    let (url, server) = serve_once(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
    )
    .await;
    let body = http_caller()
        .call("demo", &http_target(url), b"{\"a\":1}".to_vec())
        .await
        .unwrap();
    assert_eq!(body, b"{}");
    let request = server.await.unwrap();
    assert!(request.starts_with("POST /demo/sync HTTP/1.1"), "{request}");
    assert!(
        request
            .to_ascii_lowercase()
            .contains("content-type: application/json\r\n"),
        "{request}"
    );
    assert!(request.ends_with("{\"a\":1}"), "{request}");
}

/// The error a call gets from a hook that answers `response`.
async fn error_from(response: &'static str) -> HookCallError {
    let (url, _server) = serve_once(response).await;
    http_caller()
        .call("demo", &http_target(url), b"{}".to_vec())
        .await
        .unwrap_err()
}

#[tokio::test]
async fn http_429_carries_retry_after() {
    let err = error_from(
        "HTTP/1.1 429 Too Many Requests\r\nretry-after: 12\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert!(
        matches!(err, HookCallError::TooManyRequests { retry_after, .. } if retry_after == Duration::from_secs(12)),
        "{err}"
    );
}

#[tokio::test]
async fn http_other_statuses_are_errors_with_the_body() {
    let err =
        error_from("HTTP/1.1 201 Created\r\ncontent-length: 4\r\nconnection: close\r\n\r\nnope")
            .await;
    assert!(
        matches!(err, HookCallError::Status { code: 201, ref body, .. } if body == "nope"),
        "{err}"
    );
}

#[tokio::test]
async fn etag_mode_asks_again_with_if_none_match_and_keeps_the_answer() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/demo/sync", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let mut requests = Vec::new();
        for response in [
            "HTTP/1.1 200 OK\r\netag: \"v1\"\r\ncontent-length: 8\r\nconnection: close\r\n\r\n{\"a\": 1}",
            "HTTP/1.1 304 Not Modified\r\nconnection: close\r\n\r\n",
            "HTTP/1.1 304 Not Modified\r\nconnection: close\r\n\r\n",
        ] {
            let (socket, _) = listener.accept().await.unwrap();
            requests.push(exchange(socket, response).await.unwrap());
        }
        requests
    });
    let cache = Arc::new(etag::EtagCache::new(None, None));
    let mut target = http_target(url);
    if let Endpoint::Http { etag, .. } = &mut target.endpoint {
        *etag = Some(cache);
    }
    let parent = |name: &str| {
        format!(r#"{{"parent": {{"kind": "Thing", "metadata": {{"name": "{name}", "namespace": "shop"}}}}}}"#)
            .into_bytes()
    };
    let caller = http_caller();
    let first = caller.call("demo", &target, parent("p")).await.unwrap();
    assert_eq!(first, b"{\"a\": 1}");
    // The same parent: asked with the tag, the 304 means the kept answer.
    let again = caller.call("demo", &target, parent("p")).await.unwrap();
    assert_eq!(again, b"{\"a\": 1}");
    // Another parent has nothing kept: no tag sent, and a 304 is an error.
    let other = caller.call("demo", &target, parent("q")).await.unwrap_err();
    assert!(
        matches!(other, HookCallError::Status { code: 304, .. }),
        "{other:?}"
    );
    let requests = server.await.unwrap();
    let tagged: Vec<bool> = requests
        .iter()
        .map(|r| r.to_ascii_lowercase().contains("if-none-match: \"v1\"\r\n"))
        .collect();
    assert_eq!(tagged, [false, true, false]);
}
