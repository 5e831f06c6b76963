//! The elector against one Lease kept by a fake API server that answers
//! as kube-apiserver does (updates guarded by `resourceVersion`, 409 on a
//! stale one), on tokio's paused clock: when a leader stops writing, when a
//! standby may take over, and what each write carries.

use super::fence::Fence;
use super::*;
use crate::test_support::scripted_api::mock_client;
use http::{Request, Response};
use kube::client::Body;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tower_test::mock::SendResponse;

const NS: &str = "shop";
const NAME: &str = "metahook-driver";
const PATH: &str = "/apis/coordination.k8s.io/v1/namespaces/shop/leases/metahook-driver";

/// How the fake API server answers writes to the Lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Writes {
    Taken,
    /// 503, as an API server that lost etcd.
    Refused,
    /// Never answered, as a paused API server.
    Hang,
}

/// One write the fake saw: when, and the holder it asked for.
#[derive(Debug, Clone)]
struct Seen {
    at: Instant,
    method: String,
    holder: Option<String>,
    guarded_by: Option<String>,
    answered: u16,
}

#[derive(Default)]
struct State {
    lease: Option<Value>,
    revision: u64,
    writes: Option<Writes>,
    seen: Vec<Seen>,
    /// Watches and hung writes, kept open.
    held: Vec<SendResponse<Response<Body>>>,
}

#[derive(Clone, Default)]
struct FakeApi(Arc<Mutex<State>>);

impl FakeApi {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap()
    }

    /// The Lease as another replica left it.
    fn put(&self, holder: Option<&str>, seconds: i32) {
        let mut state = self.state();
        state.revision += 1;
        let revision = state.revision;
        state.lease = Some(json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": NAME, "namespace": NS, "resourceVersion": revision.to_string()},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": seconds,
                     "renewTime": format!("2026-11-26T00:00:{:02}.000000Z", revision % 60)},
        }));
    }

    fn writes(&self, writes: Writes) {
        self.state().writes = Some(writes);
    }

    fn seen(&self) -> Vec<Seen> {
        self.state().seen.clone()
    }

    fn holder(&self) -> Option<String> {
        let state = self.state();
        state.lease.as_ref()?["spec"]["holderIdentity"]
            .as_str()
            .map(str::to_owned)
    }

    /// A client whose requests this fake answers, until the test ends.
    fn client(&self) -> Client {
        let (client, mut handle) = mock_client();
        let fake = self.clone();
        tokio::spawn(async move {
            while let Some((request, send)) = handle.next_request().await {
                fake.answer(request, send).await;
            }
        });
        client
    }

    async fn answer(&self, request: Request<Body>, send: SendResponse<Response<Body>>) {
        let method = request.method().to_string();
        let query = request.uri().query().unwrap_or_default().to_owned();
        let path = request.uri().path().to_owned();
        let body = request.into_body().collect_bytes().await.unwrap();
        let body: Value = if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&body).unwrap()
        };
        let mut state = self.state();
        let (code, answer) = match method.as_str() {
            "GET" if query.contains("watch=true") => {
                state.held.push(send);
                return;
            }
            "GET" if path == PATH => match &state.lease {
                Some(lease) => (200, lease.clone()),
                None => (404, status(404, "NotFound")),
            },
            "GET" => {
                let items: Vec<Value> = state.lease.iter().cloned().collect();
                let revision = state.revision.to_string();
                (
                    200,
                    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "LeaseList",
                           "metadata": {"resourceVersion": revision}, "items": items}),
                )
            }
            _ => {
                let writes = state.writes.unwrap_or(Writes::Taken);
                let mut seen = Seen {
                    at: Instant::now(),
                    method: method.clone(),
                    holder: body["spec"]["holderIdentity"].as_str().map(str::to_owned),
                    guarded_by: body["metadata"]["resourceVersion"]
                        .as_str()
                        .map(str::to_owned),
                    answered: 0,
                };
                let (code, answer) = match writes {
                    Writes::Hang => {
                        state.seen.push(seen);
                        state.held.push(send);
                        return;
                    }
                    Writes::Refused => (503, status(503, "ServiceUnavailable")),
                    Writes::Taken => write(&mut state, &method, body),
                };
                seen.answered = code;
                state.seen.push(seen);
                (code, answer)
            }
        };
        send.send_response(
            Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(Body::from(serde_json::to_vec(&answer).unwrap()))
                .unwrap(),
        );
    }
}

fn status(code: u16, reason: &str) -> Value {
    crate::test_support::scripted_api::status_body(code, reason)
}

/// A create or a guarded update, as the API server takes them.
fn write(state: &mut State, method: &str, mut body: Value) -> (u16, Value) {
    let current = state
        .lease
        .as_ref()
        .map(|l| l["metadata"]["resourceVersion"].clone());
    match (method, current) {
        ("POST", Some(_)) => return (409, status(409, "AlreadyExists")),
        ("PUT", None) => return (404, status(404, "NotFound")),
        ("PUT", Some(current)) if body["metadata"]["resourceVersion"] != current => {
            return (409, status(409, "Conflict"));
        }
        _ => {}
    }
    state.revision += 1;
    body["metadata"]["resourceVersion"] = json!(state.revision.to_string());
    state.lease = Some(body.clone());
    (if method == "POST" { 201 } else { 200 }, body)
}

fn settings(identity: &str) -> LeaderSettings {
    LeaderSettings::new(NAME.to_owned(), NS.to_owned(), identity.to_owned())
}

async fn lead(fake: &FakeApi, identity: &str) -> (Leadership, Fence) {
    let fence = Fence::closed();
    let leadership = acquire(
        fake.client(),
        &settings(identity),
        &fence,
        &CancellationToken::new(),
    )
    .await
    .unwrap()
    .expect("leading");
    (leadership, fence)
}

#[tokio::test(start_paused = true)]
async fn a_free_lease_is_taken_by_an_update_guarded_by_the_version_read() {
    let fake = FakeApi::default();
    fake.put(None, 15);
    let (_leadership, fence) = lead(&fake, "a").await;
    assert!(fence.permits());
    let seen = fake.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].method, "PUT");
    assert_eq!(seen[0].holder.as_deref(), Some("a"));
    assert_eq!(seen[0].guarded_by.as_deref(), Some("1"));
    assert_eq!(fake.holder().as_deref(), Some("a"));
}

#[tokio::test(start_paused = true)]
async fn a_missing_lease_is_created_held() {
    let fake = FakeApi::default();
    let (_leadership, fence) = lead(&fake, "a").await;
    assert!(fence.permits());
    assert_eq!(fake.seen()[0].method, "POST");
    assert_eq!(fake.holder().as_deref(), Some("a"));
}

#[tokio::test(start_paused = true)]
async fn a_standby_takes_an_unrenewed_lease_only_after_its_whole_term() {
    let fake = FakeApi::default();
    fake.put(Some("b"), 15);
    let start = Instant::now();
    let (_leadership, _fence) = lead(&fake, "a").await;
    let taken = fake.seen().into_iter().find(|s| s.answered == 200).unwrap();
    assert!(
        taken.at >= start + Duration::from_secs(15),
        "taken {:?} after it was first seen",
        taken.at - start
    );
    assert_eq!(fake.holder().as_deref(), Some("a"));
}

#[tokio::test(start_paused = true)]
async fn a_standby_that_loses_the_race_for_a_free_lease_does_not_lead() {
    let fake = FakeApi::default();
    fake.put(None, 15);
    // Another replica writes between our read and our write: the update
    // carries the old version and gets a 409.
    let racer = {
        let fake = fake.clone();
        let (client, mut handle) = mock_client();
        tokio::spawn(async move {
            // The first read is answered, then someone else takes it.
            let (request, send) = handle.next_request().await.unwrap();
            fake.answer(request, send).await;
            fake.put(Some("b"), 15);
            while let Some((request, send)) = handle.next_request().await {
                fake.answer(request, send).await;
            }
        });
        client
    };
    let fence = Fence::closed();
    let stop = CancellationToken::new();
    let standby = tokio::spawn({
        let (fence, stop) = (fence.clone(), stop.clone());
        async move { acquire(racer, &settings("a"), &fence, &stop).await }
    });
    // Well within b's term: still a standby, its one write refused.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(!fence.permits());
    assert_eq!(fake.holder().as_deref(), Some("b"));
    let seen = fake.seen();
    assert_eq!(
        seen.iter().map(|s| s.answered).collect::<Vec<_>>(),
        [409],
        "{seen:?}"
    );
    stop.cancel();
    assert!(standby.await.unwrap().unwrap().is_none());
}

#[tokio::test(start_paused = true)]
async fn a_leader_whose_renewals_fail_stops_writing_at_the_renew_deadline() {
    for failure in [Writes::Refused, Writes::Hang] {
        let fake = FakeApi::default();
        fake.put(None, 15);
        let (mut leadership, fence) = lead(&fake, "a").await;
        let acquired = fake.seen()[0].at;
        fake.writes(failure);
        leadership.lost().await;
        assert!(!fence.permits());
        // The deadline counts from when the last renewal that landed was
        // sent: here, the acquisition.
        assert_eq!(
            Instant::now() - acquired,
            Duration::from_secs(10),
            "{failure:?}"
        );
        // Before the term a standby waits out (15 s).
        assert!(Instant::now() < acquired + Duration::from_secs(15));
    }
}

#[tokio::test(start_paused = true)]
async fn renewals_keep_the_term_and_each_moves_the_deadline() {
    let fake = FakeApi::default();
    fake.put(None, 15);
    let (mut leadership, fence) = lead(&fake, "a").await;
    let start = Instant::now();
    tokio::select! {
        () = leadership.lost() => panic!("lost while renewing"),
        () = tokio::time::sleep(Duration::from_secs(60)) => {}
    }
    assert!(fence.permits());
    let renewals = fake.seen();
    assert!(renewals.len() >= 29, "{} renewals in 60 s", renewals.len());
    assert!(
        renewals
            .iter()
            .all(|s| s.answered == 200 && s.method == "PUT")
    );
    // Each renewal is guarded by the version the previous one wrote.
    for pair in renewals.windows(2) {
        let written: u64 = pair[0].guarded_by.as_deref().unwrap().parse().unwrap();
        assert_eq!(
            pair[1].guarded_by.as_deref(),
            Some((written + 1).to_string().as_str())
        );
    }
    // Fail from now on: the last renewal was sent at most a retry period
    // ago, so the writes stop within the renew deadline of it.
    fake.writes(Writes::Refused);
    let last = fake.seen().last().unwrap().at;
    leadership.lost().await;
    assert_eq!(Instant::now() - last, Duration::from_secs(10));
    assert!(start.elapsed() > Duration::from_secs(60));
}

#[tokio::test(start_paused = true)]
async fn a_renewal_that_finds_another_holder_stops_the_writes_at_once() {
    let fake = FakeApi::default();
    fake.put(None, 15);
    let (mut leadership, fence) = lead(&fake, "a").await;
    // Someone took it (an operator, by hand): our next guarded renewal
    // gets a 409, the read shows b.
    fake.put(Some("b"), 15);
    let taken = Instant::now();
    leadership.lost().await;
    assert!(!fence.permits());
    assert!(Instant::now() - taken <= Duration::from_secs(2));
    assert_eq!(fake.holder().as_deref(), Some("b"), "b's hold stands");
}

#[tokio::test(start_paused = true)]
async fn a_release_shuts_the_fence_before_freeing_the_lease() {
    let fake = FakeApi::default();
    fake.put(None, 15);
    let (leadership, fence) = lead(&fake, "a").await;
    let watcher = tokio::spawn({
        let fence = fence.clone();
        async move {
            fence.shut().await;
            Instant::now()
        }
    });
    leadership.release().await;
    let shut = watcher.await.unwrap();
    let release = fake.seen().into_iter().last().unwrap();
    assert_eq!(release.method, "PUT");
    assert_eq!(release.holder, None);
    assert_eq!(release.answered, 200);
    assert!(shut <= release.at);
    assert!(!fence.permits());
    assert_eq!(fake.holder(), None);
}

#[tokio::test(start_paused = true)]
async fn a_release_after_another_took_over_leaves_the_lease_alone() {
    let fake = FakeApi::default();
    fake.put(None, 15);
    let (leadership, _fence) = lead(&fake, "a").await;
    fake.put(Some("b"), 15);
    leadership.release().await;
    assert_eq!(fake.holder().as_deref(), Some("b"));
    let last = fake.seen().into_iter().last().unwrap();
    assert_eq!(last.answered, 409, "the guarded release was refused");
}

#[tokio::test(start_paused = true)]
async fn without_its_watch_a_standby_still_finds_a_released_lease_at_the_terms_end() {
    let fake = FakeApi::default();
    fake.put(Some("b"), 15);
    let start = Instant::now();
    let fence = Fence::closed();
    let standby = tokio::spawn({
        let (client, fence) = (fake.client(), fence.clone());
        async move {
            acquire(client, &settings("a"), &fence, &CancellationToken::new())
                .await
                .unwrap()
                .map(|_| Instant::now())
        }
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    // The fake's watch never speaks: the standby learns of the release by
    // reading at the end of b's term as it saw it.
    fake.put(None, 15);
    let led = standby.await.unwrap().unwrap();
    assert_eq!(led - start, Duration::from_secs(15));
    assert!(fence.permits());
    assert_eq!(fake.holder().as_deref(), Some("a"));
}

#[test]
fn timings_that_could_let_two_lead_are_refused() {
    let mut s = settings("a");
    assert!(s.check().is_ok());
    s.renew_deadline = Duration::from_secs(15);
    assert!(s.check().is_err(), "renew deadline = term");
    s.renew_deadline = Duration::from_secs(10);
    s.retry_period = Duration::from_secs(10);
    assert!(s.check().is_err(), "retry period = renew deadline");
    s.retry_period = Duration::from_secs(2);
    s.lease_duration = Duration::from_millis(15_500);
    assert!(s.check().is_err(), "not whole seconds");
}

#[tokio::test(start_paused = true)]
async fn a_release_the_api_server_never_answers_does_not_hold_the_shutdown() {
    let fake = FakeApi::default();
    fake.put(None, 15);
    let (leadership, fence) = lead(&fake, "a").await;
    fake.writes(Writes::Hang);
    let began = Instant::now();
    leadership.release().await;
    assert_eq!(began.elapsed(), RELEASE_WITHIN);
    assert!(!fence.permits());
    assert_eq!(
        fake.holder().as_deref(),
        Some("a"),
        "the Lease ends with its term"
    );
}
