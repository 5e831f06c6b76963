//! A scripted API server for the driver's tests, with tower-test, the way
//! kube-rs tests its own controllers: a test takes each request the client
//! sends, checks it, and answers.

use http::{Request, Response};
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};
use tower_test::mock::{self, Handle};

pub(crate) type ApiHandle = Handle<Request<Body>, Response<Body>>;

/// A client whose every request the returned handle answers.
pub(crate) fn mock_client() -> (Client, ApiHandle) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    (Client::new(service, "default"), handle)
}

/// One request as the API server saw it.
pub(crate) struct Seen {
    pub method: String,
    pub path: String,
    pub query: String,
    pub content_type: String,
    pub body: Value,
}

/// Takes the next request and answers `code` with `body`.
pub(crate) async fn answer(handle: &mut ApiHandle, code: u16, body: Value) -> Seen {
    let (request, send) = handle.next_request().await.expect("a request");
    let seen_content_type = request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or_default().to_owned();
    let bytes = request.into_body().collect_bytes().await.unwrap();
    let body_json = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap()
    };
    send.send_response(
        Response::builder()
            .status(code)
            .header("content-type", "application/json")
            .body(Body::from(serde_json::to_vec(&body).unwrap()))
            .unwrap(),
    );
    Seen {
        method,
        path,
        query,
        content_type: seen_content_type,
        body: body_json,
    }
}

pub(crate) fn status_body(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": format!("scripted {reason}"), "reason": reason, "code": code})
}

/// The API server's 403 for a write in a namespace being deleted, to
/// `resource` `name` in namespace `shop`: cause `NamespaceTerminating`.
pub(crate) fn namespace_terminating_body(resource: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 403,
        "reason": "Forbidden",
        "message": format!("{resource} \"{name}\" is forbidden: unable to create new content in namespace shop because it is being terminated"),
        "details": {"name": name, "kind": resource,
                    "causes": [{"reason": "NamespaceTerminating", "message": "namespace shop is being terminated",
                                "field": "metadata.namespace"}]}
    })
}

/// How long a scripted exchange may take: a request missing from the
/// script, or one too many, fails the test instead of hanging it. A guard
/// against a hang, not a timing claim: generous for a loaded machine.
const EXCHANGE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs the client and the script side by side, within
/// [`EXCHANGE_TIMEOUT`]; check [`no_further_request`] after it.
pub(crate) async fn scripted<C: Future, S: Future>(client: C, script: S) -> (C::Output, S::Output) {
    bounded(futures::future::join(client, script)).await
}

/// Any scripted exchange, within [`EXCHANGE_TIMEOUT`].
pub(crate) async fn bounded<F: Future>(exchange: F) -> F::Output {
    tokio::time::timeout(EXCHANGE_TIMEOUT, exchange)
        .await
        .expect("the scripted exchange did not finish: a request is missing or one too many")
}

/// Fails if the client sent a request the script did not take. A request
/// is in the channel as soon as it is sent, so once the client's future is
/// done, whatever it sent is there to see.
pub(crate) fn no_further_request(api: &mut ApiHandle) {
    use futures::FutureExt;
    if let Some(Some((request, _))) = api.next_request().now_or_never() {
        panic!(
            "a request the script did not expect: {} {}",
            request.method(),
            request.uri()
        );
    }
}
