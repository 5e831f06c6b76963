//! What the kubelet and Prometheus ask: `/healthz` (the process answers),
//! `/readyz` (it is ready for traffic) and `/metrics`.

use crate::errors::RequestError;
use crate::state::AppState;
use actix_web::{HttpResponse, web};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz))
        .route("/metrics", web::get().to(metrics));
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    if state.is_ready() {
        HttpResponse::Ok().json(serde_json::json!({"status": "ready"}))
    } else {
        HttpResponse::ServiceUnavailable().json(serde_json::json!({"status": "starting"}))
    }
}

async fn metrics(state: web::Data<AppState>) -> Result<HttpResponse, RequestError> {
    let text = state.metrics.encode().map_err(|_| RequestError::Metrics)?;
    Ok(HttpResponse::Ok()
        .content_type("application/openmetrics-text; version=1.0.0; charset=utf-8")
        .body(text))
}
