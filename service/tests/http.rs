//! The service over HTTP: in process (`actix_web::test`) and over a real
//! socket. Every fixture answers 200 with its snapshot's body; every error
//! has its status and a JSON body; the service keeps serving afterwards.

use actix_web::http::StatusCode;
use actix_web::{App, test, web};
use metahook_core::{Answer, Controller, HookKind, Request};
use metahook_seeds::controllers;
use metahook_seeds::hello::{Hello, HelloStatus};
use metahook_service::{AppState, Settings, configure};
use metahook_testkit::{RealServer, every_fixture, fixtures, now, pretty, snapshot};

fn state(settings: &Settings, controllers: &'static [Controller]) -> web::Data<AppState> {
    let state = AppState::new(controllers, settings).with_clock(now);
    state.set_ready(true);
    web::Data::new(state)
}

fn settings() -> Settings {
    Settings::new("127.0.0.1:0".parse().expect("address"))
}

/// Controllers whose sync hooks panic (`boom`) and fail (`refuse`), to
/// prove each stays a 500 with a body that says why.
fn misbehaving() -> &'static [Controller] {
    fn boom(_: &Request<Hello>) -> Answer<HelloStatus> {
        panic!("the hook fell over")
    }
    fn refuse(_: &Request<Hello>) -> Result<Answer<HelloStatus>, String> {
        Err("the database of greetings is empty".to_owned())
    }
    static MISBEHAVING: std::sync::OnceLock<Vec<Controller>> = std::sync::OnceLock::new();
    MISBEHAVING.get_or_init(|| {
        vec![
            Controller::composite::<Hello>("boom").sync(boom).build(),
            Controller::composite::<Hello>("refuse")
                .sync(refuse)
                .build(),
        ]
    })
}

macro_rules! service {
    ($state:expr) => {{
        let state = $state;
        test::init_service(App::new().configure(move |cfg| configure(cfg, state))).await
    }};
}

fn post(path: &str, content_type: &str, body: impl Into<web::Bytes>) -> test::TestRequest {
    test::TestRequest::post()
        .uri(path)
        .insert_header(("content-type", content_type))
        .set_payload(body.into())
}

#[actix_web::test]
async fn every_fixture_answers_200_with_its_snapshot() {
    let app = service!(state(&settings(), controllers()));
    for fixture in every_fixture() {
        // kube-apiserver adds the webhook's timeout to the URL as a query.
        let url = if fixture.hook.called_by_api_server() {
            format!("{}?timeout=30s", fixture.url())
        } else {
            fixture.url()
        };
        let req = post(&url, "application/json", fixture.body()).to_request();
        let resp = test::call_service(&app, req).await;
        assert_eq!(resp.status(), StatusCode::OK, "{}", fixture.path.display());
        assert_eq!(
            resp.headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some("application/json")
        );
        let body = test::read_body(resp).await;
        assert_eq!(
            pretty(&body),
            snapshot(&fixture),
            "{}",
            fixture.path.display()
        );
    }
}

/// Sends one request and returns the status and the JSON error body.
async fn error_of(
    app: &impl actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse,
        Error = actix_web::Error,
    >,
    req: test::TestRequest,
) -> (StatusCode, serde_json::Value) {
    let resp = test::call_service(app, req.to_request()).await;
    let status = resp.status();
    let body = test::read_body(resp).await;
    let json: serde_json::Value = serde_json::from_slice(&body)
        .unwrap_or_else(|e| panic!("error body is not JSON ({e}): {body:?}"));
    assert_eq!(json["status"], status.as_u16(), "{json}");
    assert!(
        json["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{json}"
    );
    (status, json)
}

#[actix_web::test]
async fn malformed_json_is_400_with_line_and_column() {
    let app = service!(state(&settings(), controllers()));
    let (status, json) = error_of(
        &app,
        post("/hello/sync", "application/json", "{\n  \"parent\": {,\n}"),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(json["reason"], "MalformedJson");
    assert_eq!(json["line"], 2);
    assert_eq!(json["column"], 14);
}

#[actix_web::test]
async fn wrong_shape_is_422_with_the_field_path() {
    let app = service!(state(&settings(), controllers()));
    let body = r#"{"parent": {"metadata": {"name": 7}}, "children": {}}"#;
    let (status, json) = error_of(&app, post("/hello/sync", "application/json", body)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(json["reason"], "InvalidRequest");
    assert_eq!(json["path"], "parent.metadata.name");

    let (status, json) = error_of(
        &app,
        post("/hello/sync", "application/json", r#"{"children": {}}"#),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        json["message"].as_str().unwrap_or("").contains("parent"),
        "{json}"
    );
}

/// A ConversionReview without `desiredAPIVersion` is a 422 with the path,
/// as any wrong shape (every well-formed review fixture is answered above).
#[actix_web::test]
async fn a_conversion_review_of_the_wrong_shape_is_422() {
    let app = service!(state(&settings(), controllers()));
    let body = r#"{"request": {"uid": "u", "objects": []}}"#;
    let (status, json) = error_of(&app, post("/foo/convert", "application/json", body)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(json["reason"], "InvalidRequest");
    assert_eq!(json["path"], "request");
    assert!(
        json["message"]
            .as_str()
            .unwrap_or("")
            .contains("desiredAPIVersion"),
        "{json}"
    );
}

/// An AdmissionReview that is not JSON is a 400, one without the request's
/// `uid` (which the answer must echo) a 422 naming where, for both
/// admission hooks.
#[actix_web::test]
async fn a_malformed_admission_review_is_4xx() {
    let app = service!(state(&settings(), controllers()));
    for hook in ["/foo/validate", "/foo/default"] {
        let (status, json) =
            error_of(&app, post(hook, "application/json", r#"{"request": {"#)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{hook}: {json}");
        assert_eq!(json["reason"], "MalformedJson", "{hook}");
        let body = r#"{"request": {"operation": "CREATE", "object": {}}}"#;
        let (status, json) = error_of(&app, post(hook, "application/json", body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{hook}: {json}");
        assert_eq!(json["reason"], "InvalidRequest", "{hook}");
        assert!(
            json["message"].as_str().unwrap_or("").contains("uid"),
            "{hook}: {json}"
        );
    }
}

#[actix_web::test]
async fn unknown_controller_or_hook_is_404() {
    let app = service!(state(&settings(), controllers()));
    let (status, json) = error_of(&app, post("/nope/sync", "application/json", "{}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json["reason"], "UnknownController");
    assert!(
        json["message"].as_str().unwrap_or("").contains("hello"),
        "lists known: {json}"
    );

    let (status, json) = error_of(&app, post("/hello/customize", "application/json", "{}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json["reason"], "UnknownHook");

    let (status, _) = error_of(&app, test::TestRequest::get().uri("/a/b/c")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[actix_web::test]
async fn wrong_method_is_405_with_allow() {
    let app = service!(state(&settings(), controllers()));
    let resp = test::call_service(
        &app,
        test::TestRequest::get().uri("/hello/sync").to_request(),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        resp.headers().get("allow").and_then(|v| v.to_str().ok()),
        Some("POST")
    );
    let json: serde_json::Value =
        serde_json::from_slice(&test::read_body(resp).await).expect("JSON");
    assert_eq!(json["reason"], "MethodNotAllowed");
}

#[actix_web::test]
async fn non_json_content_type_is_415() {
    let app = service!(state(&settings(), controllers()));
    let body =
        std::fs::read(metahook_testkit::root().join("fixtures/hello/new.json")).expect("fixture");
    for content_type in ["application/x-www-form-urlencoded", "text/plain", ""] {
        let (status, json) = error_of(&app, post("/hello/sync", content_type, body.clone())).await;
        assert_eq!(
            status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{content_type:?}"
        );
        assert_eq!(json["reason"], "UnsupportedMediaType");
    }
    // Parameters and +json types are JSON too.
    for content_type in ["application/json; charset=utf-8", "application/merge+json"] {
        let resp = test::call_service(
            &app,
            post("/hello/sync", content_type, body.clone()).to_request(),
        )
        .await;
        assert_eq!(resp.status(), StatusCode::OK, "{content_type:?}");
    }
}

#[actix_web::test]
async fn body_over_the_limit_is_413() {
    let mut small = settings();
    small.max_body_bytes = 1024;
    let app = service!(state(&small, controllers()));
    let body =
        std::fs::read(metahook_testkit::root().join("fixtures/hello/ready.json")).expect("fixture");
    assert!(body.len() > 1024);
    let (status, json) = error_of(&app, post("/hello/sync", "application/json", body)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(json["reason"], "PayloadTooLarge");
}

#[actix_web::test]
async fn past_max_in_flight_is_429_with_retry_after() {
    let mut none = settings();
    none.max_in_flight = 0;
    let app = service!(state(&none, controllers()));
    let body =
        std::fs::read(metahook_testkit::root().join("fixtures/hello/new.json")).expect("fixture");
    let resp = test::call_service(
        &app,
        post("/hello/sync", "application/json", body).to_request(),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        resp.headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    // Health checks are not hook requests and are never refused.
    let health =
        test::call_service(&app, test::TestRequest::get().uri("/healthz").to_request()).await;
    assert_eq!(health.status(), StatusCode::OK);
}

#[actix_web::test]
async fn a_panicking_hook_is_500_and_the_service_keeps_serving() {
    let app = service!(state(&settings(), misbehaving()));
    for _ in 0..3 {
        let (status, json) =
            error_of(&app, post("/boom/sync", "application/json", hello_sync())).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(json["reason"], "HookPanicked");
        assert!(
            json["message"]
                .as_str()
                .unwrap_or("")
                .contains("the hook fell over"),
            "{json}"
        );
    }
    let health =
        test::call_service(&app, test::TestRequest::get().uri("/healthz").to_request()).await;
    assert_eq!(health.status(), StatusCode::OK);
}

/// A Hello sync request, from the fixtures.
fn hello_sync() -> Vec<u8> {
    fixtures()
        .into_iter()
        .find(|f| f.controller == "hello" && f.hook == HookKind::Sync)
        .expect("a Hello sync fixture")
        .body()
}

#[actix_web::test]
async fn a_hook_that_returns_an_error_is_500_with_its_message() {
    let app = service!(state(&settings(), misbehaving()));
    let (status, json) =
        error_of(&app, post("/refuse/sync", "application/json", hello_sync())).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(json["reason"], "HookFailed");
    assert!(
        json["message"]
            .as_str()
            .unwrap_or("")
            .contains("the database of greetings is empty"),
        "{json}"
    );
}

#[actix_web::test]
async fn metrics_count_requests_by_controller_hook_and_code() {
    let app = service!(state(&settings(), controllers()));
    let body =
        std::fs::read(metahook_testkit::root().join("fixtures/hello/new.json")).expect("fixture");
    test::call_service(
        &app,
        post("/hello/sync", "application/json", body).to_request(),
    )
    .await;
    test::call_service(
        &app,
        post("/hello/sync", "application/json", "{").to_request(),
    )
    .await;
    test::call_service(
        &app,
        post("/zzz/sync", "application/json", "{}").to_request(),
    )
    .await;
    let resp =
        test::call_service(&app, test::TestRequest::get().uri("/metrics").to_request()).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let text = String::from_utf8(test::read_body(resp).await.to_vec()).expect("UTF-8");
    for line in [
        r#"metahook_hook_requests_total{controller="hello",hook="sync",code="200"} 1"#,
        r#"metahook_hook_requests_total{controller="hello",hook="sync",code="400"} 1"#,
        r#"metahook_hook_requests_total{controller="unknown",hook="unknown",code="404"} 1"#,
        r#"metahook_hook_request_duration_seconds_count{controller="hello",hook="sync"} 2"#,
        "metahook_hook_requests_in_flight 0",
        "metahook_hook_request_bytes_buffered 0",
        "metahook_hook_request_bytes_budget 134217728",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

#[actix_web::test]
async fn readyz_follows_the_ready_flag() {
    let state = web::Data::new(AppState::new(controllers(), &settings()));
    let app = service!(state.clone());
    let resp = test::call_service(&app, test::TestRequest::get().uri("/readyz").to_request()).await;
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    state.set_ready(true);
    let resp = test::call_service(&app, test::TestRequest::get().uri("/readyz").to_request()).await;
    assert_eq!(resp.status(), StatusCode::OK);
}

// `test` here is actix's macro; this one is the plain std test.
#[::core::prelude::v1::test]
fn over_a_real_socket_fixtures_and_errors_then_healthz() {
    let server = RealServer::start(RealServer::settings(), controllers());
    for fixture in fixtures() {
        let resp = server.post(&fixture.url(), "application/json", &fixture.body());
        assert_eq!(resp.status, 200, "{}", fixture.path.display());
        assert_eq!(
            pretty(&resp.body),
            snapshot(&fixture),
            "{}",
            fixture.path.display()
        );
    }
    let cases: [(&str, &str, &[u8], u16); 4] = [
        ("/hello/sync", "application/json", b"{\"parent\":", 400),
        ("/hello/sync", "application/json", b"{\"children\":{}}", 422),
        ("/nope/sync", "application/json", b"{}", 404),
        ("/hello/sync", "text/plain", b"{}", 415),
    ];
    for (path, content_type, body, want) in cases {
        let resp = server.post(path, content_type, body);
        assert_eq!(resp.status, want, "{path} {content_type}");
        assert_eq!(resp.json()["status"], want);
    }
    let resp = server.get("/hello/sync");
    assert_eq!(resp.status, 405);
    assert_eq!(resp.header("allow"), Some("POST"));
    let health = server.get("/healthz");
    assert_eq!(health.status, 200);
    assert_eq!(health.json()["status"], "ok");
    assert_eq!(server.get("/readyz").status, 200);
}
