//! `GET /debug/driver` (caches and controllers) and `GET
//! /debug/driver/reconciles[?namespace=&controller=]` (the last reconcile
//! of every parent): what the bundled driver sees and did, as JSON. This
//! is cluster data, and the hook port is open to Metacontroller and
//! Prometheus, so it is answered only to loopback peers (`kubectl
//! port-forward` arrives there): 403 for anyone else.

use actix_web::{HttpRequest, HttpResponse, web};
use metahook_driver::view::View;
use metahook_service::Routes;
use serde::Deserialize;
use std::sync::Arc;

/// The routes, reading `view`.
pub fn routes(view: Arc<View>) -> Routes {
    Arc::new(move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(web::Data::from(Arc::clone(&view)))
            .route("/debug/driver", web::get().to(overview))
            .route("/debug/driver/reconciles", web::get().to(reconciles));
    })
}

#[derive(Debug, Deserialize)]
struct Filter {
    namespace: Option<String>,
    controller: Option<String>,
}

async fn overview(request: HttpRequest, view: web::Data<View>) -> HttpResponse {
    if !from_loopback(&request) {
        return forbidden();
    }
    HttpResponse::Ok().json(view.overview())
}

async fn reconciles(
    request: HttpRequest,
    view: web::Data<View>,
    filter: web::Query<Filter>,
) -> HttpResponse {
    if !from_loopback(&request) {
        return forbidden();
    }
    HttpResponse::Ok()
        .json(view.reconciles(filter.controller.as_deref(), filter.namespace.as_deref()))
}

fn from_loopback(request: &HttpRequest) -> bool {
    request.peer_addr().is_some_and(|a| a.ip().is_loopback())
}

fn forbidden() -> HttpResponse {
    HttpResponse::Forbidden().json(serde_json::json!({
        "status": 403,
        "reason": "Forbidden",
        "message": "/debug/driver is answered on loopback only (kubectl port-forward)"
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::{App, test};

    #[actix_web::test]
    async fn the_driver_view_is_answered_on_loopback_only() {
        // Inside the whole service, where the hooks' routes are too.
        let view = Arc::new(View::default());
        let settings = metahook_service::Settings::new("127.0.0.1:0".parse().unwrap());
        let state = web::Data::new(
            metahook_service::AppState::with_metrics(
                metahook_hooks::CONTROLLERS,
                &settings,
                metahook_service::Metrics::new(),
            )
            .with_routes(routes(view)),
        );
        let app = test::init_service(
            App::new().configure(move |cfg| metahook_service::configure(cfg, state)),
        )
        .await;
        for path in ["/debug/driver", "/debug/driver/reconciles?namespace=shop"] {
            let remote = test::TestRequest::get()
                .uri(path)
                .peer_addr("10.1.2.3:4000".parse().unwrap())
                .to_request();
            assert_eq!(
                test::call_service(&app, remote).await.status(),
                403,
                "{path}"
            );
        }
        let local = test::TestRequest::get()
            .uri("/debug/driver")
            .peer_addr("127.0.0.1:4000".parse().unwrap())
            .to_request();
        let body: serde_json::Value = test::call_and_read_body_json(&app, local).await;
        assert_eq!(body["driving"], false, "{body}");
        let local = test::TestRequest::get()
            .uri("/debug/driver/reconciles")
            .peer_addr("[::1]:4000".parse().unwrap())
            .to_request();
        let body: serde_json::Value = test::call_and_read_body_json(&app, local).await;
        assert_eq!(body, serde_json::json!([]));
    }
}
