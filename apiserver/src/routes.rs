//! The routes of the aggregated API. Health needs nothing; everything else
//! needs the front proxy's certificate (401 without); discovery and
//! OpenAPI are then answered to any authenticated user, as Kubernetes'
//! default RBAC (`system:discovery`) grants them to every one and so that
//! the aggregator's 5-second availability check never waits on a review;
//! reconciles need a SubjectAccessReview's yes (403 otherwise).

use crate::authorize::{Attributes, Decision};
use crate::front_proxy::User;
use crate::negotiate::{self, Format};
use crate::object::{Reconcile, ReconcileList};
use crate::resource::{GROUP, GROUP_VERSION, RESOURCE};
use crate::state::State;
use crate::status::StatusError;
use crate::table::{self, IncludeObject};
use crate::{discovery, names, openapi, selectors};
use actix_web::http::header::{ACCEPT, CONTENT_TYPE};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::{Value, json};

pub fn configure(cfg: &mut web::ServiceConfig, state: web::Data<State>) {
    let resources = format!("/apis/{GROUP_VERSION}");
    cfg.app_data(state)
        .route("/healthz", web::get().to(healthz))
        .route("/livez", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz))
        .service(get_only("/apis", apis))
        .service(get_only(&format!("/apis/{GROUP}"), group))
        .service(get_only(&resources, resource_list))
        .service(get_only("/openapi/v2", openapi_v2))
        .service(get_only("/openapi/v3", openapi_v3))
        .service(get_only(
            &format!("/openapi/v3/{}", openapi::v3_group_path()),
            openapi_v3_group,
        ))
        .service(get_only(&format!("{resources}/{RESOURCE}"), list))
        .service(get_only(
            &format!("{resources}/namespaces/{{namespace}}/{RESOURCE}"),
            list,
        ))
        .service(get_only(
            &format!("{resources}/namespaces/{{namespace}}/{RESOURCE}/{{name}}"),
            get,
        ))
        .default_service(web::to(unknown_path));
}

/// A path answered to GET, 405 to anything else (once authenticated).
fn get_only<F, Args>(path: &str, handler: F) -> actix_web::Resource
where
    F: actix_web::Handler<Args>,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    web::resource(path)
        .route(web::get().to(handler))
        .default_service(web::to(method_not_allowed))
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("ok")
}

/// Ready while this replica drives: only the Lease holder has records.
async fn readyz(state: web::Data<State>) -> HttpResponse {
    if state.records.driving() {
        HttpResponse::Ok().content_type("text/plain").body("ok")
    } else {
        HttpResponse::ServiceUnavailable()
            .content_type("text/plain")
            .body("not driving: another replica holds the Lease, or the driver is starting")
    }
}

fn authenticate(request: &HttpRequest, state: &State) -> Result<User, StatusError> {
    state.authenticator.user(request).map_err(|reason| {
        tracing::debug!(%reason, path = request.path(), "unauthenticated request");
        StatusError::Unauthorized(reason)
    })
}

fn accept(request: &HttpRequest) -> Option<&str> {
    request.headers().get(ACCEPT).and_then(|v| v.to_str().ok())
}

/// A discovery or OpenAPI document: JSON only (406 for anything else, so
/// the aggregator falls back from aggregated discovery).
fn document(
    request: &HttpRequest,
    state: &State,
    body: Value,
) -> Result<HttpResponse, StatusError> {
    authenticate(request, state)?;
    json_only(request)?;
    Ok(HttpResponse::Ok().json(body))
}

/// The representation asked for, or 406.
fn wanted(request: &HttpRequest) -> Result<Format, StatusError> {
    negotiate::format(accept(request))
        .ok_or_else(|| StatusError::NotAcceptable(accept(request).unwrap_or_default().to_owned()))
}

fn json_only(request: &HttpRequest) -> Result<(), StatusError> {
    match wanted(request)? {
        Format::Json => Ok(()),
        _ => Err(StatusError::NotAcceptable(
            accept(request).unwrap_or_default().to_owned(),
        )),
    }
}

async fn apis(request: HttpRequest, state: web::Data<State>) -> Result<HttpResponse, StatusError> {
    document(&request, &state, discovery::groups())
}

async fn group(request: HttpRequest, state: web::Data<State>) -> Result<HttpResponse, StatusError> {
    document(&request, &state, discovery::group())
}

async fn resource_list(
    request: HttpRequest,
    state: web::Data<State>,
) -> Result<HttpResponse, StatusError> {
    document(&request, &state, discovery::resources())
}

fn raw_json(
    request: &HttpRequest,
    state: &State,
    body: &[u8],
) -> Result<HttpResponse, StatusError> {
    authenticate(request, state)?;
    json_only(request)?;
    Ok(HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "application/json"))
        .body(body.to_vec()))
}

async fn openapi_v2(
    request: HttpRequest,
    state: web::Data<State>,
) -> Result<HttpResponse, StatusError> {
    raw_json(&request, &state, &openapi::documents().v2)
}

async fn openapi_v3(
    request: HttpRequest,
    state: web::Data<State>,
) -> Result<HttpResponse, StatusError> {
    raw_json(&request, &state, &openapi::documents().v3_root)
}

async fn openapi_v3_group(
    request: HttpRequest,
    state: web::Data<State>,
) -> Result<HttpResponse, StatusError> {
    raw_json(&request, &state, &openapi::documents().v3_group)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    label_selector: Option<String>,
    field_selector: Option<String>,
    include_object: Option<String>,
    watch: Option<String>,
}

/// `user` authorised, and this replica drives.
async fn allowed(user: &User, state: &State, attributes: Attributes) -> Result<(), StatusError> {
    let decision = state
        .authorizer
        .decide(user, attributes.clone())
        .await
        .map_err(|e| {
            StatusError::Internal(format!(
                "authorization failed: {}",
                metahook_driver::api_error_chain(&e)
            ))
        })?;
    if let Decision::Deny(reason) = decision {
        let subject = if attributes.name.is_empty() {
            format!("{RESOURCE}.{GROUP}")
        } else {
            format!("{RESOURCE}.{GROUP} {:?}", attributes.name)
        };
        let scope = if attributes.namespace.is_empty() {
            "at the cluster scope".to_owned()
        } else {
            format!("in the namespace {:?}", attributes.namespace)
        };
        let reason = if reason.is_empty() {
            String::new()
        } else {
            format!(": {reason}")
        };
        return Err(StatusError::Forbidden(format!(
            "{subject} is forbidden: User {:?} cannot {} resource {RESOURCE:?} in API group {GROUP:?} {scope}{reason}",
            user.name, attributes.verb
        )));
    }
    if !state.records.driving() {
        return Err(StatusError::Unavailable(
            "this replica does not drive: the replica holding the Lease serves reconciles"
                .to_owned(),
        ));
    }
    Ok(())
}

async fn list(
    request: HttpRequest,
    state: web::Data<State>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, StatusError> {
    let namespace = request.match_info().get("namespace").map(str::to_owned);
    let user = authenticate(&request, &state)?;
    // Bad or oversized selectors are refused before they cost a review.
    let labels = selectors::labels(query.label_selector.as_deref().unwrap_or_default())
        .map_err(StatusError::BadRequest)?;
    let fields = selectors::fields(query.field_selector.as_deref().unwrap_or_default())
        .map_err(StatusError::BadRequest)?;
    // A list in a namespace that cannot exist is empty, as
    // kube-apiserver's; no review is asked (nor cached) for its name.
    let impossible = namespace
        .as_deref()
        .is_some_and(|ns| !names::is_namespace(ns));
    if !impossible {
        allowed(
            &user,
            &state,
            Attributes {
                verb: "list",
                namespace: namespace.clone().unwrap_or_default(),
                name: String::new(),
            },
        )
        .await?;
    }
    if query
        .watch
        .as_deref()
        .is_some_and(|w| w == "true" || w == "1")
    {
        return Err(StatusError::MethodNotAllowed);
    }
    let format = wanted(&request)?;
    let include =
        IncludeObject::parse(query.include_object.as_deref()).map_err(StatusError::BadRequest)?;
    let records = if impossible {
        Vec::new()
    } else {
        state.records.reconciles(None, namespace.as_deref())
    };
    let mut objects: Vec<Reconcile> = records
        .into_iter()
        .filter_map(Reconcile::of)
        .filter(|o| selectors::matches(o, &labels, &fields))
        .collect();
    objects
        .sort_by(|a, b| (&a.metadata.namespace, a.name()).cmp(&(&b.metadata.namespace, b.name())));
    Ok(match format {
        Format::Json => HttpResponse::Ok().json(ReconcileList::new(objects)),
        Format::Table(version) => {
            HttpResponse::Ok().json(table::table(&objects, version, include, jiff::Timestamp::now()))
        }
        Format::Metadata(version) => HttpResponse::Ok().json(json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": format!("meta.k8s.io/{version}"),
            "metadata": {},
            "items": objects.iter().map(|o| table::partial_metadata(o, version)).collect::<Vec<_>>(),
        })),
    })
}

async fn get(
    request: HttpRequest,
    state: web::Data<State>,
    path: web::Path<(String, String)>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, StatusError> {
    let (namespace, name) = path.into_inner();
    let user = authenticate(&request, &state)?;
    // A name that cannot exist is not found, as kube-apiserver answers; no
    // review is asked (nor cached) for it.
    if !names::is_namespace(&namespace) || !names::is_reconcile_name(&name) {
        return Err(StatusError::NotFound {
            name: names::shown(&name),
        });
    }
    allowed(
        &user,
        &state,
        Attributes {
            verb: "get",
            namespace: namespace.clone(),
            name: name.clone(),
        },
    )
    .await?;
    let format = wanted(&request)?;
    let include =
        IncludeObject::parse(query.include_object.as_deref()).map_err(StatusError::BadRequest)?;
    let controller = name.split_once('.').map(|(c, _)| c);
    let object = controller
        .and_then(|c| {
            state
                .records
                .reconciles(Some(c), Some(&namespace))
                .into_iter()
                .filter_map(Reconcile::of)
                .find(|o| o.name() == name)
        })
        .ok_or(StatusError::NotFound { name })?;
    Ok(match format {
        Format::Json => HttpResponse::Ok().json(object),
        Format::Table(version) => HttpResponse::Ok().json(table::table(
            std::slice::from_ref(&object),
            version,
            include,
            jiff::Timestamp::now(),
        )),
        Format::Metadata(version) => {
            HttpResponse::Ok().json(table::partial_metadata(&object, version))
        }
    })
}

async fn method_not_allowed(
    request: HttpRequest,
    state: web::Data<State>,
) -> Result<HttpResponse, StatusError> {
    authenticate(&request, &state)?;
    Err(StatusError::MethodNotAllowed)
}

async fn unknown_path(
    request: HttpRequest,
    state: web::Data<State>,
) -> Result<HttpResponse, StatusError> {
    authenticate(&request, &state)?;
    Err(StatusError::NoSuchPath)
}

#[cfg(test)]
mod tests;
