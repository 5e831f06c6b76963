//! Every error the service answers with: a status code and a JSON body
//! (`status`, `reason`, `message`, and where it helps `line`, `column`,
//! `path`) that says what to fix.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use metahook_core::DecodeError;
use metahook_core::registry::LookupError;
use serde::Serialize;

/// What went wrong with a request to the hook service (a hook call, or
/// `/metrics`, or a path that is neither), by what the client is told.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("no route for {method} {path}; hooks are POST /{{controller}}/{{hook}}")]
    NoRoute { method: String, path: String },
    #[error(transparent)]
    Lookup(LookupError),
    #[error("{method} is not allowed here; hooks take POST")]
    MethodNotAllowed { method: String },
    #[error("the body must be JSON (Content-Type: application/json), got {got:?}")]
    UnsupportedMediaType { got: String },
    #[error(
        "the body is larger than {limit} bytes (see --max-body-bytes and --max-buffered-bytes)"
    )]
    TooLarge { limit: usize },
    #[error("the body did not arrive within {seconds}s")]
    BodyTimeout { seconds: u64 },
    #[error("reading the body failed: {0}")]
    BodyRead(String),
    #[error("too many requests in flight; retry after a second")]
    Overloaded,
    #[error(
        "the request bodies being held would take more than {budget} bytes of memory (see --max-buffered-bytes); retry after a second"
    )]
    MemoryBudgetExceeded { budget: usize },
    #[error(transparent)]
    Decode(DecodeError),
    #[error("encoding the response failed: {0}")]
    Encode(String),
    #[error("the {controller} {hook} hook panicked: {message}")]
    HookPanicked {
        controller: &'static str,
        hook: &'static str,
        message: String,
    },
    /// The hook returned an error instead of an answer.
    #[error("the {controller} {hook} hook failed: {message}")]
    HookFailed {
        controller: &'static str,
        hook: &'static str,
        message: String,
    },
    #[error("encoding the metrics failed")]
    Metrics,
    #[error("this route needs a client certificate signed by the hook service's client CA")]
    ClientCertificateRequired,
    #[error("this route needs `Authorization: Bearer <token>` with the hook service's token")]
    TokenRequired,
}

/// The JSON body of every error.
#[derive(Debug, Serialize)]
struct Body<'a> {
    status: u16,
    reason: &'static str,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    column: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
}

impl RequestError {
    /// A short, stable name for the kind of error.
    pub fn reason(&self) -> &'static str {
        match self {
            RequestError::NoRoute { .. } => "NotFound",
            RequestError::Lookup(LookupError::UnknownController { .. }) => "UnknownController",
            RequestError::Lookup(LookupError::UnknownHook { .. }) => "UnknownHook",
            RequestError::MethodNotAllowed { .. } => "MethodNotAllowed",
            RequestError::UnsupportedMediaType { .. } => "UnsupportedMediaType",
            RequestError::TooLarge { .. } => "PayloadTooLarge",
            RequestError::BodyTimeout { .. } => "RequestTimeout",
            RequestError::BodyRead(_) => "BadBody",
            RequestError::Overloaded => "Overloaded",
            RequestError::MemoryBudgetExceeded { .. } => "MemoryBudgetExceeded",
            RequestError::Decode(DecodeError::Syntax { .. }) => "MalformedJson",
            RequestError::Decode(DecodeError::Shape { .. }) => "InvalidRequest",
            RequestError::Encode(_) => "EncodeFailed",
            RequestError::HookPanicked { .. } => "HookPanicked",
            RequestError::HookFailed { .. } => "HookFailed",
            RequestError::Metrics => "MetricsFailed",
            RequestError::ClientCertificateRequired | RequestError::TokenRequired => "Unauthorized",
        }
    }

    /// For a request the service refused to protect itself (a bound on
    /// requests, bytes or time) rather than for what it said: its reason.
    pub fn refusal(&self) -> Option<&'static str> {
        match self {
            RequestError::Overloaded
            | RequestError::MemoryBudgetExceeded { .. }
            | RequestError::TooLarge { .. }
            | RequestError::BodyTimeout { .. } => Some(self.reason()),
            _ => None,
        }
    }
}

impl ResponseError for RequestError {
    fn status_code(&self) -> StatusCode {
        match self {
            RequestError::NoRoute { .. } | RequestError::Lookup(_) => StatusCode::NOT_FOUND,
            RequestError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            RequestError::UnsupportedMediaType { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            RequestError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            RequestError::BodyTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            RequestError::BodyRead(_) | RequestError::Decode(DecodeError::Syntax { .. }) => {
                StatusCode::BAD_REQUEST
            }
            RequestError::Decode(DecodeError::Shape { .. }) => StatusCode::UNPROCESSABLE_ENTITY,
            // 429 rather than 503: both are "come back later", but on 429
            // Metacontroller requeues after Retry-After with no warning event
            // and no backoff (docs/metacontroller.md §1.1), and so does the
            // bundled driver; a 503 would be an error event and exponential
            // backoff on the parent for a condition that lasts as long as a
            // body read.
            RequestError::Overloaded | RequestError::MemoryBudgetExceeded { .. } => {
                StatusCode::TOO_MANY_REQUESTS
            }
            RequestError::ClientCertificateRequired | RequestError::TokenRequired => {
                StatusCode::UNAUTHORIZED
            }
            RequestError::Encode(_)
            | RequestError::HookPanicked { .. }
            | RequestError::HookFailed { .. }
            | RequestError::Metrics => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let status = self.status_code();
        let (line, column, path) = match self {
            RequestError::Decode(DecodeError::Syntax { line, column, .. }) => {
                (Some(*line), Some(*column), None)
            }
            RequestError::Decode(DecodeError::Shape { path, .. }) => {
                (None, None, Some(path.as_str()))
            }
            _ => (None, None, None),
        };
        let mut response = HttpResponse::build(status);
        match self {
            RequestError::Overloaded | RequestError::MemoryBudgetExceeded { .. } => {
                response.insert_header((header::RETRY_AFTER, "1"));
            }
            RequestError::MethodNotAllowed { .. } => {
                response.insert_header((header::ALLOW, "POST"));
            }
            RequestError::TokenRequired => {
                response.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
            }
            _ => {}
        }
        response.json(Body {
            status: status.as_u16(),
            reason: self.reason(),
            message: self.to_string(),
            line,
            column,
            path,
        })
    }
}

/// The default service: anything no route matched.
pub async fn not_found(req: HttpRequest) -> HttpResponse {
    RequestError::NoRoute {
        method: req.method().to_string(),
        path: req.path().to_owned(),
    }
    .error_response()
}

/// A hook path with a method other than POST.
pub async fn method_not_allowed(req: HttpRequest) -> HttpResponse {
    RequestError::MethodNotAllowed {
        method: req.method().to_string(),
    }
    .error_response()
}
