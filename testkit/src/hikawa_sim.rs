//! A small Metacontroller for the Hikawa hook, in memory, on a fake clock:
//! it builds sync requests the way Metacontroller does (whole objects,
//! v1 or v2 keys), applies the response (creates what is new, swallowing
//! AlreadyExists; would update or delete the rest), and checks on every
//! call what must hold for any song. Shared by the simulation and the
//! property tests; everything goes through the public API and the registry.

use jiff::{SignedDuration, Timestamp};
use metahook_core::HookKind;
use metahook_seeds::hikawa::{self, Word};
use serde_json::{Value, json};
use std::collections::BTreeMap;

const ZUNDOKOS: &str = "Zundoko.zundokokiyoshi.kaitoy.github.com/v1beta1";
const KIYOSHIS: &str = "Kiyoshi.zundokokiyoshi.kaitoy.github.com/v1beta1";

/// When the simulated Hikawa is created: a whole second, as the API server
/// stores `creationTimestamp`.
pub fn t0() -> Timestamp {
    "2026-11-22T03:00:00Z".parse().expect("RFC 3339")
}

/// Which children a sync is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// Everything stored.
    Fresh,
    /// A cache one event behind: the newest child is not there yet.
    WithoutNewest,
}

/// One stored child, as the song log keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Said {
    pub kind: String,
    pub name: String,
    pub say: String,
    pub at: Timestamp,
}

/// The simulated cluster: one Hikawa and its children.
pub struct Sim {
    pub uid: String,
    pub name: String,
    pub interval: SignedDuration,
    pub spec: Value,
    pub v2_keys: bool,
    /// Call the hook twice on every state and insist on identical bytes.
    pub twice: bool,
    /// Stored children by name, with the order they were created in.
    store: BTreeMap<String, Value>,
    pub said: Vec<Said>,
    /// The parent's status as last written, and the one before it (for
    /// requests that see a stale parent).
    status: Value,
    previous_status: Value,
    resource_version: u64,
    pub calls: usize,
}

impl Sim {
    pub fn new(uid: &str, interval_millis: i64, max_zundokos: Option<u32>) -> Self {
        let mut spec = json!({ "intervalMillis": interval_millis });
        if let Some(max) = max_zundokos {
            spec["maxZundokos"] = json!(max);
        }
        Sim {
            uid: uid.to_owned(),
            name: "hikawa-sample".to_owned(),
            interval: SignedDuration::from_millis(interval_millis),
            spec,
            v2_keys: false,
            twice: false,
            store: BTreeMap::new(),
            said: Vec::new(),
            status: Value::Null,
            previous_status: Value::Null,
            resource_version: 100,
            calls: 0,
        }
    }

    /// The request Metacontroller would send.
    pub fn request(&self, view: View) -> Vec<u8> {
        let newest = self.said.last().map(|s| s.name.as_str());
        let mut zundokos = serde_json::Map::new();
        let mut kiyoshis = serde_json::Map::new();
        for (name, object) in &self.store {
            if view == View::WithoutNewest && Some(name.as_str()) == newest {
                continue;
            }
            let key = if self.v2_keys {
                format!("default/{name}")
            } else {
                name.clone()
            };
            let map = if object["kind"] == "Kiyoshi" {
                &mut kiyoshis
            } else {
                &mut zundokos
            };
            map.insert(key, object.clone());
        }
        // A stale cache also shows the parent's status from before.
        let status = match view {
            View::Fresh => &self.status,
            View::WithoutNewest => &self.previous_status,
        };
        let mut parent = json!({
            "apiVersion": hikawa::API_VERSION,
            "kind": "Hikawa",
            "metadata": {
                "name": self.name,
                "namespace": "default",
                "uid": self.uid,
                "generation": 1,
                "resourceVersion": "42",
                "creationTimestamp": t0().to_string(),
                "labels": { "controller-tools.k8s.io": "1.0" },
                "managedFields": [{ "manager": "kubectl", "operation": "Update",
                    "fieldsV1": { "f:spec": { "f:intervalMillis": {} } } }]
            },
            "spec": self.spec,
        });
        if !status.is_null() {
            parent["status"] = status.clone();
        }
        serde_json::to_vec(&json!({
            "controller": { "metadata": { "name": "hikawa" }, "spec": {}, "status": {} },
            "parent": parent,
            "children": { ZUNDOKOS: zundokos, KIYOSHIS: kiyoshis },
            "related": {},
            "finalizing": false,
        }))
        .expect("a request serialises")
    }

    /// Calls the hook the way the service does: bytes in, bytes out.
    pub fn call(&mut self, view: View, now: Timestamp) -> Vec<u8> {
        self.calls += 1;
        let hook = metahook_seeds::controller("hikawa")
            .and_then(|c| c.hook(HookKind::Sync))
            .expect("hikawa has a sync hook");
        hook(&self.request(view), now).expect("the hook accepts the request")
    }

    /// One reconcile: call the hook, check the response, apply it. Returns
    /// the response and whether a child was created.
    pub fn reconcile(&mut self, view: View, now: Timestamp) -> (Value, bool) {
        let bytes = self.call(view, now);
        if self.twice {
            assert_eq!(
                String::from_utf8_lossy(&self.call(view, now)),
                String::from_utf8_lossy(&bytes),
                "the same request gave different bytes"
            );
        }
        let response: Value = serde_json::from_slice(&bytes).expect("JSON");
        let created = self.apply(&response, view, now);
        (response, created)
    }

    /// What Metacontroller does with a response, with the checks every
    /// response must pass.
    fn apply(&mut self, response: &Value, view: View, now: Timestamp) -> bool {
        let keys: Vec<&str> = response
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        for key in &keys {
            assert!(
                ["status", "children", "resyncAfterSeconds"].contains(key),
                "unexpected response key {key}"
            );
        }
        let observed: Vec<String> = {
            let newest = self.said.last().map(|s| s.name.clone());
            self.store
                .keys()
                .filter(|n| !(view == View::WithoutNewest && Some(*n) == newest.as_ref()))
                .cloned()
                .collect()
        };
        let desired: BTreeMap<String, &Value> = response["children"]
            .as_array()
            .expect("children")
            .iter()
            .map(|c| (name_of(c), c))
            .collect();
        assert_eq!(
            desired.len(),
            response["children"].as_array().map_or(0, Vec::len),
            "two desired children share a name"
        );

        // Nothing observed is removed or changed.
        for name in &observed {
            let child = desired
                .get(name)
                .unwrap_or_else(|| panic!("observed child {name} would be deleted"));
            assert_same(&self.store[name], child);
        }
        // The parent's status counts what the hook was shown.
        let shown_zundokos = observed
            .iter()
            .filter(|n| self.store[*n]["kind"] == "Zundoko")
            .count();
        assert_eq!(
            response["status"]["numZundokosSaid"],
            json!(shown_zundokos),
            "numZundokosSaid is the Zundokos observed"
        );

        let new: Vec<&Value> = desired
            .iter()
            .filter(|(name, _)| !observed.contains(name))
            .map(|(_, c)| *c)
            .collect();
        assert!(new.len() <= 1, "{} new children in one call", new.len());
        let mut created = false;
        if let Some(child) = new.first() {
            let name = name_of(child);
            if let Some(stored) = self.store.get(&name) {
                // A stale cache: the same child with the same word again
                // (a fresh said-at, but the create fails with
                // AlreadyExists, so the stored one stands).
                assert_eq!(child["kind"], stored["kind"], "{name}: kind");
                assert_eq!(child["spec"], stored["spec"], "{name}: another word");
            } else {
                self.create(child, now);
                created = true;
            }
        }
        self.previous_status = std::mem::replace(&mut self.status, response["status"].clone());
        self.status["observedGeneration"] = json!(1);
        created
    }

    fn create(&mut self, child: &Value, now: Timestamp) {
        let name = name_of(child);
        let kind = child["kind"].as_str().expect("kind").to_owned();
        let say = child["spec"]["say"].as_str().expect("say").to_owned();
        let at: Timestamp = child["metadata"]["annotations"][hikawa::SAID_AT]
            .as_str()
            .expect("a new child carries its said-at")
            .parse()
            .expect("said-at is RFC 3339");
        assert_eq!(at, now, "{name} is said when it is first desired");

        // Never early: an interval after the previous word, or after the
        // Hikawa's creation for the first.
        let since = self.said.last().map_or(t0(), |s| s.at);
        assert!(
            at >= since + self.interval,
            "{name} said at {at}, before {since} + {:?}",
            self.interval
        );
        // Nothing after the Kiyoshi; the Kiyoshi only after Zun×4+Doko,
        // and no Zundoko after it.
        assert!(
            !self.said.iter().any(|s| s.kind == "Kiyoshi"),
            "{name} said after the Kiyoshi"
        );
        let ready = hikawa::ready_to_kiyoshi(&self.words());
        match kind.as_str() {
            "Kiyoshi" => {
                assert!(ready, "Kiyoshi before Zun Zun Zun Zun Doko");
                assert_eq!(name, format!("{}-kiyoshi", self.name));
                assert_eq!(say, "Kiyoshi!");
            }
            "Zundoko" => {
                assert!(!ready, "{name} said after Zun Zun Zun Zun Doko");
                let n = self.words().len() as u32 + 1;
                assert_eq!(name, hikawa::zundoko_name(&self.name, n), "names in order");
                assert_eq!(say, hikawa::word(&self.uid, n).as_str());
            }
            other => panic!("unexpected kind {other}"),
        }

        // Stored as the API server and Metacontroller leave it.
        self.resource_version += 1;
        let mut stored = (*child).clone();
        let meta = &mut stored["metadata"];
        meta["uid"] = json!(format!("child-{}", self.resource_version));
        meta["resourceVersion"] = json!(self.resource_version.to_string());
        meta["generation"] = json!(1);
        meta["creationTimestamp"] = json!(truncate_to_second(now).to_string());
        meta["labels"] = json!({ "controller-uid": self.uid });
        meta["annotations"]["metacontroller.k8s.io/last-applied-configuration"] =
            json!(child.to_string());
        meta["ownerReferences"] = json!([{
            "apiVersion": hikawa::API_VERSION, "kind": "Hikawa", "name": self.name,
            "uid": self.uid, "controller": true, "blockOwnerDeletion": true
        }]);
        meta["managedFields"] = json!([{ "manager": "metacontroller", "operation": "Update" }]);
        self.store.insert(name.clone(), stored);
        self.said.push(Said {
            kind,
            name,
            say,
            at,
        });
    }

    /// The Zundokos' words in the order they were said.
    pub fn words(&self) -> Vec<Word> {
        self.said
            .iter()
            .filter(|s| s.kind == "Zundoko")
            .map(|s| {
                if s.say == "Zun" {
                    Word::Zun
                } else {
                    Word::Doko
                }
            })
            .collect()
    }

    pub fn kiyoshis(&self) -> usize {
        self.said.iter().filter(|s| s.kind == "Kiyoshi").count()
    }

    pub fn status(&self) -> &Value {
        &self.status
    }
}

/// A deterministic stream of choices for a chaotic run (SplitMix64).
pub struct Chaos(u64);

impl Chaos {
    pub fn new(seed: u64) -> Self {
        Chaos(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True one time in `n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.next_u64().is_multiple_of(n)
    }

    /// A fraction in [0, 1).
    pub fn fraction(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Plays Metacontroller until the song is over: sync; when a child was
/// created, sync again at once (its watch event); otherwise sync when the
/// hook asked to. With `chaos`, syncs also come early and late, and some
/// see a cache that has not caught up yet. Returns the final response.
pub fn play(sim: &mut Sim, mut chaos: Option<Chaos>) -> Value {
    let mut now = t0();
    // Far more calls than any song of at most 10,000 words needs.
    let limit = 1_000_000;
    loop {
        assert!(sim.calls < limit, "the song never ends");
        if let Some(c) = chaos.as_mut()
            && !sim.said.is_empty()
            && c.one_in(3)
        {
            sim.reconcile(View::WithoutNewest, now);
        }
        let (response, created) = sim.reconcile(View::Fresh, now);
        let resync = response.get("resyncAfterSeconds").and_then(Value::as_f64);
        if created {
            // The new child's watch event, a few milliseconds later.
            let ms = chaos.as_mut().map_or(0, |c| c.next_u64() % 30);
            now += SignedDuration::from_millis(ms as i64);
            continue;
        }
        match resync {
            Some(seconds) => {
                assert!(
                    seconds > 0.0,
                    "resyncAfterSeconds {seconds} is not positive"
                );
                assert!(
                    seconds <= sim.interval.as_secs_f64(),
                    "resync {seconds}s is longer than the interval"
                );
                // Early or late: any sync may come, from any event.
                let factor = chaos.as_mut().map_or(1.0, |c| c.fraction() * 1.5);
                now += nanos_ceil(seconds * factor);
            }
            None => {
                let phase = &response["status"]["phase"];
                assert!(
                    phase == "Kiyoshied" || phase == "GaveUp",
                    "no resync, but the song is not over: {phase}"
                );
                return response;
            }
        }
    }
}

fn nanos_ceil(seconds: f64) -> SignedDuration {
    SignedDuration::from_nanos((seconds * 1e9).ceil() as i64)
}

fn truncate_to_second(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).expect("in range")
}

fn name_of(child: &Value) -> String {
    child["metadata"]["name"]
        .as_str()
        .expect("a child has a name")
        .to_owned()
}

/// A desired child equals the stored one in everything the hook owns.
fn assert_same(stored: &Value, desired: &Value) {
    let name = name_of(stored);
    assert_eq!(desired["kind"], stored["kind"], "{name}: kind changed");
    assert_eq!(
        desired["apiVersion"], stored["apiVersion"],
        "{name}: apiVersion changed"
    );
    assert_eq!(desired["spec"], stored["spec"], "{name}: word changed");
    assert_eq!(
        desired["metadata"]["annotations"][hikawa::SAID_AT],
        stored["metadata"]["annotations"][hikawa::SAID_AT],
        "{name}: said-at changed"
    );
    assert_eq!(
        desired["metadata"]["namespace"], "default",
        "{name}: namespace"
    );
}
