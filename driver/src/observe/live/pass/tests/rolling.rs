//! A rolling controller's parent planned against a scripted API server:
//! its Pods and its ControllerRevisions listed once each for the
//! namespace, the hook called once per revision in the process with the
//! request the driver builds, and the rollout planned with the driver's
//! planner — the ControllerRevisions' writes, then the one Pod that moves
//! — with nothing written (the script takes the two lists and nothing
//! else). The controller is shaped like Metacontroller's catset: Pods
//! rolled by `RollingRecreate` behind a `Ready` check, following
//! `spec.template`.

use super::super::super::context::{Reader, Resolved};
use super::super::super::window::Window;
use super::super::plan;
use crate::config::{self, UpdateStrategy};
use crate::controller::cache::CachedObject;
use crate::controller::context::HookTargets;
use crate::decide::model::{Driven, DrivenChild, ResolvedType};
use crate::decide::plan::{self as planner, NoMemory, Op, RevisionWrite, StatusPace};
use crate::hook::call::{Endpoint, HookCaller};
use crate::hook::wire;
use crate::observe::live::ParentPlan;
use crate::observe::metrics::DriverMetrics;
use crate::test_support::context::hook;
use crate::test_support::scripted_api::{answer, mock_client, no_further_request, scripted};
use crate::test_support::{Obj, api_type, manifest};
use kube::api::DynamicObject;
use metahook_core::HookKind;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// `web`: Things own Pods, rolled by `RollingRecreate` once Ready.
fn web() -> Driven {
    let spec = r#"  parentResource:
    apiVersion: example.com/v1
    resource: things
    revisionHistory: {fieldPaths: [spec.template]}
  childResources:
    - apiVersion: v1
      resource: pods
      updateStrategy:
        method: RollingRecreate
        statusChecks: {conditions: [{type: Ready, status: "True"}]}
  hooks:
    sync: {webhook: {url: "http://h/web/sync"}}
"#;
    let config = config::parse("web.yaml", &manifest("CompositeController", "web", spec))
        .expect("the web manifest is valid");
    Driven {
        children: vec![DrivenChild {
            resource: api_type("", "v1", "Pod", true),
            strategy: UpdateStrategy::RollingRecreate,
        }],
        config,
        parent: ResolvedType::new("example.com", "v1", "Thing", "things", true),
        shard_labels: Vec::new(),
        status_subresource: true,
    }
}

/// The Thing `shop/p` (UID `p1`) running `image`; its template's labels
/// are its revisions' (as its selector selects them).
fn thing(image: &str) -> DynamicObject {
    Obj::parent()
        .generation(2)
        .data(
            "spec",
            json!({"selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}},
                                "spec": {"image": image}}}),
        )
        .build()
}

/// The hook's answer to `req`: Pods `web-0` and `web-1` running the
/// parent's image, that image in the status.
fn pods(req: &Value) -> Value {
    let image = &req["parent"]["spec"]["template"]["spec"]["image"];
    let pod = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "labels": {"app": "web"}},
               "spec": {"containers": [{"name": "c", "image": image}]}})
    };
    json!({"status": {"image": image}, "children": [pod("web-0"), pod("web-1")]})
}

/// The hook in the process: [`pods`], each request's image kept in
/// `seen`. A request that is not a sync request with the parent's Pods
/// keyed by type is answered with a body no decoder takes.
fn pods_of(seen: Arc<Mutex<Vec<String>>>) -> Endpoint {
    Endpoint::InProcess(Arc::new(move |body, _| {
        let req: Value = serde_json::from_slice(body).unwrap_or_default();
        if !req["children"]["Pod.v1"].is_object() {
            return Ok(b"not a sync request".to_vec());
        }
        let image = &req["parent"]["spec"]["template"]["spec"]["image"];
        seen.lock()
            .unwrap()
            .push(image.as_str().unwrap_or_default().to_owned());
        Ok(serde_json::to_vec(&pods(&req)).unwrap_or_default())
    }))
}

/// `parent` planned with `pods` and `revisions` in its namespace; the
/// images the hook was called with, in order.
async fn plan_of(
    parent: &DynamicObject,
    pods: Vec<DynamicObject>,
    revisions: Vec<DynamicObject>,
) -> (ParentPlan, Vec<String>) {
    let (client, mut api) = mock_client();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let resolved = Resolved {
        driven: web(),
        hooks: HookTargets {
            sync: hook(HookKind::Sync, pods_of(Arc::clone(&seen))),
            finalize: None,
            customize: None,
        },
    };
    let reader = Reader {
        client: client.clone(),
        caller: HookCaller::in_process(jiff::Timestamp::now, Arc::new(DriverMetrics::default())),
        related: Default::default(),
    };
    let cached = CachedObject::of(parent).unwrap();
    let (planned, listed) = scripted(
        async {
            let mut window = Window::empty();
            window
                .hold(&client, &resolved.driven, Some("shop"))
                .await
                .unwrap();
            plan(&reader, &resolved, &window, &cached).await
        },
        async {
            let pods = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": pods});
            let revisions = json!({"apiVersion": "metacontroller.k8s.io/v1alpha1",
                                   "kind": "ControllerRevisionList", "metadata": {}, "items": revisions});
            let first = answer(&mut api, 200, pods).await;
            let second = answer(&mut api, 200, revisions).await;
            [first, second].map(|s| format!("{} {}", s.method, s.path))
        },
    )
    .await;
    no_further_request(&mut api);
    assert_eq!(
        listed,
        [
            "GET /api/v1/namespaces/shop/pods",
            "GET /apis/metacontroller.k8s.io/v1alpha1/namespaces/shop/controllerrevisions",
        ],
        "the Pods and the revisions of the namespace listed, and nothing else sent"
    );
    let images = seen.lock().unwrap().clone();
    (planned, images)
}

/// Each step as `op kind/name detail`.
fn steps(plan: &ParentPlan) -> Vec<String> {
    plan.steps
        .iter()
        .map(|s| {
            let mut line = s.op.to_owned();
            if let (Some(kind), Some(name)) = (&s.kind, &s.name) {
                line.push_str(&format!(" {kind}/{name}"));
            }
            if let Some(detail) = &s.detail {
                line.push_str(&format!(" ({detail})"));
            }
            line
        })
        .collect()
}

/// The Thing at `image` as the driver leaves it once rolled out: its Pods
/// as applied, Ready; its one ControllerRevision claiming both; its
/// status written. Made with the driver's own planner.
fn converged(image: &str) -> (DynamicObject, Vec<DynamicObject>, Vec<DynamicObject>) {
    let ctl = web();
    let mut parent = thing(image);
    let answer = pods(&json!({"parent": parent}));
    let response = wire::decode_sync_response(&serde_json::to_vec(&answer).unwrap(), true).unwrap();
    let none = vec![Vec::new()];
    let revisions = planner::revisions(&ctl, &parent, &[]).unwrap();
    let rolled = planner::roll(&ctl, &parent, revisions, vec![response], &none).unwrap();
    let revision = rolled.ops.iter().find_map(|op| match op {
        Op::Revision(RevisionWrite::Create { body }) => Some(body.clone()),
        _ => None,
    });
    let mut revision = revision.expect("a revision created");
    revision["metadata"]["uid"] = json!("rev1");
    let plan = planner::after_hook(
        &ctl,
        &parent,
        &none,
        &none[..],
        rolled.response,
        &NoMemory,
        StatusPace::Now,
    )
    .unwrap();
    let mut pods = Vec::new();
    for op in plan.ops {
        match op {
            Op::ApplyChild { mut body, name, .. } => {
                body["metadata"]["namespace"] = json!("shop");
                body["metadata"]["uid"] = json!(format!("uid-{name}"));
                body["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
                pods.push(serde_json::from_value(body).unwrap());
            }
            Op::WriteStatus { status } => parent.data["status"] = status,
            _ => {}
        }
    }
    (
        parent,
        pods,
        vec![serde_json::from_value(revision).unwrap()],
    )
}

#[tokio::test]
async fn a_new_parent_creates_its_revision_then_its_pods() {
    let (plan, images) = plan_of(&thing("v1"), Vec::new(), Vec::new()).await;
    assert_eq!(plan.failure, None);
    assert_eq!(images, ["v1"], "one revision: one hook call");
    assert_eq!(
        steps(&plan),
        [
            "createRevision ControllerRevision/".to_owned() + &plan.steps[0].name.clone().unwrap(),
            "apply Pod/web-0 (create)".to_owned(),
            "apply Pod/web-1 (create)".to_owned(),
            "writeStatus".to_owned(),
        ],
        "{:?}",
        plan.steps
    );
}

#[tokio::test]
async fn a_rolled_out_parent_plans_nothing() {
    let (parent, pods, revisions) = converged("v1");
    let (plan, images) = plan_of(&parent, pods, revisions).await;
    assert_eq!(plan.failure, None);
    assert_eq!(images, ["v1"]);
    assert!(!plan.changes(), "nothing to do: {:?}", plan.steps);
}

#[tokio::test]
async fn a_new_template_moves_one_pod_and_writes_both_revisions() {
    let (old, pods, revisions) = converged("v1");
    let old_revision = revisions[0].metadata.name.clone().unwrap();
    let mut parent = thing("v2");
    parent.data["status"] = old.data["status"].clone();
    let (plan, images) = plan_of(&parent, pods, revisions).await;
    assert_eq!(plan.failure, None);
    assert_eq!(
        images,
        ["v2", "v1"],
        "the hook called for the latest revision, then with the old one's template"
    );
    let new_revision = plan.steps[0].name.clone().unwrap();
    assert!(
        plan.steps[..2]
            .iter()
            .all(|s| s.namespace.as_deref() == Some("shop")),
        "a revision is the parent's namespace's: {:?}",
        plan.steps
    );
    assert_ne!(new_revision, old_revision);
    assert_eq!(
        steps(&plan),
        [
            format!("createRevision ControllerRevision/{new_revision}"),
            format!("updateRevision ControllerRevision/{old_revision}"),
            "delete Pod/web-0 (recreate)".to_owned(),
            "writeStatus".to_owned(),
            "event (Normal Updated)".to_owned(),
        ],
        "the revisions first, then the one Pod that moves: {:?}",
        plan.steps
    );
    let status = plan.steps[3]
        .changed
        .iter()
        .map(|c| (c.path.as_str(), c.to.clone()))
        .collect::<Vec<_>>();
    assert!(
        status.contains(&("status.image", json!("v2"))),
        "the latest revision's status: {status:?}"
    );
    assert!(
        status.contains(&(
            "status.conditions",
            json!([{"type": "Updated", "status": "False", "reason": "RolloutProgressing",
                    "message": "updating Pod web-0"}])
        )),
        "where the rollout is: {status:?}"
    );
}
