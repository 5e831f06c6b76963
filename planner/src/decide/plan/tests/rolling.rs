//! Rolling updates (docs/metacontroller.md §4.3): revisions, one child
//! moved per pass once those moved are well, the ControllerRevisions'
//! writes, and the answer the rest of the plan follows. The controller is
//! shaped like Metacontroller's catset example: Pods rolled by Recreate
//! behind a `Ready` check, following `spec.template`.

use super::*;
use crate::config;
use crate::decide::model::{DrivenChild, ResolvedType};
use crate::test_support::{Obj, api_type, manifest};

/// `web`: Things own Pods (rolled, `method`) and ConfigMaps (not rolled).
fn web(method: &str) -> Driven {
    let spec = format!(
        r#"  parentResource:
    apiVersion: example.com/v1
    resource: things
    revisionHistory: {{fieldPaths: [spec.template]}}
  childResources:
    - apiVersion: v1
      resource: pods
      updateStrategy:
        method: {method}
        statusChecks: {{conditions: [{{type: Ready, status: "True"}}]}}
    - {{apiVersion: v1, resource: configmaps}}
  hooks:
    sync: {{version: v2, webhook: {{url: "http://h/web/sync"}}}}
"#
    );
    let text = manifest("CompositeController", "web", &spec);
    let config = config::parse("web.yaml", &text).expect("the web manifest is valid");
    Driven {
        children: vec![
            DrivenChild {
                resource: api_type("", "v1", "Pod", true),
                strategy: config.children[0].update_strategy,
            },
            DrivenChild {
                resource: api_type("", "v1", "ConfigMap", true),
                strategy: UpdateStrategy::OnDelete,
            },
        ],
        config,
        parent: ResolvedType::new("example.com", "v1", "Thing", "things", true),
        shard_labels: Vec::new(),
        status_subresource: true,
    }
}

fn template(image: &str) -> Value {
    json!({"metadata": {"labels": {"app": "web"}}, "spec": {"image": image}})
}

/// The Thing `shop/p` (UID `p1`) running `image`.
fn thing(image: &str) -> DynamicObject {
    Obj::parent()
        .generation(2)
        .data(
            "spec",
            json!({"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template(image)}),
        )
        .build()
}

/// A desired Pod, as the hook answers for a parent running `image`.
fn desired_pod(name: &str, image: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": image}]},
    })
}

/// The hook's answer for `image`: three Pods, a status.
fn answer(image: &str) -> HookResponse {
    HookResponse {
        children: (0..3)
            .map(|i| desired_pod(&format!("web-{i}"), image))
            .collect(),
        status: Some(serde_json::from_value(json!({"replicas": 3})).unwrap()),
        ..HookResponse::default()
    }
}

/// An observed Pod running `image`, `Ready` or not.
fn pod(name: &str, image: &str, ready: bool) -> Arc<DynamicObject> {
    Obj::new(("", "v1", "Pod"), name)
        .label("app", "web")
        .owned_by("p1")
        .data(
            "spec",
            json!({"containers": [{"name": "c", "image": image}]}),
        )
        .data(
            "status",
            json!({"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}),
        )
        .arc()
}

/// A ControllerRevision of `p1` for `image`, claiming these Pods.
fn revision(name: &str, image: &str, pods: &[&str]) -> Arc<DynamicObject> {
    Obj::new(
        ("metacontroller.k8s.io", "v1alpha1", "ControllerRevision"),
        name,
    )
    .label("app", "web")
    .label("metacontroller.k8s.io/apiGroup", "example.com")
    .label("metacontroller.k8s.io/resource", "things")
    .owned_by("p1")
    .resource_version(&format!("rv-{name}"))
    .data(
        "parentPatch",
        json!({"spec": {"template": template(image)}}),
    )
    .data(
        "children",
        json!([{"apiGroup": "", "kind": "Pod", "names": pods}]),
    )
    .arc()
}

/// Rolls `parent` given the cached revisions and observed Pods; each
/// revision's answer is `answer(<its image>)`.
fn roll_pods(
    ctl: &Driven,
    parent: &DynamicObject,
    cached: &[Arc<DynamicObject>],
    pods: Vec<Arc<DynamicObject>>,
) -> Rolled {
    let revisions = revisions(ctl, parent, cached).unwrap();
    let answers = revisions
        .iter()
        .map(|r| {
            let image = r.parent.data["spec"]["template"]["spec"]["image"]
                .as_str()
                .unwrap();
            answer(image)
        })
        .collect();
    roll(ctl, parent, revisions, answers, &[pods, vec![]]).unwrap()
}

fn updated(rolled: &Rolled) -> (String, String, String) {
    let status = rolled.response.status.as_ref().unwrap();
    let c = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Updated")
        .expect("an Updated condition");
    let text = |k: &str| c[k].as_str().unwrap().to_owned();
    (text("status"), text("reason"), text("message"))
}

fn image_of(child: &Value) -> &str {
    child["spec"]["containers"][0]["image"].as_str().unwrap()
}

fn images(rolled: &Rolled) -> Vec<&str> {
    rolled.response.children.iter().map(image_of).collect()
}

/// The `children` an op writes into a revision, as (name, claimed pods).
fn revision_writes(ops: &[Op]) -> Vec<(String, Value)> {
    ops.iter()
        .filter_map(|op| match op {
            Op::Revision(RevisionWrite::Create { body }) => Some((
                body["metadata"]["name"].as_str().unwrap().to_owned(),
                body["children"].clone(),
            )),
            Op::Revision(RevisionWrite::Update { name, children, .. }) => {
                Some((name.clone(), children.clone()))
            }
            Op::Revision(RevisionWrite::Delete { name, .. }) => Some((name.clone(), Value::Null)),
            _ => None,
        })
        .collect()
}

fn claims(pods: &[&str]) -> Value {
    json!([{"apiGroup": "", "kind": "Pod", "names": pods}])
}

const V2_NAME: &str = "things.example.com-c40cf06bc0ebf023cee7ed381e158efeb2d904f2";

#[test]
fn a_new_parent_gets_a_revision_named_as_metacontroller_names_it() {
    let ctl = web("RollingRecreate");
    let rolled = roll_pods(&ctl, &thing("v2"), &[], vec![]);
    // SHA-1 of the parent's UID and `{"spec":{"template":...}}` with sorted
    // keys (computed apart, with Python's hashlib).
    let Op::Revision(RevisionWrite::Create { body }) = &rolled.ops[0] else {
        panic!("{:?}", rolled.ops)
    };
    assert_eq!(body["metadata"]["name"], V2_NAME);
    assert_eq!(body["metadata"]["namespace"], "shop");
    assert_eq!(
        body["metadata"]["labels"],
        json!({"app": "web", "metacontroller.k8s.io/apiGroup": "example.com",
               "metacontroller.k8s.io/resource": "things"})
    );
    assert_eq!(body["metadata"]["ownerReferences"][0]["uid"], "p1");
    assert_eq!(
        body["parentPatch"],
        json!({"spec": {"template": template("v2")}})
    );
    // Every Pod is the latest revision's at once: nothing to roll from.
    assert_eq!(body["children"], claims(&["web-0", "web-1", "web-2"]));
    assert_eq!(rolled.ops.len(), 1);
    assert_eq!(images(&rolled), ["v2", "v2", "v2"]);
    assert_eq!(
        updated(&rolled),
        (
            "True".to_owned(),
            "OnLatestRevision".to_owned(),
            format!("latest ControllerRevision: {V2_NAME}")
        )
    );
    // The hook's own status is kept.
    assert_eq!(rolled.response.status.as_ref().unwrap()["replicas"], 3);
}

#[test]
fn a_converged_parent_writes_no_revision() {
    let ctl = web("RollingRecreate");
    let all = ["web-0", "web-1", "web-2"];
    let pods = all.iter().map(|n| pod(n, "v2", true)).collect();
    let rolled = roll_pods(&ctl, &thing("v2"), &[revision(V2_NAME, "v2", &all)], pods);
    assert_eq!(rolled.ops, []);
    assert_eq!(updated(&rolled).1, "OnLatestRevision");
}

#[test]
fn a_new_template_moves_the_first_pod_and_keeps_the_others_old() {
    let ctl = web("RollingRecreate");
    let all = ["web-0", "web-1", "web-2"];
    let pods: Vec<_> = all.iter().map(|n| pod(n, "v1", true)).collect();
    let parent = thing("v2");
    let cached = [revision("old", "v1", &all)];
    let revs = revisions(&ctl, &parent, &cached).unwrap();
    // The older revision's parent is the parent with its template.
    assert_eq!(revs.len(), 2);
    assert_eq!(revs[1].name, "old");
    assert_eq!(revs[1].parent.data["spec"]["template"], template("v1"));
    assert_eq!(revs[1].parent.data["spec"]["replicas"], 3);

    let rolled = roll_pods(&ctl, &parent, &cached, pods.clone());
    assert_eq!(
        revision_writes(&rolled.ops),
        [
            (V2_NAME.to_owned(), claims(&["web-0"])),
            ("old".to_owned(), claims(&["web-1", "web-2"])),
        ]
    );
    assert_eq!(images(&rolled), ["v2", "v1", "v1"]);
    assert_eq!(
        updated(&rolled),
        (
            "False".to_owned(),
            "RolloutProgressing".to_owned(),
            "updating Pod web-0".to_owned()
        )
    );
    // What the plan then does: web-0 (Recreate) is deleted, nothing else.
    let plan = after_hook(
        &ctl,
        &parent,
        &[pods, vec![]],
        UNCACHED,
        rolled.response,
        &NoMemory,
        StatusPace::Now,
    )
    .unwrap();
    let deletes: Vec<_> = plan
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::DeleteChild { child, reason } => Some((child.name.as_str(), *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(deletes, [("web-0", DeleteReason::Recreate)]);
    assert!(
        !plan
            .ops
            .iter()
            .any(|op| matches!(op, Op::ApplyChild { .. }))
    );
}

/// A rollout to v2 that has moved web-0: the latest revision claims it,
/// `old` (v1) still claims web-1 and web-2.
fn halfway() -> [Arc<DynamicObject>; 2] {
    [
        revision(V2_NAME, "v2", &["web-0"]),
        revision("old", "v1", &["web-1", "web-2"]),
    ]
}

#[test]
fn the_next_pod_waits_until_the_moved_one_is_back_and_ready() {
    let ctl = web("RollingRecreate");
    let parent = thing("v2");
    let cached = halfway();
    let old = |n| pod(n, "v1", true);
    let waiting = |pods, why: &str| {
        let rolled = roll_pods(&ctl, &parent, &cached, pods);
        // Nothing moves, so no revision changes.
        assert_eq!(rolled.ops, []);
        assert_eq!(
            updated(&rolled),
            (
                "False".to_owned(),
                "RolloutWaiting".to_owned(),
                why.to_owned()
            )
        );
        rolled
    };
    // Deleted, not yet created again: created from the latest revision.
    let rolled = waiting(vec![old("web-1"), old("web-2")], "missing child Pod web-0");
    assert_eq!(images(&rolled), ["v2", "v1", "v1"]);
    waiting(
        vec![pod("web-0", "v1", true), old("web-1"), old("web-2")],
        "child Pod web-0 is not updated yet",
    );
    waiting(
        vec![pod("web-0", "v2", false), old("web-1"), old("web-2")],
        "child Pod web-0 failed status check: \"Ready\" condition status is \"False\" (want \"True\")",
    );
    // Ready: the next one moves.
    let rolled = roll_pods(
        &ctl,
        &parent,
        &cached,
        vec![pod("web-0", "v2", true), old("web-1"), old("web-2")],
    );
    assert_eq!(updated(&rolled).2, "updating Pod web-1");
    assert_eq!(images(&rolled), ["v2", "v2", "v1"]);
}

#[test]
fn the_last_move_forgets_the_old_revision() {
    let ctl = web("RollingRecreate");
    let parent = thing("v2");
    let cached = [
        revision(V2_NAME, "v2", &["web-0", "web-1"]),
        revision("old", "v1", &["web-2"]),
    ];
    let pods = vec![
        pod("web-0", "v2", true),
        pod("web-1", "v2", true),
        pod("web-2", "v1", true),
    ];
    let rolled = roll_pods(&ctl, &parent, &cached, pods);
    assert_eq!(
        revision_writes(&rolled.ops),
        [
            ("old".to_owned(), Value::Null),
            (V2_NAME.to_owned(), claims(&["web-0", "web-1", "web-2"])),
        ]
    );
    assert!(
        matches!(&rolled.ops[0], Op::Revision(RevisionWrite::Delete { uid, .. }) if uid == "uid-old")
    );
    assert_eq!(updated(&rolled).2, "updating Pod web-2");
    // The pass after: all on the latest.
    let cached = [revision(V2_NAME, "v2", &["web-0", "web-1", "web-2"])];
    let pods = (0..3)
        .map(|i| pod(&format!("web-{i}"), "v2", true))
        .collect();
    assert_eq!(
        updated(&roll_pods(&ctl, &parent, &cached, pods)).1,
        "OnLatestRevision"
    );
}

#[test]
fn a_pod_already_as_the_latest_wants_moves_without_waiting() {
    let ctl = web("RollingRecreate");
    let parent = thing("v2");
    let cached = halfway();
    // web-0 is not ready (the rollout waits), but web-2 already runs v2.
    let pods = vec![
        pod("web-0", "v2", false),
        pod("web-1", "v1", true),
        pod("web-2", "v2", true),
    ];
    let rolled = roll_pods(&ctl, &parent, &cached, pods);
    assert_eq!(updated(&rolled).1, "RolloutWaiting");
    assert_eq!(
        revision_writes(&rolled.ops),
        [
            (V2_NAME.to_owned(), claims(&["web-0", "web-2"])),
            ("old".to_owned(), claims(&["web-1"])),
        ]
    );
}

#[test]
fn rolling_in_place_waits_for_the_child_to_see_its_spec() {
    let ctl = web("RollingInPlace");
    let parent = thing("v2");
    let cached = halfway();
    let behind = Obj((*pod("web-0", "v2", true)).clone())
        .generation(3)
        .data(
            "status",
            json!({"observedGeneration": 2, "conditions": [{"type": "Ready", "status": "True"}]}),
        )
        .arc();
    let pods = vec![behind, pod("web-1", "v1", true), pod("web-2", "v1", true)];
    let rolled = roll_pods(&ctl, &parent, &cached, pods);
    assert_eq!(
        updated(&rolled).2,
        "child Pod web-0 with RollingInPlace update strategy hasn't observed latest spec"
    );
}

#[test]
fn claims_of_children_no_longer_wanted_are_dropped() {
    let ctl = web("RollingRecreate");
    // Scaled to two: web-2 is deleted, no revision keeps it.
    let mut parent = thing("v2");
    parent.data["spec"]["replicas"] = json!(2);
    let cached = halfway();
    let revisions = revisions(&ctl, &parent, &cached).unwrap();
    let two = |image| {
        let mut a = answer(image);
        a.children.truncate(2);
        a
    };
    let pods = vec![
        pod("web-0", "v2", false),
        pod("web-1", "v1", true),
        pod("web-2", "v1", true),
    ];
    let rolled = roll(
        &ctl,
        &parent,
        revisions,
        vec![two("v2"), two("v1")],
        &[pods, vec![]],
    )
    .unwrap();
    assert_eq!(
        revision_writes(&rolled.ops),
        [("old".to_owned(), claims(&["web-1"]))]
    );
    assert_eq!(images(&rolled), ["v2", "v1"]);
}

/// `revision(..)` with no owner at all.
fn orphan(name: &str, image: &str, pods: &[&str]) -> Arc<DynamicObject> {
    let mut orphan = (*revision(name, image, pods)).clone();
    orphan.metadata.owner_references = None;
    Arc::new(orphan)
}

#[test]
fn revisions_of_other_parents_are_left_alone_and_those_no_longer_matching_released() {
    let ctl = web("RollingRecreate");
    let parent = thing("v2");
    let theirs = Obj((*orphan("theirs", "v1", &["web-1"])).clone())
        .owned_by("p2")
        .arc();
    let other_type = Obj((*revision("type", "v1", &["web-1"])).clone())
        .label("metacontroller.k8s.io/resource", "widgets")
        .arc();
    let (claimed, ops) = claim_revisions(&ctl, &parent, &[theirs, other_type]).unwrap();
    assert!(claimed.is_empty());
    let [
        Op::Revision(RevisionWrite::SetOwners {
            name, after, adopt, ..
        }),
    ] = &ops[..]
    else {
        panic!("one release: {ops:?}");
    };
    assert_eq!(name, "type");
    assert!(!adopt);
    assert!(after.is_empty(), "{after:?}");
    let revs = revisions(&ctl, &parent, &claimed).unwrap();
    assert_eq!(revs.len(), 1);
    assert!(revs[0].observed.is_none());
}

#[test]
fn an_orphaned_revision_that_matches_is_adopted_and_its_claims_kept() {
    let ctl = web("RollingRecreate");
    let parent = thing("v2");
    let cached = [orphan("old", "v1", &["web-0", "web-1", "web-2"])];
    let (claimed, ops) = claim_revisions(&ctl, &parent, &cached).unwrap();
    assert_eq!(claimed.len(), 1);
    let [
        Op::VerifyParent,
        Op::Revision(RevisionWrite::SetOwners {
            name,
            uid,
            before,
            after,
            adopt: true,
        }),
    ] = &ops[..]
    else {
        panic!("the parent read, then one adoption: {ops:?}");
    };
    assert_eq!((name.as_str(), before), ("old", &None));
    assert_eq!(*uid, cached[0].metadata.uid.clone().unwrap_or_default());
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].uid, "p1");
    assert_eq!(after[0].controller, Some(true));
    // Its claims hold: the Pods it claims stay at v1 until they move.
    let revs = revisions(&ctl, &parent, &claimed).unwrap();
    assert_eq!(revs.len(), 2);
    assert_eq!(revs[1].name, "old");
    assert_eq!(
        serde_json::to_value(&revs[1].children).unwrap(),
        claims(&["web-0", "web-1", "web-2"])
    );
}

#[test]
fn a_parent_being_deleted_adopts_no_revision_and_releases_none() {
    let ctl = web("RollingRecreate");
    let parent = Obj(thing("v2")).deleting().build();
    let mismatched = Obj((*revision("moved", "v1", &["web-1"])).clone())
        .label("app", "elsewhere")
        .arc();
    let (claimed, ops) = claim_revisions(
        &ctl,
        &parent,
        &[orphan("old", "v1", &["web-0"]), mismatched],
    )
    .unwrap();
    assert!(claimed.is_empty(), "{claimed:?}");
    assert!(ops.is_empty(), "{ops:?}");
}

#[test]
fn the_answer_merges_resync_finalized_and_status() {
    let ctl = web("RollingRecreate");
    let parent = thing("v2");
    let cached = [revision("old", "v1", &["web-0", "web-1", "web-2"])];
    let revs = revisions(&ctl, &parent, &cached).unwrap();
    let mut latest = answer("v2");
    latest.resync_after_seconds = 30.0;
    latest.finalized = true;
    // A null status gets one, holding the condition.
    latest.status = None;
    let mut old = answer("v1");
    old.resync_after_seconds = 5.0;
    old.finalized = false;
    let pods = (0..3)
        .map(|i| pod(&format!("web-{i}"), "v1", true))
        .collect();
    let rolled = roll(&ctl, &parent, revs, vec![latest, old], &[pods, vec![]]).unwrap();
    assert_eq!(rolled.response.resync_after_seconds, 5.0);
    assert!(!rolled.response.finalized);
    assert_eq!(updated(&rolled).1, "RolloutProgressing");
    assert_eq!(
        rolled
            .response
            .status
            .as_ref()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["conditions"]
    );
}

#[test]
fn rolls_only_with_a_rolling_type_and_a_managed_parent() {
    let rolling = web("RollingRecreate");
    assert!(rolls(&rolling, &thing("v2")));
    // Deleted with no finalizer of ours: one hook call for the status.
    let gone = Obj(thing("v2")).deleting().build();
    assert!(!rolls(&rolling, &gone));
    assert!(!rolls(&web("Recreate"), &thing("v2")));
}

#[test]
fn a_pod_the_driver_applied_counts_as_updated_whatever_admission_added() {
    let ctl = web("RollingRecreate");
    let parent = thing("v2");
    let cached = halfway();
    // web-0 as the API server keeps it: a second container list entry
    // (what admission adds, like a Pod's token volume) the hook never asked for.
    let admitted = |p: Arc<DynamicObject>| {
        let mut p = (*p).clone();
        p.data["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "sidecar", "image": "proxy"}));
        p
    };
    let others = || vec![pod("web-1", "v1", true), pod("web-2", "v1", true)];
    let without = admitted(pod("web-0", "v2", true));
    let mut pods = vec![Arc::new(without.clone())];
    pods.extend(others());
    assert_eq!(
        updated(&roll_pods(&ctl, &parent, &cached, pods)).2,
        "child Pod web-0 is not updated yet"
    );
    // The same Pod with the fingerprint of the apply that made it.
    let desired =
        super::super::desired::check_desired(&ctl, &parent, &answer("v2").children).unwrap();
    let (_, fingerprint) = super::super::apply::with_fingerprint(super::super::apply::apply_body(
        &ctl,
        &parent,
        &desired[0].object,
    ));
    let with = Obj(without)
        .annotation(APPLIED, &super::super::apply::fingerprint_text(fingerprint))
        .arc();
    let mut pods = vec![with];
    pods.extend(others());
    assert_eq!(
        updated(&roll_pods(&ctl, &parent, &cached, pods)).2,
        "updating Pod web-1"
    );
}

#[test]
fn a_child_listed_twice_is_judged_by_its_own_desired_object() {
    let ctl = web("RollingRecreate");
    let parent = thing("v2");
    let cached = halfway();
    // web-1 already runs v2: it moves at once. The answer names web-0
    // twice (the later counts), which must not shift what web-1 is
    // compared with.
    let pods = vec![
        pod("web-0", "v2", false),
        pod("web-1", "v2", true),
        pod("web-2", "v1", true),
    ];
    let revisions = revisions(&ctl, &parent, &cached).unwrap();
    let mut latest = answer("v2");
    latest.children.insert(0, desired_pod("web-0", "v2"));
    let rolled = roll(
        &ctl,
        &parent,
        revisions,
        vec![latest, answer("v1")],
        &[pods, vec![]],
    )
    .unwrap();
    assert_eq!(
        revision_writes(&rolled.ops),
        [
            (V2_NAME.to_owned(), claims(&["web-0", "web-1"])),
            ("old".to_owned(), claims(&["web-2"])),
        ]
    );
}
