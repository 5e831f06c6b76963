//! Calling a hook: in-process through the registry (`serve --drive`), or
//! over HTTP like Metacontroller (`drive`; docs/metacontroller.md §1.1): POST,
//! `Content-Type: application/json`, only 200 is success, 429 carries
//! `Retry-After`. A webhook's `caBundle`, `clientTLS`, `authorization` and
//! `basicAuth` are read the first time it is called (`auth.rs`).

use crate::config::{HookVersion, WebhookAuth};
use crate::hook::auth::{self, CredentialError};
use crate::observe::metrics::DriverMetrics;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use metahook_core::HookKind;
use metahook_core::registry;
use metahook_core::{Handler, HookError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::Instrument as _;

mod close_delimited;
pub mod etag;

use close_delimited::CloseDelimited;
use etag::EtagCache;

/// Where one hook is answered.
#[derive(Clone)]
pub enum Endpoint {
    InProcess(Handler),
    Http {
        url: String,
        timeout: Duration,
        /// Boxed: most webhooks have none.
        auth: Arc<WebhookAuth>,
        /// `etag` mode's answers, when it is enabled.
        etag: Option<Arc<EtagCache>>,
    },
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::InProcess(_) => f.write_str("in-process"),
            Endpoint::Http { url, timeout, .. } => write!(f, "{url} (timeout {timeout:?})"),
        }
    }
}

/// One configured hook: where, and which version of the protocol.
#[derive(Debug, Clone)]
pub struct HookTarget {
    pub kind: HookKind,
    pub version: HookVersion,
    /// Whether an unknown top-level key in the answer is an error:
    /// `responseUnMarshallMode`, else strict for v2 and loose for v1, as
    /// Metacontroller decodes (docs/metacontroller.md §1.1).
    pub strict: bool,
    pub endpoint: Endpoint,
    /// The revision of the hooks answering here, when known: an
    /// in-process hook's controller declares it
    /// (`metahook_core::Composite::revision`); over HTTP, none.
    pub revision: Option<Arc<str>>,
}

#[derive(Debug, thiserror::Error)]
pub enum HookCallError {
    #[error("the {hook} hook failed")]
    InProcess {
        hook: HookKind,
        #[source]
        source: HookError,
    },
    #[error("the {hook} hook panicked: {message}")]
    Panicked { hook: HookKind, message: String },
    #[error("calling {url} failed")]
    Http {
        url: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{url} did not answer within {timeout:?}")]
    Timeout { url: String, timeout: Duration },
    #[error("{url} answered {code}: {body}")]
    Status {
        url: String,
        code: u16,
        body: String,
    },
    /// 429: retry after this long, without an error event or backoff.
    #[error("{url} asked to retry after {retry_after:?} (429)")]
    TooManyRequests { url: String, retry_after: Duration },
    #[error("{0} is not a valid URL")]
    BadUrl(String),
    #[error("the credentials for {url} could not be read")]
    Credentials {
        url: String,
        #[source]
        source: CredentialError,
    },
}

/// Largest hook response read: far above any real one, but bounded.
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

type Https = CloseDelimited<hyper_rustls::HttpsConnector<HttpConnector>>;
type Http = HttpClient<Https, Full<Bytes>>;

/// A client for one webhook's TLS settings, and its `Authorization`.
#[derive(Clone)]
struct Connection {
    http: Http,
    authorization: Option<http::HeaderValue>,
}

/// Calls hooks; one per driver, cheap to clone.
#[derive(Clone)]
pub struct HookCaller {
    http: Option<Http>,
    clock: fn() -> jiff::Timestamp,
    metrics: Arc<DriverMetrics>,
    /// Reads the Secrets and ConfigMaps webhooks refer to.
    kube: Option<kube::Client>,
    /// Each webhook's settings, once read.
    connections: Arc<Mutex<HashMap<WebhookAuth, Connection>>>,
}

/// An HTTP(S) client with these TLS settings.
fn http_client(tls: rustls::ClientConfig) -> Http {
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build();
    HttpClient::builder(TokioExecutor::new()).build(CloseDelimited(https))
}

impl HookCaller {
    /// A caller for in-process hooks only.
    pub fn in_process(clock: fn() -> jiff::Timestamp, metrics: Arc<DriverMetrics>) -> Self {
        HookCaller {
            http: None,
            clock,
            metrics,
            kube: None,
            connections: Arc::default(),
        }
    }

    /// A caller that can also call hooks over HTTP(S) (system roots).
    pub fn with_http(
        clock: fn() -> jiff::Timestamp,
        metrics: Arc<DriverMetrics>,
    ) -> std::io::Result<Self> {
        let tls = auth::tls_config(None, None).map_err(std::io::Error::other)?;
        Ok(HookCaller {
            http: Some(http_client(tls)),
            clock,
            metrics,
            kube: None,
            connections: Arc::default(),
        })
    }

    /// The same caller, reading the Secrets and ConfigMaps that webhooks'
    /// `caBundle`, `clientTLS`, `authorization` and `basicAuth` name
    /// through `client`.
    pub fn reading_credentials_with(mut self, client: kube::Client) -> Self {
        self.kube = Some(client);
        self
    }

    /// The client and header for `auth`, read the first time.
    async fn connection(&self, auth: &WebhookAuth) -> Result<Connection, CredentialError> {
        if let Some(found) = self
            .connections
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(auth)
        {
            return Ok(found.clone());
        }
        // Two reconciles may read at once; both get the same answer.
        let resolved = auth::resolve(self.kube.as_ref(), auth).await?;
        let connection = Connection {
            http: match resolved.tls {
                Some(tls) => http_client(Arc::unwrap_or_clone(tls)),
                None => self.http.clone().ok_or(CredentialError::NoClient)?,
            },
            authorization: resolved.authorization,
        };
        self.connections
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(auth.clone(), connection.clone());
        Ok(connection)
    }

    /// Sends `request` to the hook and returns the 200 body.
    pub async fn call(
        &self,
        controller: &str,
        target: &HookTarget,
        request: Vec<u8>,
    ) -> Result<Vec<u8>, HookCallError> {
        let start = Instant::now();
        // A child of the reconcile's span: in a trace, the hook call (and,
        // through `traceparent`, the hook server's request below it).
        let span = tracing::info_span!(
            "hook call",
            controller = %controller,
            hook = target.kind.as_str(),
            otel.kind = "client",
        );
        let result = match &target.endpoint {
            Endpoint::InProcess(handler) => {
                self.in_process_call(target.kind, handler.clone(), request)
                    .instrument(span)
                    .await
            }
            Endpoint::Http {
                url,
                timeout,
                auth,
                etag,
            } => {
                self.http_call(url, *timeout, auth, etag.as_deref(), request)
                    .instrument(span)
                    .await
            }
        };
        let outcome = match &result {
            Ok(_) => "ok",
            Err(HookCallError::TooManyRequests { .. }) => "too_many_requests",
            Err(_) => "error",
        };
        self.metrics
            .hook_called(controller, target.kind.as_str(), outcome, start.elapsed());
        result
    }

    async fn in_process_call(
        &self,
        hook: HookKind,
        handler: Handler,
        request: Vec<u8>,
    ) -> Result<Vec<u8>, HookCallError> {
        let now = (self.clock)();
        // Off the async workers: decoding a large request takes milliseconds,
        // and the watchers share those threads. The hooks are pure, so a
        // panic leaves nothing half-changed: a failed reconcile, not a dead
        // driver.
        let joined =
            tokio::task::spawn_blocking(move || registry::call(&handler, &request, now)).await;
        match joined {
            Ok(Ok(Ok(body))) => Ok(body),
            Ok(Ok(Err(source))) => Err(HookCallError::InProcess { hook, source }),
            Ok(Err(registry::Panicked { message })) => {
                Err(HookCallError::Panicked { hook, message })
            }
            Err(join) => Err(HookCallError::Panicked {
                hook,
                message: join.to_string(),
            }),
        }
    }

    async fn http_call(
        &self,
        url: &str,
        timeout: Duration,
        auth: &WebhookAuth,
        etag: Option<&EtagCache>,
        request: Vec<u8>,
    ) -> Result<Vec<u8>, HookCallError> {
        // The answer kept for this root object, if etag mode keeps one.
        let root = etag.and_then(|_| etag::root_key(&request));
        let kept = etag
            .zip(root.as_ref())
            .and_then(|(cache, key)| cache.get(key));
        let http_err = |source: Box<dyn std::error::Error + Send + Sync>| HookCallError::Http {
            url: url.to_owned(),
            source,
        };
        let default = self
            .http
            .as_ref()
            .ok_or_else(|| http_err("this driver calls hooks in-process only".into()))?;
        let (client, authorization) = if auth.is_empty() {
            (default.clone(), None)
        } else {
            let connection =
                self.connection(auth)
                    .await
                    .map_err(|source| HookCallError::Credentials {
                        url: url.to_owned(),
                        source,
                    })?;
            (connection.http, connection.authorization)
        };
        let uri: http::Uri = url
            .parse()
            .map_err(|_| HookCallError::BadUrl(url.to_owned()))?;
        let mut req = http::Request::post(uri)
            // Exactly this string: some hook servers compare it literally.
            .header(http::header::CONTENT_TYPE, "application/json");
        if let Some(value) = authorization {
            req = req.header(http::header::AUTHORIZATION, value);
        }
        if let Some((tag, _)) = &kept {
            req = req.header(http::header::IF_NONE_MATCH, tag.as_str());
        }
        if let Some(headers) = req.headers_mut() {
            crate::observe::otel::inject(headers);
        }
        let req = req
            .body(Full::new(Bytes::from(request)))
            .map_err(|e| http_err(e.into()))?;
        // The timeout covers connect, send and reading the whole body
        // (docs/metacontroller.md §1.1).
        let exchange = async {
            let response = client.request(req).await.map_err(|e| http_err(e.into()))?;
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, MAX_RESPONSE_BYTES)
                .collect()
                .await
                .map_err(&http_err)?
                .to_bytes();
            Ok::<_, HookCallError>((parts, body))
        };
        let (parts, body) = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| HookCallError::Timeout {
                url: url.to_owned(),
                timeout,
            })??;
        match parts.status.as_u16() {
            200 => {
                let tag = parts
                    .headers
                    .get(http::header::ETAG)
                    .and_then(|v| v.to_str().ok());
                if let (Some(cache), Some(key), Some(tag)) = (etag, root, tag) {
                    cache.put(key, tag.to_owned(), body.clone());
                }
                Ok(body.to_vec())
            }
            // The same answer as last time, which it was asked about.
            304 | 412 if kept.is_some() => {
                Ok(kept.map(|(_, body)| body.to_vec()).unwrap_or_default())
            }
            429 => Err(HookCallError::TooManyRequests {
                url: url.to_owned(),
                retry_after: parts
                    .headers
                    .get(http::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .map(|v| parse_retry_after(v, jiff::Timestamp::now()))
                    .unwrap_or(Duration::ZERO),
            }),
            code => Err(HookCallError::Status {
                url: url.to_owned(),
                code,
                body: String::from_utf8_lossy(&body).chars().take(1024).collect(),
            }),
        }
    }
}

/// `Retry-After`: integer seconds or an HTTP date; anything else is zero,
/// as with Metacontroller.
pub fn parse_retry_after(value: &str, now: jiff::Timestamp) -> Duration {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Duration::from_secs(seconds);
    }
    // RFC 1123, e.g. "Sun, 22 Nov 2026 03:00:00 GMT".
    jiff::fmt::rfc2822::parse(value)
        .ok()
        .and_then(|zoned| {
            let wait = zoned.timestamp().duration_since(now);
            Duration::try_from(wait).ok()
        })
        .unwrap_or(Duration::ZERO)
}

#[cfg(test)]
pub(crate) mod tests;
