//! A rolling update under `metahook drive`, against the real control plane,
//! with the driver killed mid-rollout: Rollers (a CRD) own Gadgets (a CRD
//! with a status subresource) rolled by `RollingRecreate` behind a `Ready`
//! condition that this test sets, as another controller would — so each
//! step waits for the test, and the rollout is where the test says when the
//! driver dies. A new driver must take it up from the ControllerRevisions:
//! no Gadget recreated twice, the next one only once the moved one is Ready,
//! and one ControllerRevision at the end.

use crate::python_hooks::{self, e2e_crd};
use crate::support::*;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use std::time::Duration;

const GROUP: &str = "e2e.metahook.dev";
const PARENT: &str = "r";

/// The hook: `spec.replicas` Gadgets `<parent>-<i>`, in that order, each
/// with the parent's `spec.version`; a status the rollout adds `Updated` to.
const ANSWER: &str = r#"
def answer(path, req):
    parent = req['parent']
    spec = parent['spec']
    gadgets = [{
        'apiVersion': 'e2e.metahook.dev/v1', 'kind': 'Gadget',
        'metadata': {'name': '%s-%d' % (parent['metadata']['name'], i)},
        'spec': {'version': spec['version']},
    } for i in range(spec['replicas'])]
    return {'status': {'gadgets': len(gadgets)}, 'children': gadgets}
"#;

fn manifest(port: u16) -> String {
    format!(
        r#"apiVersion: metacontroller.k8s.io/v1alpha1
kind: CompositeController
metadata:
  name: e2e-rolling
spec:
  parentResource: {{apiVersion: {GROUP}/v1, resource: rollers}}
  childResources:
    - apiVersion: {GROUP}/v1
      resource: gadgets
      updateStrategy:
        method: RollingRecreate
        statusChecks: {{conditions: [{{type: Ready, status: "True"}}]}}
  generateSelector: true
  hooks:
    sync:
      webhook: {{url: "http://127.0.0.1:{port}/sync"}}
"#
    )
}

/// Each Gadget as (name, version, UID, Ready), by name.
async fn gadgets(api: &Api<DynamicObject>) -> Vec<(String, String, String, bool)> {
    let mut out: Vec<_> = api
        .list(&Default::default())
        .await
        .expect("listing Gadgets")
        .items
        .into_iter()
        .filter(|g| g.metadata.deletion_timestamp.is_none())
        .map(|g| {
            let ready = g.data["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            });
            (
                g.metadata.name.clone().unwrap_or_default(),
                g.data["spec"]["version"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                g.metadata.uid.clone().unwrap_or_default(),
                ready,
            )
        })
        .collect();
    out.sort();
    out
}

/// Marks a Gadget `Ready`, as the controller of Gadgets would.
async fn make_ready(api: &Api<DynamicObject>, name: &str) {
    let status = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("marking a Gadget Ready");
}

/// The Roller's `Updated` condition as (status, reason, message).
async fn updated(rollers: &Api<DynamicObject>) -> Option<(String, String, String)> {
    let roller = rollers.get(PARENT).await.ok()?;
    let c = roller.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Updated")?
        .clone();
    let text = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
    Some((text("status"), text("reason"), text("message")))
}

/// Waits until the Gadgets are `want` (name, version).
async fn versions(
    api: &Api<DynamicObject>,
    want: &[(&str, &str)],
) -> Vec<(String, String, String, bool)> {
    wait_for(&format!("Gadgets {want:?}"), || async {
        let now = gadgets(api).await;
        let got: Vec<(&str, &str)> = now
            .iter()
            .map(|(n, v, _, _)| (n.as_str(), v.as_str()))
            .collect();
        (got == want).then_some(now)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_survives_the_driver_being_killed_halfway() {
    let client: Client = admin().await;
    apply_crds(
        &client,
        vec![
            e2e_crd("Roller", "rollers"),
            e2e_crd("Gadget", "gadgets"),
            serde_json::to_value(metahook_driver::revisions::crd()).expect("a CRD serializes"),
        ],
    )
    .await;
    let hooks = python_hooks::start("rolling", ANSWER, manifest);
    let controllers = hooks.controllers.clone();
    let ns = namespace(&client, "e2e-rolling").await;
    let rollers = dynamic(&client, &ns, GROUP, "v1", "Roller");
    let gadget_api = dynamic(&client, &ns, GROUP, "v1", "Gadget");
    let revisions = dynamic(
        &client,
        &ns,
        "metacontroller.k8s.io",
        "v1alpha1",
        "ControllerRevision",
    );
    let first = start_drive(&kubeconfig(), &controllers).await;

    // A new Roller: its Gadgets all on the first revision at once.
    let roller: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "Roller",
        "metadata": {"name": PARENT},
        "spec": {"version": "v1", "replicas": 3},
    }))
    .expect("a Roller");
    rollers
        .create(&PostParams::default(), &roller)
        .await
        .expect("creating the Roller");
    let names = ["r-0", "r-1", "r-2"];
    versions(&gadget_api, &[("r-0", "v1"), ("r-1", "v1"), ("r-2", "v1")]).await;
    for name in names {
        make_ready(&gadget_api, name).await;
    }
    wait_for("the Roller on its first revision", || async {
        (updated(&rollers).await?.1 == "OnLatestRevision").then_some(())
    })
    .await;

    // A new version: the first Gadget is recreated, and the rollout waits
    // for it to be Ready.
    let v2 = json!({"spec": {"version": "v2"}});
    rollers
        .patch(PARENT, &PatchParams::default(), &Patch::Merge(&v2))
        .await
        .expect("patching the Roller");
    versions(&gadget_api, &[("r-0", "v2"), ("r-1", "v1"), ("r-2", "v1")]).await;
    let waiting = wait_for("the rollout waiting for r-0", || async {
        let u = updated(&rollers).await?;
        (u.1 == "RolloutWaiting").then_some(u)
    })
    .await;
    assert_eq!(
        waiting.2,
        "child Gadget r-0 failed status check: required condition type missing: \"Ready\""
    );

    // Killed halfway; another driver takes it up.
    first.signal("KILL");
    drop(first);
    let before = gadgets(&gadget_api).await;
    let second = start_drive(&kubeconfig(), &controllers).await;
    // It waits as the first did: nothing recreated, nothing moved.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        gadgets(&gadget_api).await,
        before,
        "the new driver changed a Gadget while it had to wait"
    );

    // Each Gadget made Ready lets the next one go, in the hook's order.
    make_ready(&gadget_api, "r-0").await;
    versions(&gadget_api, &[("r-0", "v2"), ("r-1", "v2"), ("r-2", "v1")]).await;
    make_ready(&gadget_api, "r-1").await;
    versions(&gadget_api, &[("r-0", "v2"), ("r-1", "v2"), ("r-2", "v2")]).await;
    make_ready(&gadget_api, "r-2").await;
    let done = wait_for("the rollout's end", || async {
        let u = updated(&rollers).await?;
        (u.1 == "OnLatestRevision").then_some(u)
    })
    .await;
    let left = revisions
        .list(&Default::default())
        .await
        .expect("listing ControllerRevisions")
        .items;
    assert_eq!(left.len(), 1, "one ControllerRevision left");
    let name = left[0].metadata.name.clone().unwrap_or_default();
    assert_eq!(done.2, format!("latest ControllerRevision: {name}"));
    assert_eq!(
        left[0].data["parentPatch"],
        json!({"spec": {"version": "v2", "replicas": 3}})
    );

    // Each Gadget deleted exactly once, whichever driver did it.
    let mut deleted: Vec<String> = driver_writes(&ns)
        .into_iter()
        .filter(|w| w.resource == "gadgets" && w.verb == "delete" && w.code < 300)
        .map(|w| w.name)
        .collect();
    deleted.sort();
    assert_eq!(deleted, names);
    drop(second);
    drop_namespace(&client, &ns).await;
}
