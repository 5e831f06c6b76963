//! Whole reconciles against preloaded caches and a scripted API server:
//! what a failed hook does (nothing), what a 429 does (a delayed retry, no
//! event, no backoff), what any other failure does (backoff and a Warning),
//! what a good answer writes, and the record each leaves; and the loop
//! (`controller/worker.rs`) that runs them.

mod claims;
mod decorator;
mod revision;

use super::retry::{OWNER_KIND_RETRY, OWNER_KIND_TRIES};
use super::{ReconcileError, STATUS_DEFERRAL, error_policy, reconcile, status_pace};
use crate::controller::backoff::backoff;
use crate::controller::cache::CachedObject;
use crate::controller::context::{Context, HookTargets, Shared};
use crate::controller::customized::Discover;
use crate::controller::queue::ParentKey;
use crate::controller::triggers::parent_key;
use crate::controller::worker;
use crate::hook::call::{Endpoint, HookCaller};
use crate::observe::records::Outcome;
use crate::test_support::scripted_api::{
    ApiHandle, Seen, answer, bounded, mock_client, namespace_terminating_body, no_further_request,
    scripted, status_body,
};
use crate::test_support::{Demo, Obj, context, parent};
use crate::write::events::EventPublisher;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::core::DynamicObject;
use kube::runtime::controller::Action;
use metahook_core::HookKind;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The parent, as the applier hands it over: from the parent cache.
fn cached(ctx: &Context) -> Arc<CachedObject> {
    ctx.parents
        .get(Some("shop"), "p")
        .expect("the parent is cached")
}

fn key(ctx: &Context) -> ParentKey {
    parent_key(&ctx.driven, cached(ctx).as_ref())
}

/// One reconcile of the cached parent.
async fn reconcile_cached(ctx: &Arc<Context>) -> Result<Action, ReconcileError> {
    reconcile(cached(ctx), Arc::clone(ctx)).await
}

/// What the applier does with one parent: reconcile and, after a failure,
/// the error policy.
async fn reconcile_and_requeue(ctx: &Arc<Context>) -> Action {
    match reconcile_cached(ctx).await {
        Ok(action) => action,
        Err(err) => error_policy(cached(ctx), &err, Arc::clone(ctx)),
    }
}

/// A parent that already carries the finalizer, with one owned child: the
/// prelude plans no API call, so any request is the hook's doing.
fn settled_parent() -> DynamicObject {
    let mut p = parent();
    p.metadata.finalizers = Some(vec![
        "metacontroller.io/compositecontroller-demo".to_owned(),
    ]);
    p
}

fn owned_child() -> DynamicObject {
    Obj::deployment("web")
        .label("controller-uid", "p1")
        .controlled_by(OwnerReference {
            api_version: "example.com/v1".to_owned(),
            kind: "Thing".to_owned(),
            name: "p".to_owned(),
            uid: "p1".to_owned(),
            controller: Some(true),
            block_owner_deletion: None,
        })
        .data("spec", json!({"replicas": 1}))
        .build()
}

/// A sync hook that wants `web` at 3 replicas, status `{ok: true}`, and
/// to be called again in 30 s.
fn three_replicas_of_web(
    _: &[u8],
    _: jiff::Timestamp,
) -> Result<Vec<u8>, metahook_core::HookError> {
    Ok(
        br#"{"status": {"ok": true}, "children": [{"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"}, "spec": {"replicas": 3}}], "resyncAfterSeconds": 30}"#
            .to_vec(),
    )
}

/// Answers the reconcile's two writes: the child's apply (with `web` at
/// `replicas`), then the parent's status.
async fn apply_then_status(api: &mut ApiHandle, replicas: i64) -> (Seen, Seen) {
    let apply = answer(api, 200, owned_child_json(replicas)).await;
    let status = answer(api, 200, serde_json::to_value(settled_parent()).unwrap()).await;
    (apply, status)
}

/// [`apply_then_status`], then the Normal Event of the changed child.
async fn apply_status_event(api: &mut ApiHandle, replicas: i64) -> ((Seen, Seen), Seen) {
    let writes = apply_then_status(api, replicas).await;
    let event = answer(
        api,
        201,
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"}}),
    )
    .await;
    (writes, event)
}

/// `status` replaced the parent's status with the hook's `{ok: true}`.
fn assert_wrote_ok_status(status: &Seen) {
    assert_eq!(
        status.path,
        "/apis/example.com/v1/namespaces/shop/things/p/status"
    );
    assert_eq!(
        status.body[1]["value"],
        json!({"ok": true, "observedGeneration": 2})
    );
}

fn runtime(sync: Endpoint, client: kube::Client) -> Arc<Context> {
    runtime_with(sync, client, settled_parent())
}

fn runtime_with(
    sync: Endpoint,
    client: kube::Client,
    cached_parent: DynamicObject,
) -> Arc<Context> {
    runtime_with_children(sync, client, cached_parent, vec![owned_child()])
}

fn runtime_with_children(
    sync: Endpoint,
    client: kube::Client,
    cached_parent: DynamicObject,
    children: Vec<DynamicObject>,
) -> Arc<Context> {
    let ctl = Demo::default().build();
    let caches = context::caches(&client);
    caches.preload(&ctl.parent, vec![cached_parent]);
    caches.preload(&ctl.children[0].resource, children);
    let per_object = crate::client::throttle::Budget::new(
        crate::write::events::EVENTS_QPS,
        crate::write::events::EVENTS_BURST,
    )
    .unwrap();
    let mut shared = context::shared(client.clone(), caches);
    shared.events = Some(Arc::new(EventPublisher::new(
        client, "metahook", "test", per_object,
    )));
    shared.caller = HookCaller::with_http(jiff::Timestamp::now, shared.metrics.clone()).unwrap();
    let ctx = Context::new(ctl, context::sync_only(sync), shared);
    worker::subscribe(&ctx);
    ctx
}

#[tokio::test]
async fn a_failed_hook_changes_nothing() {
    let handlers: [metahook_core::Handler; 3] = [
        std::sync::Arc::new(|_, _| Ok(b"not json".to_vec())),
        std::sync::Arc::new(|_, _| panic!("hook bug")),
        // Valid JSON, wrong shape, strict v2: an unknown key.
        std::sync::Arc::new(|_, _| Ok(br#"{"status": {}, "Children": []}"#.to_vec())),
    ];
    for handler in handlers {
        let (client, mut api) = mock_client();
        let ctx = runtime(Endpoint::InProcess(handler), client);
        // Steps 1-4 only: the report's Warning is `other_failures_back_off_and_warn`'s.
        // A request would block the reconcile on its answer, so whichever
        // comes first tells: the reconcile's error, or an API call.
        let (parent, mut trace) = (cached(&ctx), super::trace::Trace::default());
        let parent = parent.decode().unwrap();
        let steps = super::sync(&parent, &ctx, &mut trace);
        bounded(async { tokio::select! {
            result = steps => assert!(result.is_err()),
            request = api.next_request() => {
                panic!("a failed hook must not lead to API calls, got {:?}", request.map(|(r, _)| r.uri().clone()));
            }
        } }).await
    }
}

#[tokio::test]
async fn a_hook_429_retries_after_retry_after_without_event_or_backoff() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/demo/sync", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let _ = socket.read(&mut buf).await;
        socket
            .write_all(b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 120\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
    });
    let (client, mut api) = mock_client();
    let ctx = runtime(
        Endpoint::Http {
            url,
            timeout: Duration::from_secs(60),
            auth: Default::default(),
            etag: None,
        },
        client,
    );
    let action = bounded(async { tokio::select! {
        action = reconcile_and_requeue(&ctx) => action,
        request = api.next_request() => {
            panic!("a 429 must not lead to API calls or events, got {:?}", request.map(|(r, _)| r.uri().clone()));
        }
    } }).await;
    assert_eq!(
        action,
        Action::requeue(Duration::from_secs(120)),
        "retried after Retry-After"
    );
    assert_eq!(ctx.backoff.failures(&key(&ctx)), 0, "no backoff step");
}

#[tokio::test]
async fn other_failures_back_off_and_warn() {
    let (client, mut api) = mock_client();
    let ctx = runtime(
        Endpoint::InProcess(std::sync::Arc::new(|_, _| Ok(b"[]".to_vec()))),
        client,
    );
    let (action, event) = scripted(reconcile_and_requeue(&ctx), async {
        answer(
            &mut api,
            201,
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"}}),
        )
        .await
    })
    .await;
    no_further_request(&mut api);
    assert_eq!(event.method, "POST");
    assert_eq!(event.path, "/apis/events.k8s.io/v1/namespaces/shop/events");
    assert_eq!(event.body["type"], "Warning");
    assert_eq!(event.body["reason"], "SyncError");
    assert_eq!(event.body["regarding"]["name"], "p");
    let note = event.body["note"].as_str().unwrap();
    assert!(
        note.starts_with("Sync error: the sync hook's response could not be decoded"),
        "{note}"
    );
    assert_eq!(ctx.backoff.failures(&key(&ctx)), 1);
    assert_eq!(
        action,
        Action::requeue(backoff(0)),
        "after the first backoff step"
    );
}

#[tokio::test]
async fn a_good_answer_is_applied_and_its_status_written() {
    let (client, mut api) = mock_client();
    let ctx = runtime(
        Endpoint::InProcess(std::sync::Arc::new(three_replicas_of_web)),
        client,
    );
    let (result, ((apply, status), event)) =
        scripted(reconcile_cached(&ctx), apply_status_event(&mut api, 3)).await;
    no_further_request(&mut api);
    assert_eq!(result.unwrap(), Action::requeue(Duration::from_secs(30)));
    assert_eq!(
        (event.body["type"].as_str(), event.body["reason"].as_str()),
        (Some("Normal"), Some("Updated")),
        "the Deployment scaled from 1 to 3: a Normal, after the writes"
    );
    assert_eq!(apply.path, "/apis/apps/v1/namespaces/shop/deployments/web");
    assert_eq!(apply.body["metadata"]["labels"]["controller-uid"], "p1");
    assert_eq!(apply.body["spec"]["replicas"], 3);
    assert_wrote_ok_status(&status);
}

#[tokio::test]
async fn while_the_budget_is_short_the_status_waits_for_a_later_pass() {
    let (client, mut api) = mock_client();
    let ctx = runtime(
        Endpoint::InProcess(std::sync::Arc::new(three_replicas_of_web)),
        client,
    );
    // A converging write just waited for a token.
    ctx.pressure.waited(true);
    let event =
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"}});
    let (action, (apply, updated)) = scripted(reconcile_and_requeue(&ctx), async {
        let apply = answer(&mut api, 200, owned_child_json(3)).await;
        (apply, answer(&mut api, 201, event.clone()).await)
    })
    .await;
    no_further_request(&mut api);
    assert_eq!(apply.path, "/apis/apps/v1/namespaces/shop/deployments/web");
    assert_eq!(updated.body["reason"], "Updated");
    assert_eq!(
        action,
        Action::requeue(Duration::from_secs(1)),
        "soon, not in 30 s"
    );
    let record = ctx.records.get(&key(&ctx)).expect("a record");
    let ops: Vec<&str> = record.plan.iter().map(|s| s.op).collect();
    assert_eq!(ops, ["apply", "event"], "no status write");
    assert_eq!(
        record.requeue.map(|r| (r.after_seconds, r.reason)),
        Some((1.0, "statusDeferred"))
    );
    // Still short: the child is as applied, the status still waits —
    // nothing is sent.
    let action = bounded(reconcile_and_requeue(&ctx)).await;
    no_further_request(&mut api);
    assert_eq!(action, Action::requeue(Duration::from_secs(1)));
    // A second after the last wait the budget is free: the status, once,
    // with no Event (the pass that deferred it was catching up).
    tokio::time::sleep(Duration::from_millis(1010)).await;
    let written = serde_json::to_value(settled_parent()).unwrap();
    let (action, status) =
        scripted(reconcile_and_requeue(&ctx), answer(&mut api, 200, written)).await;
    no_further_request(&mut api);
    assert_wrote_ok_status(&status);
    assert_eq!(action, Action::requeue(Duration::from_secs(30)));
}

#[tokio::test]
async fn a_listed_child_reaches_the_hook_with_its_type() {
    // Found on the real API server: list items carry no apiVersion or kind,
    // and a hook that checks them (Hello's) saw no Deployment for a parent
    // listed at start. The hook here reports the kind it was sent.
    let (client, mut api) = mock_client();
    let mut listed = owned_child();
    listed.types = None;
    let ctx = runtime_with_children(
        Endpoint::InProcess(std::sync::Arc::new(|body, _| {
            let req: serde_json::Value = serde_json::from_slice(body).unwrap();
            let child = &req["children"]["Deployment.apps/v1"]["shop/web"];
            Ok(serde_json::to_vec(&json!({
                "status": {"apiVersion": child["apiVersion"], "kind": child["kind"]},
                "children": [child]
            }))
            .unwrap())
        })),
        client,
        settled_parent(),
        vec![listed],
    );
    let (result, status) = scripted(reconcile_cached(&ctx), async {
        loop {
            let seen = answer(
                &mut api,
                200,
                serde_json::to_value(settled_parent()).unwrap(),
            )
            .await;
            if seen.path.ends_with("/status") {
                return seen;
            }
        }
    })
    .await;
    no_further_request(&mut api);
    result.unwrap();
    assert_eq!(
        status.body[1]["value"],
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "observedGeneration": 2})
    );
}

fn owned_child_json(replicas: i64) -> serde_json::Value {
    let mut child = serde_json::to_value(owned_child()).unwrap();
    child["spec"]["replicas"] = json!(replicas);
    child
}

/// Reconciles a parent that lacks the finalizer, answers the finalizer
/// patch with `code` and `body`, and checks that nothing follows it (no
/// Warning Event, which would be another request). Returns the patch and
/// the parent's failure count afterwards.
async fn first_patch_refused(code: u16, body: serde_json::Value) -> (Seen, u32) {
    let (client, mut api) = mock_client();
    let mut unfinalized = parent();
    unfinalized.metadata.finalizers = None;
    let ctx = runtime_with(
        Endpoint::InProcess(std::sync::Arc::new(|_, _| Ok(b"{}".to_vec()))),
        client,
        unfinalized,
    );
    let process = reconcile_and_requeue(&ctx);
    tokio::pin!(process);
    let patch = bounded(async {
        tokio::select! {
            _ = &mut process => panic!("finished without patching"),
            seen = answer(&mut api, code, body) => seen,
        }
    })
    .await;
    bounded(async { tokio::select! {
        _ = &mut process => {}
        request = api.next_request() => {
            panic!("a quiet retry publishes no event, got {:?}", request.map(|(r, _)| r.uri().clone()));
        }
    } }).await;
    (patch, ctx.backoff.failures(&key(&ctx)))
}

#[tokio::test]
async fn a_stale_cache_is_a_quiet_retry() {
    // The cached parent lacks the finalizer; the guarded patch finds the
    // live object changed (its `test` fails: 422). No Warning for that.
    let (patch, failures) = first_patch_refused(422, status_body(422, "Invalid")).await;
    assert_eq!(patch.method, "PATCH");
    assert_eq!(patch.body[2]["path"], "/metadata/finalizers");
    assert_eq!(failures, 1, "retried with backoff");
}

#[tokio::test]
async fn a_namespace_being_deleted_is_a_quiet_retry() {
    // Found on the real API server: a parent whose namespace is being
    // deleted gets 403 NamespaceTerminating for every write, Events
    // included. Retried with backoff, no Warning attempted.
    let terminating = namespace_terminating_body("things.example.com", "p");
    let (patch, failures) = first_patch_refused(403, terminating).await;
    assert_eq!(patch.method, "PATCH");
    assert_eq!(failures, 1, "retried with backoff");
}

#[tokio::test]
async fn an_owner_kind_the_api_server_has_yet_to_learn_is_retried_soon_and_quietly() {
    // Found on the real node: for up to 30 s after the chart installs the
    // CRDs, the API server's admission cannot map the parent's kind and
    // refuses every child's controller reference. The backoff would wait
    // as long again by then.
    let (client, mut api) = mock_client();
    let ctx = runtime(
        Endpoint::InProcess(std::sync::Arc::new(three_replicas_of_web)),
        client,
    );
    let refusal = json!({
        "apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 403,
        "reason": "Forbidden",
        "message": "deployments.apps \"web\" is forbidden: cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion example.com/v1 Kind Thing: no matches for kind \"Thing\" in version \"example.com/v1\"",
        "details": {"name": "web", "group": "apps", "kind": "deployments"}
    });
    let (action, (apply, status)) = scripted(reconcile_and_requeue(&ctx), async {
        let apply = answer(&mut api, 403, refusal.clone()).await;
        let status = answer(
            &mut api,
            200,
            serde_json::to_value(settled_parent()).unwrap(),
        )
        .await;
        (apply, status)
    })
    .await;
    // No Event: not the Warning of a failure, nor the Normal of an update
    // that did not happen.
    no_further_request(&mut api);
    assert_eq!(apply.path, "/apis/apps/v1/namespaces/shop/deployments/web");
    assert_wrote_ok_status(&status);
    let record = ctx.records.get(&key(&ctx)).unwrap();
    assert_eq!(record.outcome, Outcome::OwnerKindUnknown);
    assert_eq!(action, Action::requeue(backoff(0)), "the first step");
    // Later tries are at most 2 s apart, for long enough to outlast the
    // API server's 30 s; then it is a failure like any other.
    let refused = || {
        let status: kube::core::Status = serde_json::from_value(refusal.clone()).unwrap();
        ReconcileError::Children(crate::write::execute::ExecuteErrors(vec![
            crate::write::execute::ExecuteError::ApplyChild {
                kind: "Deployment".to_owned(),
                name: "web".to_owned(),
                source: kube::Error::Api(Box::new(status)),
            },
        ]))
    };
    let mut waits = vec![backoff(0)];
    while ctx.backoff.failures(&key(&ctx)) < OWNER_KIND_TRIES {
        let want = backoff(waits.len() as u32).min(OWNER_KIND_RETRY);
        let action = error_policy(cached(&ctx), &refused(), Arc::clone(&ctx));
        assert_eq!(action, Action::requeue(want), "try {}", waits.len());
        waits.push(want);
    }
    let waited: Duration = waits.iter().sum();
    assert!(
        waited > Duration::from_secs(30),
        "{waited:?} in {} tries",
        waits.len()
    );
    assert_eq!(
        error_policy(cached(&ctx), &refused(), Arc::clone(&ctx)),
        Action::requeue(backoff(OWNER_KIND_TRIES)),
        "past the tries, the whole backoff"
    );
}

#[tokio::test]
async fn customize_rules_select_related_objects_from_the_caches() {
    let (client, mut api) = mock_client();
    let ctl = Demo::default().build();
    let caches = context::caches(&client);
    let parents = caches.preload(&ctl.parent, vec![settled_parent()]);
    let deployments = ctl.children[0].resource.clone();
    let mut unrelated = owned_child();
    unrelated.metadata.name = Some("other".to_owned());
    unrelated.metadata.uid = Some("uid-other".to_owned());
    unrelated.metadata.owner_references = None;
    unrelated.metadata.labels = None;
    caches.preload(&deployments, vec![owned_child(), unrelated]);
    let found = deployments.clone();
    let discover: Discover = Arc::new(move |api_version: &str, resource: &str| {
        let hit = (api_version == "apps/v1" && resource == "deployments").then(|| found.clone());
        Box::pin(async move { hit })
    });
    let ctx = Context::new(
        ctl,
        HookTargets {
            // The sync hook reports in the status what it was sent.
            sync: context::hook(
                HookKind::Sync,
                Endpoint::InProcess(std::sync::Arc::new(|body, _| {
                    let req: serde_json::Value = serde_json::from_slice(body).unwrap();
                    let related: Vec<&String> = req["related"]["Deployment.apps/v1"]
                        .as_object()
                        .unwrap()
                        .keys()
                        .collect();
                    let children: Vec<&String> = req["children"]["Deployment.apps/v1"]
                        .as_object()
                        .unwrap()
                        .keys()
                        .collect();
                    Ok(serde_json::to_vec(&json!({
                        "status": {"related": related, "children": children,
                                   "controllerStatus": req["controller"]["status"]},
                        "children": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                      "metadata": {"name": "web"}, "spec": {"replicas": 1}}]
                    }))
                    .unwrap())
                })),
            ),
            finalize: None,
            customize: Some(context::hook(
                HookKind::Customize,
                Endpoint::InProcess(std::sync::Arc::new(|_, _| {
                    Ok(br#"{"relatedResources": [{"apiVersion": "apps/v1", "resource": "deployments", "names": ["other"]}]}"#.to_vec())
                })),
            )),
        },
        Shared {
            discover,
            ..context::shared(client, caches)
        },
    );
    worker::subscribe(&ctx);
    let (result, (apply, status)) =
        scripted(reconcile_cached(&ctx), apply_then_status(&mut api, 1)).await;
    no_further_request(&mut api);
    result.unwrap();
    assert_eq!(apply.method, "PATCH");
    assert_eq!(
        status.body[1]["value"],
        json!({"related": ["shop/other"], "children": ["shop/web"], "controllerStatus": {},
               "observedGeneration": 2})
    );
    // The answer is cached for the parent, and dropped once it is deleted.
    assert_eq!(ctx.customized.answers().len(), 1);
    parents.notify(&crate::controller::cache::Change::Deleted(Arc::new(
        CachedObject::of(&settled_parent()).unwrap(),
    )));
    assert_eq!(ctx.customized.answers().len(), 0);
}

static LOOP_HOOK_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[tokio::test]
async fn the_loop_coalesces_waiting_triggers_and_stops_on_request() {
    // The applier runs what the caches trigger: three triggers for a parent
    // that waits are one reconcile, and a stop ends the loop.
    let (client, mut api) = mock_client();
    let ctx = runtime(
        Endpoint::InProcess(std::sync::Arc::new(|_, _| {
            LOOP_HOOK_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(
                br#"{"children": [{"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web"}, "spec": {"replicas": 1}}]}"#
                    .to_vec(),
            )
        })),
        client,
    );
    // Whatever the reconcile writes is accepted.
    tokio::spawn(async move {
        loop {
            answer(&mut api, 200, owned_child_json(1)).await;
        }
    });
    for _ in 0..3 {
        ctx.enqueue(key(&ctx));
    }
    assert_eq!(ctx.queue.len(), 1, "one waiting key");
    let stop = CancellationToken::new();
    let running = tokio::spawn(worker::run(
        Arc::clone(&ctx),
        worker::Pace {
            workers: 2,
            debounce: Duration::ZERO,
        },
        Duration::from_secs(3600),
        stop.clone(),
    ));
    tokio::time::timeout(Duration::from_secs(10), async {
        while LOOP_HOOK_CALLS.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the parent was reconciled");
    // Nothing else is queued: no second call comes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(LOOP_HOOK_CALLS.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(ctx.queue.len(), 0, "nothing waits");
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the loop ends on stop")
        .unwrap();
}

/// A sync hook that wants `web` at the parent's `spec.replicas`, status
/// `{ok: true}`.
fn web_at_the_parents_replicas(
    body: &[u8],
    _: jiff::Timestamp,
) -> Result<Vec<u8>, metahook_core::HookError> {
    let request: serde_json::Value = serde_json::from_slice(body).unwrap();
    let replicas = request["parent"]["spec"]["replicas"].clone();
    Ok(serde_json::to_vec(&json!({
        "status": {"ok": true},
        "children": [{"apiVersion": "apps/v1", "kind": "Deployment",
                      "metadata": {"name": "web"}, "spec": {"replicas": replicas}}]
    }))
    .unwrap())
}

#[tokio::test]
async fn a_dequeued_parent_is_reconciled_as_the_cache_holds_it_not_as_it_was_handed_over() {
    // Found on the real node: the applier reads the parent when it takes
    // the key, and a change landing before the key leaves the queue sends
    // nothing (the key still waits). Reconciling the copy handed over lost
    // that change: a Hello scaled to 2 just then kept its Deployment at 1.
    let (client, mut api) = mock_client();
    let mut scaled = settled_parent();
    scaled.data["spec"] = json!({"replicas": 2});
    let ctx = runtime_with(
        Endpoint::InProcess(std::sync::Arc::new(web_at_the_parents_replicas)),
        client,
        scaled,
    );
    let mut handed = settled_parent();
    handed.data["spec"] = json!({"replicas": 1});
    let (result, ((apply, _status), _event)) = scripted(
        worker::reconcile_isolated(
            Arc::new(CachedObject::of(&handed).unwrap()),
            Arc::clone(&ctx),
        ),
        apply_status_event(&mut api, 2),
    )
    .await;
    no_further_request(&mut api);
    result.unwrap();
    assert_eq!(
        apply.body["spec"]["replicas"], 2,
        "the cached parent's scale"
    );

    // One gone from the cache meanwhile (deleted, or another shard's now)
    // is left alone.
    let mut gone = settled_parent();
    gone.metadata.name = Some("gone".to_owned());
    let action =
        worker::reconcile_isolated(Arc::new(CachedObject::of(&gone).unwrap()), Arc::clone(&ctx))
            .await
            .unwrap();
    no_further_request(&mut api);
    assert_eq!(action, Action::await_change());
}

#[tokio::test]
async fn each_reconcile_leaves_a_record_of_its_plan_and_outcome() {
    let (client, mut api) = mock_client();
    let ctx = runtime(
        Endpoint::InProcess(std::sync::Arc::new(three_replicas_of_web)),
        client,
    );
    let (action, _) = scripted(reconcile_and_requeue(&ctx), apply_status_event(&mut api, 3)).await;
    no_further_request(&mut api);
    assert_eq!(action, Action::requeue(Duration::from_secs(30)));
    let record = ctx.records.get(&key(&ctx)).expect("a record");
    assert_eq!(record.outcome, Outcome::Succeeded);
    assert_eq!(record.parent.name, "p");
    assert_eq!(record.parent.generation, Some(2));
    let ops: Vec<&str> = record.plan.iter().map(|s| s.op).collect();
    assert_eq!(ops, ["apply", "writeStatus", "event"]);
    assert_eq!(record.plan[0].kind.as_deref(), Some("Deployment"));
    let change = &record.plan[0].changed;
    assert_eq!(change.len(), 1, "{change:?}");
    assert_eq!(
        (change[0].path.as_str(), &change[0].from, &change[0].to),
        ("spec.replicas", &json!(1), &json!(3))
    );
    assert_eq!(record.children.desired, Some(1));
    assert_eq!(record.children.observed, 1);
    assert!(record.hook_seconds.is_some());
    assert_eq!(
        record.requeue.as_ref().map(|r| (r.after_seconds, r.reason)),
        Some((30.0, "resyncAfterSeconds"))
    );

    // A failed hook: the record says so, with the error and the backoff.
    let (client, mut api) = mock_client();
    let ctx = runtime(
        Endpoint::InProcess(std::sync::Arc::new(|_, _| Ok(b"not json".to_vec()))),
        client,
    );
    let (action, _event) = scripted(
        reconcile_and_requeue(&ctx),
        answer(
            &mut api,
            201,
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"}}),
        ),
    )
    .await;
    no_further_request(&mut api);
    let record = ctx.records.get(&key(&ctx)).expect("a record");
    assert_eq!(record.outcome, Outcome::Failed);
    assert!(
        record
            .error
            .as_deref()
            .is_some_and(|e| e.contains("could not be decoded")),
        "{:?}",
        record.error
    );
    assert!(record.plan.is_empty(), "nothing was done");
    assert_eq!(action, Action::requeue(backoff(0)));
    assert_eq!(
        record.requeue.map(|r| (r.after_seconds, r.reason)),
        Some((0.005, "backoff")),
        "the error policy's first step"
    );
}

#[test]
fn a_status_waits_while_the_budget_is_short_or_a_changed_child_settles() {
    use crate::decide::plan::StatusPace::{Deferrable, Now, Settle};
    let second = Duration::from_secs(1);
    let at = |ms: u64| Some(Duration::from_millis(ms));
    // Not waiting yet: with a settle window, only a pass that changes a
    // child defers (Settle); without one, never.
    assert_eq!(status_pace(false, second, None), Settle);
    assert_eq!(status_pace(false, Duration::ZERO, None), Now);
    // Waiting: until the window ends, then written.
    assert_eq!(status_pace(false, second, at(999)), Deferrable);
    assert_eq!(status_pace(false, second, at(1000)), Now);
    // A short budget defers whatever the window, up to STATUS_DEFERRAL.
    assert_eq!(status_pace(true, Duration::ZERO, None), Deferrable);
    assert_eq!(status_pace(true, second, at(29_999)), Deferrable);
    assert_eq!(status_pace(true, second, Some(STATUS_DEFERRAL)), Now);
}
