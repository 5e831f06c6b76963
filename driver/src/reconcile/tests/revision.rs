//! A new revision rolled out: a driver whose hooks declare a revision
//! queues every parent at its start ([`worker::enqueue_all`]) and
//! reconciles each once; a parent whose answer did not change is written
//! nothing, one whose answer changed gets exactly that change, and every
//! record names the revision that answered. The metrics count the parents
//! and those the revision has answered.

use crate::controller::cache::{CachedObject, Change};
use crate::controller::context::Context;
use crate::controller::worker;
use crate::hook::call::Endpoint;
use crate::observe::metrics::DriverMetrics;
use crate::observe::records::Outcome;
use crate::test_support::scripted_api::{ApiHandle, bounded, mock_client, no_further_request};
use crate::test_support::{Demo, Obj, context};
use http::Response;
use kube::api::DynamicObject;
use kube::client::Body;
use prometheus_client::registry::Registry;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const PARENTS: usize = 5;

/// A settled `demo` parent: its finalizer on, its status as the hook
/// answers it (generation 2 observed).
fn thing(i: usize) -> DynamicObject {
    Obj::new(("example.com", "v1", "Thing"), &format!("p{i}"))
        .generation(2)
        .finalizer("metacontroller.io/compositecontroller-demo")
        .data("spec", json!({}))
        .data("status", json!({"ok": true, "observedGeneration": 2}))
        .build()
}

/// A sync hook answering each parent with a Deployment named after it, at
/// 2 replicas for the parents in `scaled` and 1 for the rest; its calls
/// counted in `calls`.
fn hook(scaled: &'static [&'static str], calls: Arc<AtomicUsize>) -> Endpoint {
    Endpoint::InProcess(Arc::new(move |body, _| {
        calls.fetch_add(1, Ordering::SeqCst);
        let request: Value = serde_json::from_slice(body).unwrap_or_default();
        let name = request["parent"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default();
        let replicas = if scaled.contains(&name) { 2 } else { 1 };
        Ok(serde_json::to_vec(&json!({
            "status": {"ok": true},
            "children": [{"apiVersion": "apps/v1", "kind": "Deployment",
                          "metadata": {"name": name}, "spec": {"replicas": replicas}}],
        }))
        .unwrap_or_default())
    }))
}

/// A context whose hooks are `revision`, over the parents and `children`,
/// its metrics in `registry`.
fn driver(
    revision: &str,
    sync: Endpoint,
    client: kube::Client,
    children: Vec<DynamicObject>,
    registry: &mut Registry,
) -> Arc<Context> {
    let ctl = Demo::default().build();
    let caches = context::caches(&client);
    caches.preload(&ctl.parent, (0..PARENTS).map(thing).collect());
    caches.preload(&ctl.children[0].resource, children);
    let mut shared = context::shared(client, caches);
    shared.metrics = Arc::new(DriverMetrics::register(registry));
    let mut hooks = context::sync_only(sync);
    hooks.sync.revision = Some(Arc::from(revision));
    let ctx = Context::new(ctl, hooks, shared);
    worker::subscribe(&ctx);
    ctx
}

/// What a start does: every parent queued, the loop run until `revision`
/// has answered each, then stopped.
async fn start(ctx: &Arc<Context>, revision: &str) {
    worker::enqueue_all(ctx);
    let stop = CancellationToken::new();
    let pace = worker::Pace {
        workers: 2,
        debounce: Duration::ZERO,
    };
    let running = tokio::spawn(worker::run(
        Arc::clone(ctx),
        pace,
        Duration::from_secs(3600),
        stop.clone(),
    ));
    bounded(async {
        while ctx.records.answered_by(revision) < PARENTS {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    stop.cancel();
    bounded(running).await.unwrap();
}

/// Answers every request 200 (a Deployment's apply with the body sent, as
/// stored), keeping each one's method, path and body.
fn accept_all(mut api: ApiHandle) -> Arc<Mutex<Vec<(String, String, Value)>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Some((request, send)) = api.next_request().await {
            let method = request.method().to_string();
            let path = request.uri().path().to_owned();
            let bytes = request.into_body().collect_bytes().await.unwrap();
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let mut stored = body.clone();
            let name = path.rsplit('/').next().unwrap_or_default().to_owned();
            stored["metadata"]["namespace"] = json!("shop");
            stored["metadata"]["uid"] = json!(format!("uid-web-{name}"));
            stored["metadata"]["resourceVersion"] = json!("5");
            log.lock().unwrap().push((method, path, body));
            send.send_response(
                Response::builder()
                    .status(200)
                    .header("content-type", "application/json")
                    .body(Body::from(serde_json::to_vec(&stored).unwrap()))
                    .unwrap(),
            );
        }
    });
    seen
}

fn metrics_text(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text
}

#[tokio::test]
async fn a_new_revision_answers_every_parent_once_and_writes_only_what_changed() {
    // 0.1.0 creates every parent's Deployment.
    let (client, api) = mock_client();
    let calls = Arc::new(AtomicUsize::new(0));
    let mut registry = Registry::default();
    let first = driver(
        "0.1.0",
        hook(&[], Arc::clone(&calls)),
        client,
        Vec::new(),
        &mut registry,
    );
    let seen = accept_all(api);
    start(&first, "0.1.0").await;
    let children: Vec<DynamicObject> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(method, path, body)| {
            assert_eq!(method, "PATCH", "{path}: only the Deployments' applies");
            let mut stored = body.clone();
            stored["metadata"]["namespace"] = json!("shop");
            stored["metadata"]["uid"] = json!(format!("uid-{path}"));
            stored["metadata"]["resourceVersion"] = json!("5");
            serde_json::from_value(stored).unwrap()
        })
        .collect();
    assert_eq!(children.len(), PARENTS);

    // 0.2.0 answers the same: every parent is reconciled once, nothing is
    // sent (a request would find no answer, and the start would not end).
    let (client, mut api) = mock_client();
    let calls = Arc::new(AtomicUsize::new(0));
    let mut registry = Registry::default();
    let same = driver(
        "0.2.0",
        hook(&[], Arc::clone(&calls)),
        client,
        children.clone(),
        &mut registry,
    );
    start(&same, "0.2.0").await;
    no_further_request(&mut api);
    assert_eq!(calls.load(Ordering::SeqCst), PARENTS, "each parent once");
    let records = same.records.list(None);
    assert_eq!(records.len(), PARENTS);
    for record in &records {
        assert_eq!(record.outcome, Outcome::Unchanged, "{record:?}");
        assert_eq!(record.revision.as_deref(), Some("0.2.0"));
    }
    let text = metrics_text(&registry);
    for line in [
        "parents{controller=\"demo\"} 5",
        "parents_answered{controller=\"demo\",revision=\"0.2.0\"} 5",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
    }

    // 0.3.0 scales two of them: those two Deployments are applied, with
    // the change and nothing else is written.
    let (client, api) = mock_client();
    let calls = Arc::new(AtomicUsize::new(0));
    let mut registry = Registry::default();
    let scaled = driver(
        "0.3.0",
        hook(&["p1", "p3"], Arc::clone(&calls)),
        client,
        children,
        &mut registry,
    );
    let seen = accept_all(api);
    start(&scaled, "0.3.0").await;
    let writes: Vec<(String, String, Value)> = seen.lock().unwrap().clone();
    let mut paths: Vec<&str> = writes.iter().map(|(_, path, _)| path.as_str()).collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "/apis/apps/v1/namespaces/shop/deployments/p1",
            "/apis/apps/v1/namespaces/shop/deployments/p3"
        ]
    );
    assert!(
        writes
            .iter()
            .all(|(_, _, body)| body["spec"]["replicas"] == 2)
    );
    assert_eq!(calls.load(Ordering::SeqCst), PARENTS, "each parent once");
    for record in scaled.records.list(None) {
        let written = ["p1", "p3"].contains(&record.parent.name.as_str());
        let outcome = if written {
            Outcome::Succeeded
        } else {
            Outcome::Unchanged
        };
        assert_eq!(record.outcome, outcome, "{record:?}");
        assert_eq!(record.revision.as_deref(), Some("0.3.0"));
    }
    // A parent deleted is no longer counted as answered.
    scaled.parents.notify(&Change::Deleted(Arc::new(
        CachedObject::of(&thing(0)).unwrap(),
    )));
    let text = metrics_text(&registry);
    let line = "parents_answered{controller=\"demo\",revision=\"0.3.0\"} 4";
    assert!(
        text.lines().any(|l| l.ends_with(line)),
        "{line} in:\n{text}"
    );
}
