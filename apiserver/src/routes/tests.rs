//! The routes in-process (`actix_web::test`): what each path answers, to
//! whom, in which representation. The front proxy's certificate is the
//! connection's, which an in-process request has none of: a stand-in
//! authenticator hands the real [`FrontProxy`] the certificate the
//! connection would have carried, so the headers are still judged by it.

use super::*;
use crate::authorize::Authorizer;
use crate::authorize::tests::Table;
use crate::front_proxy::FrontProxy;
use crate::front_proxy::RequestHeader;
use crate::front_proxy::tests::{data, pki};
use crate::object::tests::record;
use crate::state::{Authenticator, Records};
use actix_web::test::{self, TestRequest};
use actix_web::{App, http::Method};
use metahook_driver::observe::records::Record;
use rustls_pki_types::CertificateDer;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The real front proxy, given the certificate chain a TLS connection
/// from the aggregator would have kept.
#[derive(Debug)]
struct Connected {
    front_proxy: FrontProxy,
    chain: Vec<CertificateDer<'static>>,
}

impl Authenticator for Connected {
    fn user(&self, request: &HttpRequest) -> Result<User, String> {
        self.front_proxy
            .authenticate(Some(&self.chain), request.headers())
    }
}

/// A driver's records, filtered as the driver's `View` filters them.
#[derive(Debug)]
struct Recorded {
    driving: bool,
    records: Vec<Record>,
}

impl Records for Recorded {
    fn driving(&self) -> bool {
        self.driving
    }

    fn reconciles(&self, controller: Option<&str>, namespace: Option<&str>) -> Vec<Record> {
        self.records
            .iter()
            .filter(|r| controller.is_none_or(|c| r.controller == c))
            .filter(|r| namespace.is_none_or(|ns| r.parent.namespace.as_deref() == Some(ns)))
            .cloned()
            .collect()
    }
}

/// The routes' state: `alice` may do anything, anyone else nothing; how
/// many reviews were asked.
struct Api {
    state: web::Data<State>,
    asked: Arc<AtomicUsize>,
}

fn api(driving: bool, records: Vec<Record>) -> Api {
    let pki = pki("front-proxy-client");
    let front_proxy = FrontProxy::default();
    front_proxy
        .update(RequestHeader::from_data(&data(&pki.ca_pem, r#"["front-proxy-client"]"#)).unwrap());
    let asked = Arc::new(AtomicUsize::new(0));
    let authorizer = Authorizer::new(Box::new(Table {
        allowed: vec!["alice"],
        asked: asked.clone(),
        last: Arc::new(Mutex::new(None)),
    }));
    Api {
        state: web::Data::new(State {
            records: Arc::new(Recorded { driving, records }),
            authenticator: Arc::new(Connected {
                front_proxy,
                chain: vec![pki.client],
            }),
            authorizer: Arc::new(authorizer),
        }),
        asked,
    }
}

/// Records of two controllers in two namespaces.
fn records() -> Vec<Record> {
    vec![
        record("hello", "shop", "web"),
        record("foo", "shop", "api"),
        record("hello", "bank", "vault"),
    ]
}

/// A request the aggregator forwards for `user`.
fn as_user(user: &str, method: Method, path: &str) -> TestRequest {
    TestRequest::default()
        .method(method)
        .uri(path)
        .insert_header(("X-Remote-User", user))
}

/// The status and the body (JSON, else the text as a JSON string).
async fn send(api: &Api, request: TestRequest) -> (u16, Value) {
    let state = api.state.clone();
    let app = test::init_service(App::new().configure(|cfg| configure(cfg, state))).await;
    let response = test::call_service(&app, request.to_request()).await;
    let status = response.status().as_u16();
    let body = test::read_body(response).await;
    let body = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    (status, body)
}

async fn get(api: &Api, user: &str, path: &str) -> (u16, Value) {
    send(api, as_user(user, Method::GET, path)).await
}

/// A GET asking for `accept`.
async fn get_as(api: &Api, user: &str, path: &str, accept: &str) -> (u16, Value) {
    send(
        api,
        as_user(user, Method::GET, path).insert_header(("Accept", accept)),
    )
    .await
}

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

const RESOURCES: &str = "/apis/driver.metahook.dev/v1alpha1";

/// `path` under the group's version.
fn at(path: &str) -> String {
    format!("{RESOURCES}/{path}")
}

fn names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

/// Discovery and OpenAPI are the aggregator's availability check and
/// `kubectl api-resources`: any authenticated user, no review.
#[actix_rt::test]
async fn discovery_is_served_to_any_authenticated_user_without_a_review() {
    let api = api(false, Vec::new());
    let (status, groups) = get(&api, "mallory", "/apis").await;
    assert_eq!(status, 200, "{groups}");
    assert_eq!(groups["kind"], "APIGroupList");
    assert_eq!(groups["groups"][0]["name"], "driver.metahook.dev");
    let (status, group) = get(&api, "mallory", "/apis/driver.metahook.dev").await;
    assert_eq!((status, &group["kind"]), (200, &Value::from("APIGroup")));
    assert_eq!(group["preferredVersion"]["version"], "v1alpha1");
    let (status, resources) = get(&api, "mallory", RESOURCES).await;
    assert_eq!(status, 200);
    assert_eq!(resources["kind"], "APIResourceList");
    assert_eq!(resources["resources"][0]["name"], "reconciles");
    assert_eq!(
        resources["resources"][0]["verbs"],
        serde_json::json!(["get", "list"])
    );
    let (status, v2) = get(&api, "mallory", "/openapi/v2").await;
    assert_eq!(status, 200);
    assert_eq!(v2["swagger"], "2.0", "{v2}");
    let (status, v3) = get(&api, "mallory", "/openapi/v3").await;
    assert_eq!(status, 200);
    let group_path = v3["paths"]
        .as_object()
        .and_then(|paths| paths.keys().next().cloned())
        .unwrap_or_default();
    assert_eq!(group_path, "apis/driver.metahook.dev/v1alpha1", "{v3}");
    let (status, v3_group) = get(&api, "mallory", &format!("/openapi/v3/{group_path}")).await;
    assert_eq!(status, 200);
    assert!(v3_group["components"]["schemas"].is_object(), "{v3_group}");
    assert_eq!(api.asked.load(Ordering::SeqCst), 0, "no review asked");
}

/// Health needs nothing; every other path, known or not, needs the front
/// proxy's user first (an unknown path is not told apart from a known one).
#[actix_rt::test]
async fn without_the_front_proxys_user_only_health_is_answered() {
    let api = api(true, records());
    for path in ["/healthz", "/livez", "/readyz"] {
        let (status, body) = send(&api, TestRequest::get().uri(path)).await;
        assert_eq!((status, body), (200, Value::from("ok")), "{path}");
    }
    for path in ["/apis", &at("reconciles"), "/openapi/v2", "/no/such/path"] {
        let (status, body) = send(&api, TestRequest::get().uri(path)).await;
        assert_eq!(status, 401, "{path}: {body}");
        assert_eq!(body["kind"], "Status");
        assert_eq!(body["reason"], "Unauthorized");
        assert!(
            body["message"]
                .as_str()
                .unwrap_or_default()
                .contains("no user name"),
            "{body}"
        );
    }
    let (status, _) = send(&api, TestRequest::post().uri("/apis")).await;
    assert_eq!(status, 401, "a method is judged after the user");
}

/// Only the Lease holder's records are the cluster's.
#[actix_rt::test]
async fn readyz_says_whether_this_replica_drives() {
    let (status, body) = send(&api(false, Vec::new()), TestRequest::get().uri("/readyz")).await;
    assert_eq!(status, 503);
    assert!(
        body.as_str().unwrap_or_default().starts_with("not driving"),
        "{body}"
    );
}

#[actix_rt::test]
async fn unknown_paths_are_404_and_other_methods_405() {
    let api = api(true, records());
    let (status, body) = get(&api, "alice", "/apis/apps/v1").await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["reason"], "NotFound");
    assert_eq!(
        body["message"],
        "the server could not find the requested resource"
    );
    let reconcile = at("namespaces/shop/reconciles/hello.web");
    for (method, path) in [
        (Method::POST, "/apis".to_owned()),
        (Method::PUT, at("reconciles")),
        (Method::DELETE, reconcile.clone()),
        (Method::PATCH, "/openapi/v2".to_owned()),
    ] {
        let (status, body) = send(&api, as_user("alice", method.clone(), &path)).await;
        assert_eq!(status, 405, "{method} {path}: {body}");
        assert_eq!(body["reason"], "MethodNotAllowed");
    }
    // No watch: `kubectl get -w` is told so rather than sent a list.
    let (status, body) = get(&api, "alice", &at("reconciles?watch=true")).await;
    assert_eq!(
        (status, &body["reason"]),
        (405, &Value::from("MethodNotAllowed"))
    );
    assert_eq!(
        api.asked.load(Ordering::SeqCst),
        1,
        "the watch was reviewed as a list"
    );
}

/// JSON, Tables and metadata for reconciles; discovery JSON only (a 406 to
/// aggregated discovery makes the aggregator fall back).
#[actix_rt::test]
async fn what_is_not_served_is_406() {
    let api = api(true, records());
    let aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    for (path, accept) in [
        ("/apis".to_owned(), aggregated),
        (RESOURCES.to_owned(), TABLE),
        ("/openapi/v2".to_owned(), "application/yaml"),
        (at("reconciles"), "application/yaml"),
        (
            at("namespaces/shop/reconciles/hello.web"),
            "application/vnd.kubernetes.protobuf",
        ),
    ] {
        let (status, body) = get_as(&api, "alice", &path, accept).await;
        assert_eq!(status, 406, "{path} as {accept}: {body}");
        assert_eq!(body["reason"], "NotAcceptable");
        assert!(
            body["message"]
                .as_str()
                .unwrap_or_default()
                .ends_with(accept),
            "{body}"
        );
    }
}

#[actix_rt::test]
async fn a_list_shows_the_records_asked_for_in_order() {
    let api = api(true, records());
    let (status, all) = get(&api, "alice", &at("reconciles")).await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(all["kind"], "ReconcileList");
    assert_eq!(all["apiVersion"], "driver.metahook.dev/v1alpha1");
    // By namespace, then name.
    assert_eq!(names(&all), ["hello.vault", "foo.api", "hello.web"]);
    let (status, shop) = get(&api, "alice", &at("namespaces/shop/reconciles")).await;
    assert_eq!(status, 200);
    assert_eq!(names(&shop), ["foo.api", "hello.web"]);
    assert_eq!(shop["items"][1]["status"]["parent"]["name"], "web");
    let (_, hello) = get(
        &api,
        "alice",
        &at("reconciles?labelSelector=driver.metahook.dev/controller%3Dhello"),
    )
    .await;
    assert_eq!(names(&hello), ["hello.vault", "hello.web"]);
    let (_, by_name) = get(
        &api,
        "alice",
        &at("namespaces/shop/reconciles?fieldSelector=metadata.name%3Dfoo.api"),
    )
    .await;
    assert_eq!(names(&by_name), ["foo.api"]);
    let (status, table) = get_as(&api, "alice", &at("namespaces/shop/reconciles"), TABLE).await;
    assert_eq!(status, 200);
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["rows"].as_array().map(Vec::len), Some(2), "{table}");
    let (status, metadata) = get_as(
        &api,
        "alice",
        &at("reconciles"),
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(metadata["kind"], "PartialObjectMetadataList");
    assert_eq!(metadata["items"][0]["metadata"]["name"], "hello.vault");
    let (status, body) = get(&api, "alice", &at("reconciles?labelSelector=%3D")).await;
    assert_eq!(
        (status, &body["reason"]),
        (400, &Value::from("BadRequest")),
        "{body}"
    );
}

#[actix_rt::test]
async fn a_list_needs_a_review_and_a_driving_replica() {
    let api = api(true, records());
    let (status, body) = get(&api, "mallory", &at("namespaces/shop/reconciles")).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        "reconciles.driver.metahook.dev is forbidden: User \"mallory\" cannot list resource \"reconciles\" in API group \"driver.metahook.dev\" in the namespace \"shop\": no RBAC policy matched"
    );
    let idle = self::api(false, records());
    let (status, body) = get(&idle, "alice", &at("reconciles")).await;
    assert_eq!(
        (status, &body["reason"]),
        (503, &Value::from("ServiceUnavailable"))
    );
}

#[actix_rt::test]
async fn a_get_finds_one_controllers_record_of_one_parent() {
    let api = api(true, records());
    let (status, object) = get(&api, "alice", &at("namespaces/shop/reconciles/hello.web")).await;
    assert_eq!(status, 200, "{object}");
    assert_eq!(object["kind"], "Reconcile");
    assert_eq!(object["metadata"]["namespace"], "shop");
    assert_eq!(object["metadata"]["name"], "hello.web");
    assert_eq!(object["status"]["controller"], "hello");
    assert_eq!(object["status"]["parent"]["name"], "web");
    // Another controller's record of a parent of the same name, another
    // namespace's, or none at all: not found.
    for path in [
        "shop/reconciles/hello.api",
        "bank/reconciles/hello.web",
        "shop/reconciles/web",
    ] {
        let (status, body) = get(&api, "alice", &format!("{RESOURCES}/namespaces/{path}")).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(body["reason"], "NotFound");
        assert_eq!(body["details"]["kind"], "reconciles");
        assert_eq!(
            body["details"]["name"],
            path.rsplit('/').next().unwrap_or_default()
        );
    }
    let (status, table) = get_as(
        &api,
        "alice",
        &at("namespaces/shop/reconciles/foo.api"),
        TABLE,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(table["rows"][0]["cells"][0], "foo.api", "{table}");
    let (status, body) = get(&api, "mallory", &at("namespaces/shop/reconciles/hello.web")).await;
    assert_eq!(status, 403);
    assert!(
        body["message"].as_str().unwrap_or_default().starts_with(
            "reconciles.driver.metahook.dev \"hello.web\" is forbidden: User \"mallory\" cannot get"
        ),
        "{body}"
    );
}
