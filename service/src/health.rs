//! `/healthz` (the process answers) and `/readyz` (it is ready for traffic).

use super::AppState;
use actix_web::{HttpResponse, web};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz));
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
