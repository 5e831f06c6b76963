//! Properties of the Foo controller, through the registry's bytes-in,
//! bytes-out handlers (the path the service and `render` take):
//!
//! - the same request gives byte-identical responses, whichever key version;
//! - feeding the desired children back as observed gives the same children
//!   and status (no hot loop);
//! - an invalid spec never drops or changes an observed child;
//! - a Deployment this Foo does not control is never desired.

use metahook_core::HookKind;
use metahook_core::Timestamp;
use metahook_testkit::requests::{Keys, object_map};
use proptest::prelude::*;
use proptest::sample::{select, subsequence};
use serde_json::{Value, json};

const FOO: &str = "example-foo";
const FOO_UID: &str = "7c2e9a41-3b5d-4f6a-8e1c-2d4b6f8a0c13";
const OTHER_UID: &str = "b4d6f8a0-1c3e-4a5b-9d7f-0e2c4a6b8d9f";
const NS: &str = "default";
const NAMES: [&str; 3] = ["foo-deployment", "foo-deployment-v2", "old-deployment"];

fn now() -> Timestamp {
    "2026-11-22T03:00:00Z".parse().expect("RFC 3339")
}

fn call(hook: HookKind, request: &Value) -> Vec<u8> {
    let handler = metahook_seeds::controller("foo")
        .and_then(|c| c.hook(hook))
        .expect("foo has the hook");
    let body = serde_json::to_vec(request).expect("encodes");
    handler(&body, now()).expect("the hook accepts the request")
}

fn sync(request: &Value) -> Value {
    serde_json::from_slice(&call(HookKind::Sync, request)).expect("JSON response")
}

/// Replica counts a Deployment reports: (replicas, ready, available, updated).
type Counts = (i32, i32, i32, i32);

fn counts_status(c: Counts) -> Value {
    json!({"observedGeneration": 1, "replicas": c.0, "readyReplicas": c.1,
           "availableReplicas": c.2, "updatedReplicas": c.3})
}

/// A Deployment as Metacontroller would send it for a child this Foo
/// controls (the controller-uid label and the owner reference added).
fn owned(name: &str, replicas: i32, image: &str, counts: Counts) -> Value {
    let labels = json!({"app": "nginx", "controller": FOO});
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": name, "namespace": NS, "uid": format!("uid-{name}"), "generation": 1,
            "labels": {"app": "nginx", "controller": FOO, "controller-uid": FOO_UID},
            "ownerReferences": [{"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
                                 "name": FOO, "uid": FOO_UID, "controller": true,
                                 "blockOwnerDeletion": true}],
        },
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "nginx", "image": image}]}}},
        "status": counts_status(counts),
    })
}

/// Who a foreign Deployment belongs to.
#[derive(Debug, Clone, Copy)]
enum Owner {
    Nothing,
    OtherController,
    /// This Foo, but not as controller: still not the Foo's to manage.
    ThisFooNotController,
}

fn foreign(name: &str, owner: Owner) -> Value {
    let refs = match owner {
        Owner::Nothing => json!([]),
        Owner::OtherController => json!([{"apiVersion": "samplecontroller.k8s.io/v1alpha1",
            "kind": "Foo", "name": "other-foo", "uid": OTHER_UID, "controller": true}]),
        Owner::ThisFooNotController => json!([{"apiVersion": "samplecontroller.k8s.io/v1alpha1",
            "kind": "Foo", "name": FOO, "uid": FOO_UID}]),
    };
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "uid": format!("foreign-{name}"),
                     "labels": {"app": name}, "ownerReferences": refs},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}},
        "status": counts_status((3, 3, 3, 3)),
    })
}

fn deployments(objects: &[Value], v2: bool) -> Value {
    let keys = if v2 { Keys::V2 } else { Keys::V1 };
    object_map("Deployment.apps/v1", objects, keys)
}

/// A request as Metacontroller builds it: `related` holds what customize
/// asked for (the Deployment named in the spec), whoever controls it.
#[derive(Debug, Clone)]
struct Case {
    spec: Value,
    status: Option<Value>,
    children: Vec<Value>,
    foreign: Vec<Value>,
}

impl Case {
    fn deployment_name(&self) -> Option<&str> {
        self.spec["deploymentName"].as_str()
    }

    fn related(&self) -> Vec<Value> {
        let wanted = self.deployment_name();
        let ours = self
            .children
            .iter()
            .filter(|c| c["metadata"]["name"].as_str() == wanted);
        self.foreign.iter().chain(ours).cloned().collect()
    }

    fn request(&self, v2: bool) -> Value {
        let mut parent = json!({
            "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
            "metadata": {"name": FOO, "namespace": NS, "uid": FOO_UID, "generation": 2},
            "spec": self.spec,
        });
        if let Some(status) = &self.status {
            parent["status"] = status.clone();
        }
        json!({
            "controller": {"apiVersion": "metacontroller.k8s.io/v1alpha1",
                           "kind": "CompositeController", "metadata": {"name": "foo"}},
            "parent": parent,
            "children": deployments(&self.children, v2),
            "related": deployments(&self.related(), v2),
            "finalizing": false,
        })
    }

    /// The next reconcile after `response` was applied: the desired children
    /// observed (each keeping its observed status), the status written.
    fn after(&self, response: &Value) -> Case {
        let children = response["children"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|desired| {
                let name = desired["metadata"]["name"].as_str().unwrap_or_default();
                let mut observed = desired.clone();
                observed["metadata"]["uid"] = json!(format!("uid-{name}"));
                observed["metadata"]["labels"]["controller-uid"] = json!(FOO_UID);
                observed["metadata"]["ownerReferences"] = json!([{
                    "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
                    "name": FOO, "uid": FOO_UID, "controller": true, "blockOwnerDeletion": true}]);
                if let Some(before) = self.child(name) {
                    observed["status"] = before["status"].clone();
                }
                observed
            })
            .collect();
        let mut status = response["status"].clone();
        status["observedGeneration"] = json!(2);
        Case {
            spec: self.spec.clone(),
            status: Some(status),
            children,
            foreign: self.foreign.clone(),
        }
    }

    fn child(&self, name: &str) -> Option<&Value> {
        self.children
            .iter()
            .find(|c| c["metadata"]["name"].as_str() == Some(name))
    }
}

fn counts() -> impl Strategy<Value = Counts> {
    (0..12i32, 0..12i32, 0..12i32, 0..12i32)
}

fn valid_spec() -> impl Strategy<Value = Value> {
    (select(NAMES.to_vec()), prop::option::of(0..12i32)).prop_map(|(name, replicas)| match replicas
    {
        Some(r) => json!({"deploymentName": name, "replicas": r}),
        None => json!({"deploymentName": name}),
    })
}

fn invalid_spec() -> impl Strategy<Value = Value> {
    let bad_names = select(vec!["", "Foo_Deployment", "-foo", "foo.", "a..b", "ä"]);
    prop_oneof![
        (bad_names, -3..12i32).prop_map(|(n, r)| json!({"deploymentName": n, "replicas": r})),
        (select(NAMES.to_vec()), -50..0i32)
            .prop_map(|(n, r)| json!({"deploymentName": n, "replicas": r})),
        Just(json!({"deploymentName": "foo-deployment", "replicas": "two"})),
        Just(json!({"replicas": 2})),
        Just(json!({"deploymentName": 7})),
        Just(json!(null)),
    ]
}

fn previous_status() -> impl Strategy<Value = Option<Value>> {
    prop::option::of((any::<bool>(), 0..5i32).prop_map(|(ready, available)| {
        let status = if ready { "True" } else { "False" };
        json!({"observedGeneration": 1, "availableReplicas": available, "conditions": [
            {"type": "Ready", "status": status, "reason": "ReplicasAvailable", "message": "",
             "lastTransitionTime": "2026-11-22T01:00:00Z", "observedGeneration": 1},
            {"type": "SpecValid", "status": "True", "reason": "Valid",
             "message": "the spec is valid",
             "lastTransitionTime": "2026-11-22T01:00:00Z", "observedGeneration": 1}]})
    }))
}

/// Observed children with distinct names, and foreign Deployments on names
/// no child has (one object cannot be both).
fn world() -> impl Strategy<Value = (Vec<Value>, Vec<Value>)> {
    subsequence(NAMES.to_vec(), 0..=NAMES.len())
        .prop_flat_map(|names| {
            let children: Vec<_> = names
                .iter()
                .map(|n| {
                    (
                        Just(*n),
                        0..12i32,
                        select(vec!["nginx:latest", "nginx:1.27"]),
                        counts(),
                    )
                })
                .collect();
            let free: Vec<&'static str> = NAMES
                .iter()
                .copied()
                .filter(|n| !names.contains(n))
                .collect();
            let owners = select(vec![
                Owner::Nothing,
                Owner::OtherController,
                Owner::ThisFooNotController,
            ]);
            let foreign = if free.is_empty() {
                Just(Vec::new()).boxed()
            } else {
                prop::collection::vec((select(free), owners), 0..=1).boxed()
            };
            (children, foreign)
        })
        .prop_map(|(children, foreign)| {
            (
                children
                    .into_iter()
                    .map(|(n, r, image, c)| owned(n, r, image, c))
                    .collect(),
                foreign
                    .into_iter()
                    .map(|(n, o)| self::foreign(n, o))
                    .collect(),
            )
        })
}

fn case(spec: impl Strategy<Value = Value>) -> impl Strategy<Value = Case> {
    (spec, previous_status(), world()).prop_map(|(spec, status, (children, foreign))| Case {
        spec,
        status,
        children,
        foreign,
    })
}

fn any_case() -> impl Strategy<Value = Case> {
    case(prop_oneof![3 => valid_spec(), 1 => invalid_spec()])
}

fn names(children: &Value) -> Vec<String> {
    children
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["metadata"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// Whether a generated spec is valid: the strategies only make valid names
/// from `NAMES`.
fn spec_is_valid(spec: &Value) -> bool {
    spec["deploymentName"]
        .as_str()
        .is_some_and(|n| NAMES.contains(&n))
        && spec
            .get("replicas")
            .is_none_or(|r| r.as_i64().is_some_and(|r| r >= 0))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn same_request_same_bytes(case in any_case()) {
        let v1 = case.request(false);
        let v2 = case.request(true);
        let first = call(HookKind::Sync, &v2);
        prop_assert_eq!(&first, &call(HookKind::Sync, &v2));
        // The key format is the hook version's business, not the answer's.
        prop_assert_eq!(&first, &call(HookKind::Sync, &v1));
        let customize = json!({"controller": {}, "parent": v2["parent"]});
        prop_assert_eq!(call(HookKind::Customize, &customize), call(HookKind::Customize, &customize));
    }

    #[test]
    fn desired_children_fed_back_converge(case in any_case()) {
        let first = sync(&case.request(true));
        let second = sync(&case.after(&first).request(true));
        prop_assert_eq!(&first["children"], &second["children"]);
        prop_assert_eq!(&first["status"], &second["status"]);
    }

    #[test]
    fn an_invalid_spec_keeps_every_child_as_it_is(case in case(invalid_spec())) {
        let response = sync(&case.request(true));
        let desired = response["children"].as_array().cloned().unwrap_or_default();
        prop_assert_eq!(desired.len(), case.children.len(), "a child was added or dropped");
        for observed in &case.children {
            let name = &observed["metadata"]["name"];
            let held = desired.iter().find(|d| &d["metadata"]["name"] == name);
            prop_assert!(held.is_some(), "{} dropped", name);
            let held = held.cloned().unwrap_or_default();
            prop_assert_eq!(&held["metadata"]["namespace"], &json!(NS));
            prop_assert_eq!(&held["metadata"]["labels"], &json!({"app": "nginx", "controller": FOO}));
            prop_assert_eq!(&held["spec"]["replicas"], &observed["spec"]["replicas"]);
            prop_assert_eq!(&held["spec"]["selector"], &observed["spec"]["selector"]);
            prop_assert_eq!(
                &held["spec"]["template"]["spec"]["containers"],
                &observed["spec"]["template"]["spec"]["containers"]
            );
        }
        let spec_valid = &response["status"]["conditions"][1];
        prop_assert_eq!(&spec_valid["type"], &json!("SpecValid"));
        prop_assert_eq!(&spec_valid["status"], &json!("False"));
        prop_assert_eq!(&spec_valid["reason"], &json!("InvalidSpec"));
    }

    #[test]
    fn a_foreign_deployment_is_never_desired(case in any_case()) {
        let response = sync(&case.request(true));
        let desired = names(&response["children"]);
        for foreign in &case.foreign {
            let name = foreign["metadata"]["name"].as_str().unwrap_or_default();
            prop_assert!(!desired.iter().any(|d| d == name), "{} desired", name);
            if spec_is_valid(&case.spec) && case.deployment_name() == Some(name) {
                // Refused: the Foo's own Deployments are held, nothing new.
                prop_assert_eq!(desired.len(), case.children.len());
                let ready = &response["status"]["conditions"][0];
                prop_assert_eq!(&ready["type"], &json!("Ready"));
                prop_assert_eq!(&ready["reason"], &json!("ErrResourceExists"));
                prop_assert_eq!(
                    &ready["message"],
                    &json!(format!("Resource \"{name}\" already exists and is not managed by Foo"))
                );
            }
        }
    }

    #[test]
    fn a_valid_spec_desires_exactly_its_deployment(case in case(valid_spec())) {
        prop_assume!(case.foreign.iter().all(|f| f["metadata"]["name"].as_str() != case.deployment_name()));
        let response = sync(&case.request(true));
        let children = response["children"].as_array().cloned().unwrap_or_default();
        prop_assert_eq!(children.len(), 1);
        let child = &children[0];
        prop_assert_eq!(child["metadata"]["name"].as_str(), case.deployment_name());
        let replicas = case.spec.get("replicas").cloned().unwrap_or(json!(1));
        prop_assert_eq!(&child["spec"]["replicas"], &replicas);
        prop_assert_eq!(&child["spec"]["template"]["spec"]["containers"][0]["image"], &json!("nginx:latest"));
        let available = case
            .children
            .iter()
            .find(|c| c["metadata"]["name"].as_str() == case.deployment_name())
            .map_or(json!(0), |c| c["status"]["availableReplicas"].clone());
        prop_assert_eq!(&response["status"]["availableReplicas"], &available);
    }

    #[test]
    fn customize_asks_for_exactly_the_named_deployment(spec in prop_oneof![valid_spec(), invalid_spec()]) {
        let request = json!({"controller": {}, "parent": {
            "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
            "metadata": {"name": FOO, "namespace": NS, "uid": FOO_UID, "generation": 1},
            "spec": spec}});
        let response: Value = serde_json::from_slice(&call(HookKind::Customize, &request)).expect("JSON");
        let expected = if spec_is_valid(&spec) {
            json!({"relatedResources": [{"apiVersion": "apps/v1", "resource": "deployments",
                "namespace": NS, "names": [spec["deploymentName"]]}]})
        } else {
            json!({"relatedResources": []})
        };
        prop_assert_eq!(response, expected);
    }
}
