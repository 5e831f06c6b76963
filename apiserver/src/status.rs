//! Failures as Kubernetes `Status` objects (`kind: Status`, `status:
//! Failure`, a reason and a code), which kubectl prints as the API server's
//! own: `Error from server (Forbidden): ...`.

use crate::{GROUP, RESOURCE};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;

/// What went wrong with a request, by what the client is told.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("Unauthorized: {0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("reconciles.{group} \"{name}\" not found", group = GROUP)]
    NotFound { name: String },
    #[error("the server could not find the requested resource")]
    NoSuchPath,
    #[error("{0}")]
    BadRequest(String),
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    #[error("only application/json and meta.k8s.io Tables are served; asked for {0}")]
    NotAcceptable(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    fn reason(&self) -> &'static str {
        match self {
            ApiError::Unauthorized(_) => "Unauthorized",
            ApiError::Forbidden(_) => "Forbidden",
            ApiError::NotFound { .. } | ApiError::NoSuchPath => "NotFound",
            ApiError::BadRequest(_) => "BadRequest",
            ApiError::MethodNotAllowed => "MethodNotAllowed",
            ApiError::NotAcceptable(_) => "NotAcceptable",
            ApiError::Unavailable(_) => "ServiceUnavailable",
            ApiError::Internal(_) => "InternalError",
        }
    }

    /// The Status object.
    pub fn status(&self) -> serde_json::Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "code": self.status_code().as_u16(),
        });
        if let ApiError::NotFound { name } = self {
            status["details"] = json!({"name": name, "group": GROUP, "kind": RESOURCE});
        }
        status
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound { .. } | ApiError::NoSuchPath => StatusCode::NOT_FOUND,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status_code()).json(self.status())
    }
}
