//! The routes, and the app every worker serves: the routes behind the
//! callers' check and the request log.

use crate::request_span::RequestSpan;
use crate::state::AppState;
use crate::{auth, errors, hooks, probes};
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::{App, web};
use std::sync::Arc;
use tracing_actix_web::TracingLogger;

/// Routes, for the real server and for in-process tests alike.
pub fn configure(cfg: &mut web::ServiceConfig, state: web::Data<AppState>) {
    let controllers = state.controllers;
    // The process's own routes first: the hooks' `/{controller}/{hook}`
    // would otherwise answer any two-segment path.
    if let Some(routes) = state.routes.clone() {
        routes(cfg);
    }
    cfg.app_data(state)
        .configure(probes::configure)
        .configure(|cfg| hooks::configure(cfg, controllers))
        .default_service(web::to(errors::not_found));
}

/// The app every worker serves: the routes, behind the callers' check
/// and, outermost, the request log (refused requests are logged too).
pub(crate) fn app(
    state: web::Data<AppState>,
    callers: Arc<auth::Callers>,
) -> App<
    impl actix_web::dev::ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .wrap(actix_web::middleware::from_fn(move |request, next| {
            auth::require(callers.clone(), request, next)
        }))
        .wrap(TracingLogger::<RequestSpan>::new())
        .configure(move |cfg| configure(cfg, state))
}
