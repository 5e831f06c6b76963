//! Properties of the Hello hooks over generated requests: deterministic
//! bytes, no hot loop, and nothing lost when the spec is invalid.

use metahook_core::HookKind;
use metahook_core::Timestamp;
use metahook_testkit::requests::{Keys, object_map};
use proptest::prelude::*;
use serde_json::{Value, json};

const UID: &str = "3f1b6c7e-2a4d-4c8e-9b1f-7d2e5a6c9b01";

fn now() -> Timestamp {
    "2026-11-22T03:00:00Z".parse().expect("RFC 3339")
}

fn call(hook: HookKind, request: &Value) -> Vec<u8> {
    let handler = metahook_seeds::controller("hello")
        .and_then(|c| c.hook(hook))
        .expect("hello hook");
    handler(&serde_json::to_vec(request).expect("JSON"), now()).expect("hook answers")
}

fn response(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("JSON response")
}

/// An observed Deployment as the API server would hold one of ours.
#[derive(Debug, Clone)]
struct Observed {
    name: String,
    replicas: i32,
    image: String,
    ready: i32,
}

fn observed_json(o: &Observed) -> Value {
    let labels = json!({"app.kubernetes.io/name": "hello", "app.kubernetes.io/managed-by": "metahook",
                        "operator.fraim.co.jp/managed-by": "metahook"});
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": o.name, "namespace": "default", "uid": "d-uid", "resourceVersion": "9",
                     "labels": labels, "managedFields": [{"manager": "metacontroller", "operation": "Update"}],
                     "ownerReferences": [{"apiVersion": "fraim.co.jp/v1", "kind": "Hello", "name": "hello",
                                          "uid": UID, "controller": true}]},
        "spec": {"replicas": o.replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "hello", "image": o.image}]}}},
        "status": {"replicas": o.replicas, "readyReplicas": o.ready, "availableReplicas": o.ready,
                   "updatedReplicas": o.replicas}
    })
}

fn request(spec: Value, observed: &[Value], v2: bool, finalizing: bool) -> Value {
    let keys = if v2 { Keys::V2 } else { Keys::V1 };
    json!({
        "controller": {"metadata": {"name": "hello"}},
        "parent": {"apiVersion": "fraim.co.jp/v1", "kind": "Hello",
                   "metadata": {"name": "hello", "namespace": "default", "uid": UID, "generation": 3},
                   "spec": spec},
        "children": object_map("Deployment.apps/v1", observed, keys),
        "related": {},
        "finalizing": finalizing
    })
}

fn image() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("nginxdemos/hello:0.3-plain-text".to_owned()),
        "[a-z]{1,8}/[a-z]{1,8}:[0-9]\\.[0-9]",
    ]
}

fn observed() -> impl Strategy<Value = Observed> {
    (
        prop_oneof![Just("hello".to_owned()), "[a-z]{3,10}"],
        0..=20i32,
        image(),
        0..=20i32,
    )
        .prop_map(|(name, replicas, image, ready)| Observed {
            name,
            replicas,
            image,
            ready,
        })
}

/// A spec the hook must refuse, as it could reach the hook past the schema.
fn invalid_spec() -> impl Strategy<Value = Value> {
    prop_oneof![
        (21..10_000i32).prop_map(|r| json!({"replicas": r})),
        (-10_000..0i32).prop_map(|r| json!({"replicas": r})),
        (0..=20i32).prop_map(|r| json!({"replicas": r, "image": ""})),
        (0..=20i32).prop_map(|r| json!({"replicas": r, "image": "two words"})),
        Just(json!({"replicas": "two"})),
        Just(json!({})),
        Just(json!({"replicas": 3.5})),
    ]
}

proptest! {
    #[test]
    fn the_same_request_gives_the_same_bytes(
        replicas in -5..40i32, obs in proptest::collection::vec(observed(), 0..3), v2: bool, finalizing: bool,
    ) {
        let observed: Vec<Value> = obs.iter().map(observed_json).collect();
        let req = request(json!({"replicas": replicas}), &observed, v2, finalizing);
        let hook = if finalizing { HookKind::Finalize } else { HookKind::Sync };
        prop_assert_eq!(call(hook, &req), call(hook, &req));
    }

    /// Feed the desired children back as observed (with the Deployment's
    /// status as the cluster reports it) and the parent's status as written:
    /// the hook must answer the same, or Metacontroller loops.
    #[test]
    fn feeding_the_desired_state_back_changes_nothing(
        replicas in 0..=20i32, img in image(), obs in proptest::option::of(observed()), v2: bool,
    ) {
        let observed: Vec<Value> = obs.iter().map(observed_json).collect();
        let req = request(json!({"replicas": replicas, "image": img}), &observed, v2, false);
        let first = response(&call(HookKind::Sync, &req));
        let fed_back: Vec<Value> = first["children"]
            .as_array()
            .expect("children")
            .iter()
            .map(|child| {
                let mut child = child.clone();
                if let Some(o) = obs.as_ref().filter(|o| o.name == "hello") {
                    child["status"] = observed_json(o)["status"].clone();
                }
                child
            })
            .collect();
        let mut next = request(json!({"replicas": replicas, "image": img}), &fed_back, v2, false);
        next["parent"]["status"] = first["status"].clone();
        let second = response(&call(HookKind::Sync, &next));
        prop_assert_eq!(&second["children"], &first["children"]);
        prop_assert_eq!(&second["status"], &first["status"]);
    }

    /// Whatever is wrong with the spec, every observed Deployment stays in
    /// the desired set with its name, replicas and image; nothing new is
    /// created; the status says why.
    #[test]
    fn an_invalid_spec_never_drops_or_changes_a_child(
        spec in invalid_spec(), obs in proptest::collection::vec(observed(), 0..3), v2: bool,
    ) {
        let mut seen = std::collections::BTreeSet::new();
        let obs: Vec<Observed> = obs.into_iter().filter(|o| seen.insert(o.name.clone())).collect();
        let observed: Vec<Value> = obs.iter().map(observed_json).collect();
        let out = response(&call(HookKind::Sync, &request(spec, &observed, v2, false)));
        let children = out["children"].as_array().expect("children");
        prop_assert_eq!(children.len(), obs.len());
        for o in &obs {
            let held = children.iter().find(|c| c["metadata"]["name"] == o.name.as_str());
            prop_assert!(held.is_some(), "{} dropped", o.name);
            let held = held.expect("checked");
            prop_assert_eq!(&held["spec"]["replicas"], &json!(o.replicas));
            prop_assert_eq!(&held["spec"]["template"]["spec"]["containers"][0]["image"], &json!(o.image));
            prop_assert_eq!(&held["spec"]["selector"], &observed_json(o)["spec"]["selector"]);
        }
        let spec_valid = out["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "SpecValid"))
            .cloned()
            .expect("SpecValid condition");
        prop_assert_eq!(&spec_valid["status"], "False");
        prop_assert_eq!(&spec_valid["reason"], "InvalidSpec");
        prop_assert!(spec_valid["message"].as_str().unwrap_or("").starts_with("Invalid Hello spec: "));
    }

    /// A valid spec always desires exactly one Deployment named like the
    /// Hello with the requested replicas.
    #[test]
    fn a_valid_spec_desires_one_deployment_with_the_replicas(
        replicas in 0..=20i32, obs in proptest::collection::vec(observed(), 0..3), v2: bool,
    ) {
        let observed: Vec<Value> = obs.iter().map(observed_json).collect();
        let out = response(&call(HookKind::Sync, &request(json!({"replicas": replicas}), &observed, v2, false)));
        let children = out["children"].as_array().expect("children");
        prop_assert_eq!(children.len(), 1);
        prop_assert_eq!(&children[0]["metadata"]["name"], "hello");
        prop_assert_eq!(&children[0]["spec"]["replicas"], &json!(replicas));
    }

    /// finalize desires nothing and says finalized only when no Deployment
    /// is left.
    #[test]
    fn finalize_waits_for_every_deployment_to_go(
        obs in proptest::collection::vec(observed(), 0..3), v2: bool,
    ) {
        let observed: Vec<Value> = obs.iter().map(observed_json).collect();
        let out = response(&call(HookKind::Finalize, &request(json!({"replicas": 1}), &observed, v2, true)));
        prop_assert_eq!(&out["children"], &json!([]));
        prop_assert_eq!(&out["finalized"], &json!(obs.is_empty()));
    }
}
