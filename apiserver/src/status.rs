//! Failures as Kubernetes `Status` objects (`kind: Status`, `status:
//! Failure`, a reason and a code), which kubectl prints as the API server's
//! own: `Error from server (Forbidden): ...`. The object is kube-core's
//! `Status` and its reasons; kube-core leaves `apiVersion` and `kind` out
//! of it (a client reads them from the answer), so [`Body`] adds them.

use crate::resource::{GROUP, RESOURCE};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use kube::core::response::{StatusDetails, reason};
use kube::core::{ListMeta, Status, TypeMeta};
use serde::Serialize;

/// What went wrong with a request, by the Kubernetes `Status` the client
/// is answered with.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
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

impl StatusError {
    fn reason(&self) -> &'static str {
        match self {
            StatusError::Unauthorized(_) => reason::UNAUTHORIZED,
            StatusError::Forbidden(_) => reason::FORBIDDEN,
            StatusError::NotFound { .. } | StatusError::NoSuchPath => reason::NOT_FOUND,
            StatusError::BadRequest(_) => reason::BAD_REQUEST,
            StatusError::MethodNotAllowed => reason::METHOD_NOT_ALLOWED,
            StatusError::NotAcceptable(_) => reason::NOT_ACCEPTABLE,
            StatusError::Unavailable(_) => reason::SERVICE_UNAVAILABLE,
            StatusError::Internal(_) => reason::INTERNAL_ERROR,
        }
    }

    /// kube-core's `Status`, which leaves the type fields to its user.
    fn status(&self) -> Status {
        let status = Status::failure(&self.to_string(), self.reason())
            .with_code(self.status_code().as_u16());
        let status = Status {
            // `{}`, as kube-apiserver sends it.
            metadata: Some(ListMeta::default()),
            ..status
        };
        match self {
            StatusError::NotFound { name } => status.with_details(StatusDetails {
                name: name.clone(),
                group: GROUP.to_owned(),
                kind: RESOURCE.to_owned(),
                uid: String::new(),
                causes: Vec::new(),
                retry_after_seconds: 0,
            }),
            _ => status,
        }
    }

    /// What is sent: the `Status` with `apiVersion: v1` and `kind: Status`.
    pub fn body(&self) -> Body {
        Body {
            types: TypeMeta {
                api_version: "v1".to_owned(),
                kind: "Status".to_owned(),
            },
            status: self.status(),
        }
    }
}

/// A `Status` as sent on the wire, its type fields beside its own.
#[derive(Debug, Serialize)]
pub struct Body {
    #[serde(flatten)]
    pub types: TypeMeta,
    #[serde(flatten)]
    pub status: Status,
}

impl ResponseError for StatusError {
    fn status_code(&self) -> StatusCode {
        match self {
            StatusError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            StatusError::Forbidden(_) => StatusCode::FORBIDDEN,
            StatusError::NotFound { .. } | StatusError::NoSuchPath => StatusCode::NOT_FOUND,
            StatusError::BadRequest(_) => StatusCode::BAD_REQUEST,
            StatusError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            StatusError::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            StatusError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            StatusError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status_code()).json(self.body())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The fields kube-apiserver sends and kubectl reads, and no others.
    #[test]
    fn a_status_is_sent_as_kube_apiserver_sends_it() {
        let not_found = StatusError::NotFound {
            name: "hello.web".to_owned(),
        };
        assert_eq!(
            serde_json::to_value(not_found.body()).unwrap(),
            json!({
                "apiVersion": "v1",
                "kind": "Status",
                "metadata": {},
                "status": "Failure",
                "message": "reconciles.driver.metahook.dev \"hello.web\" not found",
                "reason": "NotFound",
                "code": 404,
                "details": {"name": "hello.web", "group": "driver.metahook.dev", "kind": "reconciles"},
            })
        );
        assert_eq!(
            serde_json::to_value(StatusError::MethodNotAllowed.body()).unwrap(),
            json!({
                "apiVersion": "v1",
                "kind": "Status",
                "metadata": {},
                "status": "Failure",
                "message": "the server does not allow this method on the requested resource",
                "reason": "MethodNotAllowed",
                "code": 405,
            })
        );
    }
}
