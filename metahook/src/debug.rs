//! `GET /debug/driver` (caches and controllers) and `GET
//! /debug/driver/reconciles[?namespace=&controller=]` (the last reconcile
//! of every parent): what the bundled driver sees and did, as JSON. This
//! is cluster data with no authentication, so it is off unless
//! `--debug-driver-listen` names a loopback address, and then served there
//! alone: not on the hook port, where a peer's loopback address proves
//! nothing (a service-mesh sidecar forwards every request from loopback).
//! `kubectl port-forward` reaches a pod's loopback.

use actix_web::{App, HttpResponse, HttpServer, web};
use metahook_driver::observe::view::View;
use serde::Deserialize;
use std::net::SocketAddr;
use std::sync::Arc;

/// The routes, reading `view`.
pub fn configure(cfg: &mut web::ServiceConfig, view: Arc<View>) {
    cfg.app_data(web::Data::from(view))
        .route("/debug/driver", web::get().to(overview))
        .route("/debug/driver/reconciles", web::get().to(reconciles));
}

/// The server of these routes alone, on `listen` (one worker: one
/// person's questions); run it on an actix System.
pub fn server(
    view: Arc<View>,
    listen: SocketAddr,
) -> std::io::Result<(actix_web::dev::Server, SocketAddr)> {
    let server = HttpServer::new(move || {
        let view = view.clone();
        App::new().configure(move |cfg| configure(cfg, view))
    })
    .workers(1)
    .bind(listen)?;
    let addr = server.addrs().first().copied().unwrap_or(listen);
    // Signals are the caller's, as for the other servers.
    Ok((server.disable_signals().run(), addr))
}

/// `--debug-driver-listen`: an address whose IP is a loopback one.
pub fn loopback_addr(text: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = text.parse().map_err(|e| format!("{text:?}: {e}"))?;
    if addr.ip().is_loopback() {
        Ok(addr)
    } else {
        Err(format!(
            "{addr} is not a loopback address: /debug/driver is served on loopback only (127.0.0.1 or [::1]; reach it with kubectl port-forward)"
        ))
    }
}

#[derive(Debug, Deserialize)]
struct Filter {
    namespace: Option<String>,
    controller: Option<String>,
}

async fn overview(view: web::Data<View>) -> HttpResponse {
    HttpResponse::Ok().json(view.overview())
}

async fn reconciles(view: web::Data<View>, filter: web::Query<Filter>) -> HttpResponse {
    HttpResponse::Ok()
        .json(view.reconciles(filter.controller.as_deref(), filter.namespace.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test;

    #[actix_web::test]
    async fn the_driver_view_answers_on_its_own_listener() {
        let view = Arc::new(View::default());
        let app = test::init_service(App::new().configure(move |cfg| configure(cfg, view))).await;
        let body: serde_json::Value = test::call_and_read_body_json(
            &app,
            test::TestRequest::get().uri("/debug/driver").to_request(),
        )
        .await;
        assert_eq!(body["driving"], false, "{body}");
        let body: serde_json::Value = test::call_and_read_body_json(
            &app,
            test::TestRequest::get()
                .uri("/debug/driver/reconciles?namespace=shop")
                .to_request(),
        )
        .await;
        assert_eq!(body, serde_json::json!([]));
    }

    #[::core::prelude::v1::test]
    fn only_a_loopback_address_is_taken() {
        for good in ["127.0.0.1:9090", "[::1]:9090", "127.0.0.2:0"] {
            assert!(loopback_addr(good).is_ok(), "{good}");
        }
        for bad in [
            "0.0.0.0:9090",
            "10.1.2.3:9090",
            "[::]:9090",
            "localhost:9090",
        ] {
            assert!(loopback_addr(bad).is_err(), "{bad}");
        }
        assert!(
            loopback_addr("0.0.0.0:1")
                .unwrap_err()
                .contains("loopback only")
        );
    }
}
