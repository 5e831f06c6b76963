//! Who may call the hooks: with `--tls-client-auth`, only a client whose
//! certificate the client CA verified; with `--auth-token-file`, only one
//! sending the token (both, when both are set). `/healthz`, `/readyz` and
//! `/metrics` stay open to the kubelet and Prometheus, which present
//! neither; so do the hooks the API server calls (`/{controller}/validate`,
//! `/{controller}/default`, `/{controller}/convert`): kube-apiserver calls them and presents no
//! client certificate or token unless its own admission configuration
//! gives it one, and they are pure functions of the request that write
//! nothing, so answering whoever reaches the port costs what `/metrics`
//! does. Every other route (the Metacontroller hooks, the process's own
//! routes, unknown paths) is refused with 401 before it runs.

use crate::errors::RequestError;
use crate::token::TokenFile;
use actix_web::ResponseError;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use metahook_core::Controller;
use metahook_tls::PeerCerts;
use std::collections::HashSet;
use std::sync::Arc;

/// Paths anyone who reaches the port may ask.
const OPEN: &[&str] = &["/healthz", "/readyz", "/metrics"];

/// What a caller must present.
#[derive(Debug, Clone, Default)]
pub struct Callers {
    pub client_cert: bool,
    pub token: Option<Arc<TokenFile>>,
    /// The paths of the hooks the API server calls (admission, conversion).
    pub admission: HashSet<String>,
}

impl Callers {
    /// What callers of `controllers`' hooks must present: a client
    /// certificate (`client_cert`), the token, or nothing for the hooks
    /// the API server calls.
    pub fn of(
        controllers: &[Controller],
        client_cert: bool,
        token: Option<Arc<TokenFile>>,
    ) -> Self {
        let admission = controllers
            .iter()
            .flat_map(|c| {
                c.hook_kinds()
                    .filter(|k| k.called_by_api_server())
                    .map(move |k| format!("/{}/{k}", c.name()))
            })
            .collect();
        Callers {
            client_cert,
            token,
            admission,
        }
    }

    /// Why `request` may not call, or `None` when it may.
    fn refusal(&self, request: &ServiceRequest) -> Option<RequestError> {
        if OPEN.contains(&request.path()) || self.admission.contains(request.path()) {
            return None;
        }
        if self.client_cert && request.conn_data::<PeerCerts>().is_none() {
            return Some(RequestError::ClientCertificateRequired);
        }
        if let Some(token) = &self.token {
            let header = request
                .headers()
                .get(actix_web::http::header::AUTHORIZATION)
                .map(|v| v.as_bytes());
            if !token.admits(header) {
                return Some(RequestError::TokenRequired);
            }
        }
        None
    }
}

/// The middleware (`actix_web::middleware::from_fn`).
pub async fn require(
    callers: Arc<Callers>,
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    if let Some(refusal) = callers.refusal(&request) {
        tracing::debug!(path = request.path(), reason = %refusal, "caller refused");
        return Ok(request.into_response(refusal.error_response()));
    }
    Ok(next.call(request).await?.map_into_boxed_body())
}
