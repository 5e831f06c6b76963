//! `POST /{controller}/{hook}`: look the hook up in the controller table,
//! admit the request, read the body, run the hook at the current time.

use super::AppState;
use super::body;
use super::errors::{self, RequestError};
use actix_web::http::header::ContentType;
use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use metahook_core::registry::{self, Panicked};
use metahook_core::{Controller, HookKind};
use metahook_core::{Handler, HookError};
use std::time::Instant;

pub fn configure(cfg: &mut web::ServiceConfig, controllers: &'static [Controller]) {
    // One static route per hook in the table: actix matches a static path by
    // comparing strings, a `{segment}` pattern with a regex (run twice per
    // request, once more for the request span's route); docs/performance.md
    // has the cost.
    for controller in controllers {
        for kind in controller.hook_kinds() {
            let Some(handler) = controller.hook(kind) else {
                continue;
            };
            cfg.service(
                web::resource(format!("/{}/{kind}", controller.name()))
                    .route(web::post().to(
                        move |req: HttpRequest,
                              payload: web::Payload,
                              state: web::Data<AppState>| {
                            respond(req, payload, state, Ok((controller, kind, handler.clone())))
                        },
                    ))
                    .default_service(web::to(errors::method_not_allowed)),
            );
        }
    }
    // Any other two-segment path: 404 naming what exists (405 if not POST).
    cfg.service(
        web::resource("/{controller}/{hook}")
            .route(web::post().to(hook))
            .default_service(web::to(errors::method_not_allowed)),
    );
}

/// A path no static route matched: find out why, for the error.
async fn hook(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    let (controller, hook) = path.into_inner();
    let found =
        registry::lookup(state.controllers, &controller, &hook).map_err(RequestError::Lookup);
    respond(req, payload, state, found).await
}

/// Runs the request and records it in the metrics, whatever the outcome.
async fn respond(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
    found: Result<(&'static Controller, HookKind, Handler), RequestError>,
) -> HttpResponse {
    let start = Instant::now();
    let (controller_label, hook_label) = match &found {
        Ok((c, kind, _)) => (c.name(), kind.as_str()),
        Err(_) => ("unknown", "unknown"),
    };
    let response = match found {
        Ok((c, kind, handler)) => answer(&req, payload, &state, c, kind, handler).await,
        Err(err) => Err(err),
    }
    .unwrap_or_else(|err| {
        if let Some(reason) = err.refusal() {
            state.metrics.refused(reason);
        }
        err.error_response()
    });
    state.metrics.observe(
        controller_label,
        hook_label,
        response.status().as_u16(),
        start.elapsed(),
    );
    response
}

async fn answer(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
    controller: &'static Controller,
    kind: HookKind,
    handler: Handler,
) -> Result<HttpResponse, RequestError> {
    let _permit = state
        .in_flight
        .try_acquire()
        .ok_or(RequestError::Overloaded)?;
    body::require_json(req)?;
    // Held, and counted against the memory budget, until the hook has
    // answered: decoding takes memory in proportion to the body too.
    let request = body::read(
        req,
        payload,
        state.max_body_bytes,
        state.request_timeout,
        &state.budget,
    )
    .await?;
    let now = (state.clock)();
    // A panic is answered 500, and the service keeps serving.
    let outcome = registry::call(&handler, &request.bytes, now).map_err(|Panicked { message }| {
        tracing::error!(controller = controller.name(), hook = kind.as_str(), %message, "hook panicked");
        RequestError::HookPanicked {
            controller: controller.name(),
            hook: kind.as_str(),
            message,
        }
    })?;
    match outcome {
        Ok(body) => Ok(HttpResponse::Ok()
            .insert_header(ContentType::json())
            .body(body)),
        Err(HookError::Decode(err)) => Err(RequestError::Decode(err)),
        Err(HookError::Encode(err)) => Err(RequestError::Encode(err.to_string())),
        Err(HookError::Failed { message }) => {
            tracing::warn!(controller = controller.name(), hook = kind.as_str(), %message, "hook failed");
            Err(RequestError::HookFailed {
                controller: controller.name(),
                hook: kind.as_str(),
                message,
            })
        }
    }
}
