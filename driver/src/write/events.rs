//! Kubernetes Events (`events.k8s.io/v1`) on parents.
//!
//! Each object gets at most `--events-burst` Events at once, then one per
//! `1 / --events-qps` seconds (Metacontroller's flags and defaults: 25, then
//! one per 5 minutes): an object failing in a loop cannot spend the API
//! budget on Events. What is over its limit is dropped (and logged).
//!
//! Like kube-rs' `Recorder`, a repeat of an event within a few minutes
//! becomes a series (one object, a count) instead of a new object; unlike
//! it, the note is part of what makes two events the same, so a new error
//! message shows up as a new event instead of bumping the count of an event
//! that still shows the old message.

use crate::client::throttle::{Budget, TokioClock};
use governor::RateLimiter;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::HashMapStateStore;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Mutex;

/// Metacontroller's `--events-burst` and `--events-qps` defaults.
pub const EVENTS_BURST: NonZeroU32 = match NonZeroU32::new(25) {
    Some(burst) => burst,
    None => NonZeroU32::MIN,
};
pub const EVENTS_QPS: f64 = 1.0 / 300.0;

/// How many keys the limiter holds before it forgets the objects whose
/// allowance is full again (as if they had never had an Event).
const LIMITER_TIDY_AT: usize = 4096;

type PerObject = RateLimiter<String, HashMapStateStore<String>, TokioClock, NoOpMiddleware<Nanos>>;

/// How long a repeat joins the previous event's series.
const SERIES_WINDOW: jiff::SignedDuration = jiff::SignedDuration::from_mins(6);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    uid: String,
    type_: String,
    reason: String,
    note: String,
}

/// What became of one Event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// Created, or counted into its series.
    Sent,
    /// Not sent: the object is over its limit.
    Dropped,
}

pub struct EventPublisher {
    client: Client,
    controller: String,
    instance: String,
    recent: Mutex<HashMap<Key, Event>>,
    per_object: PerObject,
}

impl EventPublisher {
    /// `per_object`: how many Events one object may get (`--events-qps`,
    /// `--events-burst`).
    pub fn new(client: Client, controller: &str, instance: &str, per_object: Budget) -> Self {
        EventPublisher {
            client,
            controller: controller.to_owned(),
            instance: instance.to_owned(),
            recent: Mutex::new(HashMap::new()),
            per_object: RateLimiter::hashmap_with_clock(per_object.quota(), TokioClock::new()),
        }
    }

    /// Publishes (or repeats) an event about `regarding`, unless the object
    /// is over its limit.
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        type_: &str,
        reason: &str,
        action: &str,
        note: &str,
    ) -> Result<Published, kube::Error> {
        let uid = regarding.uid.clone().unwrap_or_default();
        if self.per_object.len() >= LIMITER_TIDY_AT {
            self.per_object.retain_recent();
        }
        if self.per_object.check_key(&uid).is_err() {
            tracing::debug!(object = ?regarding.name, reason, "event dropped: over the per-object limit");
            return Ok(Published::Dropped);
        }
        let now = jiff::Timestamp::now();
        let key = Key {
            uid,
            type_: type_.to_owned(),
            reason: reason.to_owned(),
            note: note.to_owned(),
        };
        let previous = {
            let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
            recent.retain(|_, e| last_seen(e).is_some_and(|t| t + SERIES_WINDOW > now));
            recent.get(&key).cloned()
        };
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let event = match previous {
            Some(mut event) => {
                let count = event.series.as_ref().map_or(2, |s| s.count + 1);
                event.series = Some(EventSeries {
                    count,
                    last_observed_time: MicroTime(now),
                });
                let name = event.name_any();
                let patch = serde_json::json!({"series": event.series});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                event
            }
            None => {
                let event = Event {
                    metadata: ObjectMeta {
                        name: Some(format!(
                            "{}.{:x}",
                            regarding.name.as_deref().unwrap_or(&self.controller),
                            now.as_nanosecond()
                        )),
                        namespace: Some(namespace),
                        ..ObjectMeta::default()
                    },
                    event_time: Some(MicroTime(now)),
                    type_: Some(type_.to_owned()),
                    reason: Some(reason.to_owned()),
                    action: Some(action.to_owned()),
                    note: Some(note.to_owned()),
                    regarding: Some(regarding.clone()),
                    reporting_controller: Some(self.controller.clone()),
                    reporting_instance: Some(self.instance.clone()),
                    ..Event::default()
                };
                api.create(&PostParams::default(), &event).await?;
                event
            }
        };
        self.recent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, event);
        Ok(Published::Sent)
    }
}

fn last_seen(event: &Event) -> Option<jiff::Timestamp> {
    event
        .series
        .as_ref()
        .map(|s| s.last_observed_time.0)
        .or_else(|| event.event_time.as_ref().map(|t| t.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::scripted_api::{answer, mock_client, no_further_request, scripted};
    use serde_json::json;

    fn default_limit() -> Budget {
        Budget::new(EVENTS_QPS, EVENTS_BURST).unwrap()
    }

    fn regarding() -> ObjectReference {
        ObjectReference {
            api_version: Some("example.com/v1".to_owned()),
            kind: Some("Thing".to_owned()),
            name: Some("p".to_owned()),
            namespace: Some("shop".to_owned()),
            uid: Some("p1".to_owned()),
            ..ObjectReference::default()
        }
    }

    #[tokio::test]
    async fn repeats_become_a_series_and_new_notes_new_events() {
        let (client, mut api) = mock_client();
        let events = EventPublisher::new(client, "metahook", "test", default_limit());
        let target = regarding();
        let publish =
            |note: &'static str| events.publish(&target, "Warning", "SyncError", "Reconcile", note);
        let ok =
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "x"}});
        let (r, first) =
            scripted(publish("Sync error: a"), answer(&mut api, 201, ok.clone())).await;
        no_further_request(&mut api);
        r.unwrap();
        assert_eq!(
            (first.method.as_str(), first.path.as_str()),
            ("POST", "/apis/events.k8s.io/v1/namespaces/shop/events")
        );
        assert_eq!(first.body["note"], "Sync error: a");
        assert_eq!(first.body["reportingController"], "metahook");
        let (r, repeat) =
            scripted(publish("Sync error: a"), answer(&mut api, 200, ok.clone())).await;
        no_further_request(&mut api);
        r.unwrap();
        assert_eq!(repeat.method, "PATCH");
        assert_eq!(
            repeat.path,
            format!(
                "/apis/events.k8s.io/v1/namespaces/shop/events/{}",
                first.body["metadata"]["name"].as_str().unwrap()
            )
        );
        assert_eq!(repeat.body["series"]["count"], 2);
        let (r, other) = scripted(publish("Sync error: b"), answer(&mut api, 201, ok)).await;
        no_further_request(&mut api);
        r.unwrap();
        assert_eq!(other.method, "POST");
        assert_eq!(other.body["note"], "Sync error: b");
    }

    #[tokio::test(start_paused = true)]
    async fn an_object_gets_at_most_its_burst_then_one_per_period() {
        let (client, mut api) = mock_client();
        let limit = Budget::new(1.0 / 60.0, NonZeroU32::new(2).unwrap()).unwrap();
        let events = EventPublisher::new(client, "metahook", "test", limit);
        let ok =
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "x"}});
        let hot = regarding();
        // Two notes (two new Events) fit the burst of 2.
        for note in ["a", "b"] {
            let (r, seen) = scripted(
                events.publish(&hot, "Warning", "SyncError", "Reconcile", note),
                answer(&mut api, 201, ok.clone()),
            )
            .await;
            r.unwrap();
            assert_eq!(seen.method, "POST");
        }
        // A third, however new, sends nothing.
        let third = events
            .publish(&hot, "Warning", "SyncError", "Reconcile", "c")
            .await
            .unwrap();
        assert_eq!(third, Published::Dropped);
        no_further_request(&mut api);
        // Another object has its own allowance.
        let mut other = regarding();
        other.uid = Some("p2".to_owned());
        let (r, _) = scripted(
            events.publish(&other, "Warning", "SyncError", "Reconcile", "a"),
            answer(&mut api, 201, ok.clone()),
        )
        .await;
        r.unwrap();
        // One period later, the hot object may have one more.
        tokio::time::advance(std::time::Duration::from_secs(61)).await;
        let (r, seen) = scripted(
            events.publish(&hot, "Warning", "SyncError", "Reconcile", "d"),
            answer(&mut api, 201, ok),
        )
        .await;
        assert_eq!(r.unwrap(), Published::Sent);
        assert_eq!(seen.body["note"], "d");
        let fifth = events
            .publish(&hot, "Warning", "SyncError", "Reconcile", "e")
            .await
            .unwrap();
        assert_eq!(fifth, Published::Dropped);
        no_further_request(&mut api);
    }
}
