//! A rolling update under `metahook drive`, against the real control plane,
//! with the driver killed mid-rollout: Rollers (a CRD) own Gadgets (a CRD
//! with a status subresource) rolled by `RollingRecreate` behind a `Ready`
//! condition that this test sets, as another controller would — so each
//! step waits for the test, and the rollout is where the test says when the
//! driver dies. A new driver must take it up from the ControllerRevisions:
//! no Gadget recreated twice, the next one only once the moved one is Ready,
//! and one ControllerRevision at the end. And a Roller deleted with its
//! Gadgets and revision orphaned, then made again: the new one adopts the
//! old revision, so its Gadgets still move one at a time.

use crate::python_hooks::{self, e2e_crd};
use crate::support::*;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use std::time::Duration;

const GROUP: &str = "e2e.metahook.dev";
const PARENT: &str = "r";

/// The hook: `spec.replicas` Gadgets `<parent>-<i>`, in that order, each
/// with the parent's `spec.version` (and its `spec.selector`'s labels, if
/// it has one); a status the rollout adds `Updated` to.
const ANSWER: &str = include_str!("hooks/rolling.py");

fn manifest(port: u16) -> String {
    manifest_selecting(port, true)
}

/// With `generate`, children are chosen by the parent's UID; without, by
/// the Roller's own `spec.selector`, which a Roller made again keeps.
fn manifest_selecting(port: u16, generate: bool) -> String {
    manifest_named("e2e-rolling", port, generate)
}

/// The Rollers' CompositeController named `name`: Gadgets rolled by
/// RollingRecreate behind their Ready condition, the hook at `port`.
pub fn manifest_named(name: &str, port: u16, generate: bool) -> String {
    format!(
        r#"apiVersion: metacontroller.k8s.io/v1alpha1
kind: CompositeController
metadata:
  name: {name}
spec:
  parentResource: {{apiVersion: {GROUP}/v1, resource: rollers}}
  childResources:
    - apiVersion: {GROUP}/v1
      resource: gadgets
      updateStrategy:
        method: RollingRecreate
        statusChecks: {{conditions: [{{type: Ready, status: "True"}}]}}
  generateSelector: {generate}
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

/// The Roller, Gadget and ControllerRevision types (group, version, kind).
const KINDS: [(&str, &str, &str); 3] = [
    (GROUP, "v1", "Roller"),
    (GROUP, "v1", "Gadget"),
    ("metacontroller.k8s.io", "v1alpha1", "ControllerRevision"),
];

/// The Roller, Gadget and ControllerRevision APIs in `ns`.
fn apis(client: &Client, ns: &str) -> (Api<DynamicObject>, Api<DynamicObject>, Api<DynamicObject>) {
    let [rollers, gadgets, revisions] =
        KINDS.map(|(group, version, kind)| dynamic(client, ns, group, version, kind));
    (rollers, gadgets, revisions)
}

/// With r-0 moved to v2: each Gadget made Ready lets the next go, in the
/// hook's order, to the rollout's end (its `Updated` condition).
async fn roll_the_rest(
    rollers: &Api<DynamicObject>,
    gadget_api: &Api<DynamicObject>,
) -> (String, String, String) {
    make_ready(gadget_api, "r-0").await;
    versions(gadget_api, &[("r-0", "v2"), ("r-1", "v2"), ("r-2", "v1")]).await;
    make_ready(gadget_api, "r-1").await;
    versions(gadget_api, &[("r-0", "v2"), ("r-1", "v2"), ("r-2", "v2")]).await;
    make_ready(gadget_api, "r-2").await;
    wait_for("the rollout's end", || async {
        let u = updated(rollers).await?;
        (u.1 == "OnLatestRevision").then_some(u)
    })
    .await
}

/// The ControllerRevisions in the test's namespace.
async fn revisions_left(revisions: &Api<DynamicObject>) -> Vec<DynamicObject> {
    revisions
        .list(&Default::default())
        .await
        .expect("listing ControllerRevisions")
        .items
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

async fn install(client: &Client) {
    apply_crds(
        client,
        vec![
            e2e_crd("Roller", "rollers"),
            e2e_crd("Gadget", "gadgets"),
            serde_json::to_value(metahook_driver::decide::revisions::crd())
                .expect("a CRD serializes"),
        ],
    )
    .await;
}

/// Creates the Roller at `version` with three Gadgets, and an
/// `app: rolled` selector and template when `selector`.
async fn create_roller(rollers: &Api<DynamicObject>, version: &str, selector: bool) {
    let mut spec = json!({"version": version, "replicas": 3});
    if selector {
        // Revisions get the template's labels (Metacontroller's rule, as a
        // StatefulSet's): they must match the selector to be the Roller's.
        spec["selector"] = json!({"matchLabels": {"app": "rolled"}});
        spec["template"] = json!({"metadata": {"labels": {"app": "rolled"}}});
    }
    let roller: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "Roller",
        "metadata": {"name": PARENT},
        "spec": spec,
    }))
    .expect("a Roller");
    rollers
        .create(&PostParams::default(), &roller)
        .await
        .expect("creating the Roller");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_survives_the_driver_being_killed_halfway() {
    let client: Client = admin().await;
    install(&client).await;
    let hooks = python_hooks::start("rolling", ANSWER, manifest);
    let controllers = hooks.controllers.clone();
    let ns = namespace(&client, "e2e-rolling").await;
    let (rollers, gadget_api, revisions) = apis(&client, &ns);
    let first = start_drive(&kubeconfig(), &controllers).await;

    // A new Roller: its Gadgets all on the first revision at once.
    create_roller(&rollers, "v1", false).await;
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
    let done = roll_the_rest(&rollers, &gadget_api).await;
    let left = revisions_left(&revisions).await;
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

/// Waits until the garbage collector handles each of `kinds`: it finds a
/// new CRD's type only at a later discovery (every 30 s, longer while some
/// other type's informer cannot sync), and until then neither orphans nor
/// collects its objects. A type it learns after the owner's deletion is
/// worse than late: the owner is orphaned without them, and they are then
/// collected as dependents of an owner that is gone. So a probe of each
/// kind, owned by a ConfigMap that is deleted, must be collected.
async fn gc_knows(client: &Client, ns: &str, kinds: &[(&str, &str, &str)]) {
    let owner = config_map(client, ns, "gc-probe").await;
    let probes: Vec<_> = kinds
        .iter()
        .map(|&(group, version, kind)| (kind, dynamic(client, ns, group, version, kind)))
        .collect();
    for ((group, version, _), (kind, api)) in kinds.iter().zip(&probes) {
        let probe: DynamicObject = serde_json::from_value(json!({
            "apiVersion": format!("{group}/{version}"), "kind": kind,
            "metadata": {"name": "gc-probe", "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": "gc-probe",
                "uid": owner.metadata.uid,
            }]},
            // A ControllerRevision's one required field; the rest take any.
            "parentPatch": {},
        }))
        .expect("a probe");
        api.create(&PostParams::default(), &probe)
            .await
            .expect("creating a probe");
    }
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), ns);
    config_maps
        .delete("gc-probe", &Default::default())
        .await
        .expect("deleting the probes' owner");
    for (kind, api) in &probes {
        wait_gone(
            &format!("the garbage collector to collect a {kind}"),
            api,
            "gc-probe",
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_roller_made_again_adopts_its_orphaned_revision_and_rolls_one_at_a_time() {
    let client: Client = admin().await;
    install(&client).await;
    let hooks = python_hooks::start("rolling-adopt", ANSWER, |port| {
        manifest_selecting(port, false)
    });
    let ns = namespace(&client, "e2e-rolling-adopt").await;
    let (rollers, gadget_api, revisions) = apis(&client, &ns);
    gc_knows(&client, &ns, &KINDS).await;
    let driver = start_drive(&kubeconfig(), &hooks.controllers).await;
    create_roller(&rollers, "v1", true).await;
    versions(&gadget_api, &[("r-0", "v1"), ("r-1", "v1"), ("r-2", "v1")]).await;
    for name in ["r-0", "r-1", "r-2"] {
        make_ready(&gadget_api, name).await;
    }
    wait_for("the Roller on its first revision", || async {
        (updated(&rollers).await?.1 == "OnLatestRevision").then_some(())
    })
    .await;
    let old_uid = rollers
        .get(PARENT)
        .await
        .expect("the Roller")
        .metadata
        .uid
        .unwrap_or_default();

    // Deleted, its Gadgets and revision orphaned (the garbage collector
    // takes the owner references off), then made again at v2.
    rollers
        .delete(
            PARENT,
            &kube::api::DeleteParams {
                propagation_policy: Some(kube::api::PropagationPolicy::Orphan),
                ..Default::default()
            },
        )
        .await
        .expect("deleting the Roller");
    wait_gone("the Roller", &rollers, PARENT).await;
    let owners = |o: &DynamicObject| -> Vec<String> {
        o.metadata
            .owner_references
            .iter()
            .flatten()
            .map(|r| r.uid.clone())
            .collect()
    };
    wait_for("the Gadgets and the revision orphaned", || async {
        let listed = |api: Api<DynamicObject>| async move {
            api.list(&Default::default()).await.ok().map(|l| l.items)
        };
        let mut objects = listed(gadget_api.clone()).await?;
        objects.extend(listed(revisions.clone()).await?);
        (objects.len() == 4 && objects.iter().all(|o| owners(o).is_empty())).then_some(())
    })
    .await;
    let before = gadgets(&gadget_api).await;
    create_roller(&rollers, "v2", true).await;

    // The old revision is the new Roller's: it claims the v1 Gadgets, so
    // only the first moves, and the rest wait for it to be Ready.
    let new_uid = wait_for("the new Roller to adopt the old revision", || async {
        let roller = rollers.get(PARENT).await.ok()?;
        let uid = roller.metadata.uid.clone()?;
        let revs = revisions.list(&Default::default()).await.ok()?.items;
        revs.iter()
            .any(|r| owners(r) == [uid.clone()] && r.data["parentPatch"]["spec"]["version"] == "v1")
            .then_some(uid)
    })
    .await;
    assert_ne!(new_uid, old_uid);
    let moving = versions(&gadget_api, &[("r-0", "v2"), ("r-1", "v1"), ("r-2", "v1")]).await;
    wait_for("the rollout waiting for r-0", || async {
        (updated(&rollers).await?.1 == "RolloutWaiting").then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let still = gadgets(&gadget_api).await;
    assert_eq!(still, moving, "a Gadget moved before r-0 was Ready");
    // r-1 and r-2 are the very objects from before, adopted.
    for (now, then) in still[1..].iter().zip(&before[1..]) {
        assert_eq!(now.2, then.2, "{} was recreated", now.0);
    }
    wait_for("r-1 and r-2 adopted", || async {
        let listed = gadget_api.list(&Default::default()).await.ok()?.items;
        listed
            .iter()
            .all(|g| owners(g) == [new_uid.clone()])
            .then_some(())
    })
    .await;

    roll_the_rest(&rollers, &gadget_api).await;
    let left = revisions_left(&revisions).await;
    assert_eq!(left.len(), 1, "the adopted revision deleted at the end");
    assert_eq!(left[0].data["parentPatch"]["spec"]["version"], "v2");
    drop(driver);
    drop_namespace(&client, &ns).await;
}
