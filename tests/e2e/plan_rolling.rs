//! `metahook plan --live --controllers DIR` for a CompositeController
//! whose children roll: a Roller (a CRD) owns three Gadgets rolled by
//! `RollingRecreate` behind a `Ready` condition the test sets (the hook of
//! `rolling.rs`, `hooks/rolling.py`). `metahook drive` rolls them out; with
//! the driver stopped, the plan finds nothing to change (exit 0); after
//! the Roller's version changes, it reports what the driver does next —
//! the new ControllerRevision created, the old one's claims updated, the
//! first Gadget recreated, the `Updated` condition — and nothing else
//! (exit 2). Then the driver starts again, and its first writes of
//! revisions and Gadgets, as the audit log has them, are the plan's. The
//! plan runs as a user bound only to `manifests --plan-role --controllers
//! DIR`, which reads the ControllerRevisions; it only read.

use crate::plan::{
    assert_only_reads, bind_plan_role, counts, kubeconfig_of_nobody, plan_live, unbind_plan_role,
};
use crate::python_hooks::{self, e2e_crd};
use crate::support::*;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

const NAME: &str = "e2e-plan-rolling";
const GROUP: &str = "e2e.metahook.dev";

fn manifest(port: u16) -> String {
    crate::rolling::manifest_named(NAME, port, true)
}

/// The Roller's `Updated` condition's reason.
async fn updated(rollers: &Api<DynamicObject>) -> Option<String> {
    let roller = rollers.get("r").await.ok()?;
    let conditions = roller.data["status"]["conditions"].as_array()?.clone();
    let c = conditions.into_iter().find(|c| c["type"] == "Updated")?;
    c["reason"].as_str().map(str::to_owned)
}

/// Each Gadget's (name, spec.version), by name, once every Gadget is
/// `want`.
async fn gadgets_are(gadgets: &Api<DynamicObject>, want: &[(&str, &str)]) {
    wait_for(&format!("Gadgets {want:?}"), || async {
        let mut now: Vec<(String, String)> = gadgets
            .list(&Default::default())
            .await
            .ok()?
            .items
            .into_iter()
            .filter(|g| g.metadata.deletion_timestamp.is_none())
            .map(|g| {
                let version = g.data["spec"]["version"].as_str().unwrap_or_default();
                (g.metadata.name.unwrap_or_default(), version.to_owned())
            })
            .collect();
        now.sort();
        let got: Vec<(&str, &str)> = now.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        (got == want).then_some(())
    })
    .await;
}

/// A plan's steps of revisions and Gadgets as (resource, verb, name), as
/// the audit log names the driver's writes.
fn planned_writes(parent: &Value) -> Vec<(String, String, String)> {
    let steps = parent["steps"].as_array().cloned().unwrap_or_default();
    steps
        .iter()
        .filter_map(|s| {
            let name = s["name"].as_str()?.to_owned();
            let (resource, verb) = match s["op"].as_str()? {
                "createRevision" => ("controllerrevisions", "create"),
                "updateRevision" => ("controllerrevisions", "patch"),
                "deleteRevision" => ("controllerrevisions", "delete"),
                "delete" => ("gadgets", "delete"),
                "apply" => ("gadgets", "patch"),
                _ => return None,
            };
            Some((resource.to_owned(), verb.to_owned(), name))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_live_plans_a_rolling_controller_s_next_move_and_its_revisions() {
    let admin_config = kubeconfig();
    let client = admin().await;
    apply_crds(
        &client,
        vec![
            e2e_crd("Roller", "rollers"),
            e2e_crd("Gadget", "gadgets"),
            serde_json::to_value(metahook_driver::decide::revisions::crd())
                .expect("a CRD serializes"),
        ],
    )
    .await;
    let hooks = python_hooks::start(NAME, include_str!("hooks/rolling.py"), manifest);
    let dir = hooks.controllers.to_str().expect("a UTF-8 path").to_owned();
    let ns = namespace(&client, "e2e-plan-rolling").await;
    let rollers = dynamic(&client, &ns, GROUP, "v1", "Roller");
    let gadgets = dynamic(&client, &ns, GROUP, "v1", "Gadget");

    let driver = start_drive(&admin_config, &hooks.controllers).await;
    let roller: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "Roller",
        "metadata": {"name": "r"}, "spec": {"version": "v1", "replicas": 3},
    }))
    .expect("a Roller");
    rollers
        .create(&PostParams::default(), &roller)
        .await
        .expect("creating the Roller");
    let v1 = [("r-0", "v1"), ("r-1", "v1"), ("r-2", "v1")];
    gadgets_are(&gadgets, &v1).await;
    let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    for (name, _) in v1 {
        gadgets
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&ready))
            .await
            .expect("marking a Gadget Ready");
    }
    wait_for("the Roller on its first revision", || async {
        (updated(&rollers).await? == "OnLatestRevision").then_some(())
    })
    .await;
    drop(driver);

    let user = "metahook-plan-rolling-e2e";
    let as_planner = kubeconfig_of_nobody(user);
    let parents =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, "v1", "Roller"), "rollers");
    let role = bind_plan_role(&client, user, &["--controllers", dir.as_str()], &parents).await;
    let args = ["--controllers", dir.as_str(), "--namespace", ns.as_str()];
    let converged = plan_live(&as_planner, &args);
    assert_eq!(
        converged.code, 0,
        "a rolled-out Roller plans no change:\n{}{}",
        converged.stdout, converged.stderr
    );
    assert_eq!(
        converged.stdout,
        "No changes: 1 parent, each as the driver would leave it.\n"
    );

    // A new version while nothing drives.
    let v2 = json!({"spec": {"version": "v2"}});
    rollers
        .patch("r", &PatchParams::default(), &Patch::Merge(&v2))
        .await
        .expect("patching the Roller");
    let planned = plan_live(
        &as_planner,
        &[args.as_slice(), &["--output", "json"]].concat(),
    );
    assert_eq!(planned.code, 2, "a change planned:\n{}", planned.stderr);
    let plan: Value = serde_json::from_str(&planned.stdout).expect("one JSON document");
    assert_eq!(counts(&plan), [1, 0, 1, 0], "{plan:#}");
    let parent = &plan["parents"][0];
    let ops: Vec<&str> = parent["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["op"].as_str())
        .collect();
    assert_eq!(
        ops,
        [
            "createRevision",
            "updateRevision",
            "delete",
            "writeStatus",
            "event"
        ],
        "the revisions, then the one Gadget that moves: {plan:#}"
    );
    let steps = &parent["steps"];
    assert_eq!(steps[2]["name"], "r-0", "{plan:#}");
    assert_eq!(steps[2]["detail"], "recreate", "{plan:#}");
    let condition = steps[3]["changed"]
        .as_array()
        .expect("changed")
        .iter()
        .find(|c| c["path"] == "status.conditions")
        .map(|c| c["to"][0].clone());
    assert_eq!(
        condition,
        Some(
            json!({"type": "Updated", "status": "False", "reason": "RolloutProgressing",
                    "message": "updating Gadget r-0"})
        ),
        "{plan:#}"
    );
    let requests = assert_only_reads(user);
    eprintln!("the plan's requests, two plans of a rolling Roller: {requests}");
    unbind_plan_role(&client, &role).await;

    // The driver again: its first writes of revisions and Gadgets are the
    // plan's, in its order.
    let expected = planned_writes(parent);
    let before = driver_writes(&ns).len();
    let driver = start_drive(&admin_config, &hooks.controllers).await;
    gadgets_are(&gadgets, &[("r-0", "v2"), ("r-1", "v1"), ("r-2", "v1")]).await;
    let done = wait_for("the driver's writes in the audit log", || async {
        let writes: Vec<(String, String, String)> = driver_writes(&ns)
            .into_iter()
            .skip(before)
            .filter(|w| ["controllerrevisions", "gadgets"].contains(&w.resource.as_str()))
            .map(|w| (w.resource, w.verb, w.name))
            .collect();
        (writes.len() > expected.len()).then_some(writes)
    })
    .await;
    assert_eq!(
        done[..expected.len()],
        expected[..],
        "the driver's first writes are the plan's; then r-0 made again: {done:?}"
    );
    assert_eq!(
        done[expected.len()],
        ("gadgets".to_owned(), "patch".to_owned(), "r-0".to_owned()),
        "{done:?}"
    );
    drop(driver);
    drop(hooks);
    drop_namespace(&client, &ns).await;
}
