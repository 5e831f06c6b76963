//! The bundled driver end to end: `metahook serve --drive` (the built
//! binary) against the real control plane, checked only through the API.

use crate::scenarios::{Engine, foo_refuses, hello, hikawa};
use crate::support::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driver_reconciles_every_controller() {
    let (path, client) = cluster_with_crds().await;
    {
        let driver = start_driver(&path).await;
        let engine = Engine::Driver {
            port: driver.debug_port(),
        };
        hello(&client, engine).await;
        hikawa(&client).await;
        foo_refuses(&client, engine).await;
    }
    // The same through `metahook drive`: hooks over HTTP (served by a plain
    // `metahook serve`), with leader election on a Lease. One driver at a
    // time: the first one stopped above.
    drive_over_http(&client, &path).await;
}

async fn drive_over_http(client: &Client, kubeconfig: &Path) {
    let hooks = start(kubeconfig, &["serve"]).await;
    let dir = hello_manifest_at(hooks.port, None, "metahook-e2e-controllers");
    let _driver = start_drive_with(
        kubeconfig,
        &dir,
        &[
            "--leader-election",
            "--leader-election-namespace",
            "default",
            "--pod-name",
            "e2e",
        ],
    )
    .await;
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), "default");
    let lease = leases
        .get("metahook-driver")
        .await
        .expect("the driver's Lease");
    assert_eq!(
        lease.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("e2e")
    );

    let ns = namespace(client, "e2e-http").await;
    let hellos = hello_api(client, &ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    create_hello(&hellos, "fraim.co.jp/v1", "remote", &[], 1).await;
    wait_for("the Deployment made through HTTP hooks", || async {
        let d = deployments.get_opt("remote").await.ok()??;
        (d.spec?.replicas == Some(1)).then_some(())
    })
    .await;
    hellos
        .delete("remote", &DeleteParams::default())
        .await
        .expect("deleting the Hello");
    wait_gone(
        "the Hello to go through the HTTP finalize hook",
        &hellos,
        "remote",
    )
    .await;
    drop_namespace(client, &ns).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A driver started before its parent type's CRD waits for it, not ready,
/// and drives it once it is installed (as Metacontroller retries); it used
/// to exit ("is the CRD installed?").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_started_before_its_crd_waits_for_it() {
    let client = admin().await;
    let group = "later.metahook.dev";
    let dir = std::env::temp_dir().join(format!("metahook-e2e-later-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let manifest = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("chart/metacontroller/hello.yaml"),
    )
    .expect("hello.yaml")
    .replace("fraim.co.jp/v1", &format!("{group}/v1"));
    std::fs::write(dir.join("hello.yaml"), manifest).expect("writing the manifest");
    let mut driver = spawn(
        &kubeconfig(),
        &[
            "serve",
            "--drive",
            "--controllers",
            dir.to_str().expect("a UTF-8 path"),
        ],
    );
    // Waiting for a type that is not there: alive, and not ready.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert!(
        driver
            .child
            .try_wait()
            .expect("the driver's state")
            .is_none(),
        "the driver exited instead of waiting for its CRD"
    );
    assert!(!readyz(driver.port), "ready with its parent type missing");
    // The Hello CRD under another group.
    let mut crd = crds()
        .into_iter()
        .map(|c| serde_json::to_value(c).expect("a CRD serializes"))
        .find(|c| c["spec"]["group"] == "fraim.co.jp")
        .expect("the Hello CRD");
    crd["spec"]["group"] = json!(group);
    crd["metadata"]["name"] = json!(format!("helloes.{group}"));
    let crd_names = apply_crds(&client, vec![crd]).await;
    wait_ready("the driver to find its type and be ready", driver.port).await;
    let ns = namespace(&client, "e2e-later").await;
    let hellos: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns,
        &kube::api::ApiResource {
            group: group.to_owned(),
            version: "v1".to_owned(),
            api_version: format!("{group}/v1"),
            kind: "Hello".to_owned(),
            plural: "helloes".to_owned(),
        },
    );
    create_hello(&hellos, &format!("{group}/v1"), "late", &[], 1).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    wait_for("the Deployment of a Hello of the late type", || async {
        deployments.get_opt("late").await.ok()?.map(|_| ())
    })
    .await;
    // The driver finalizes the Hello; then the type goes, so that a run
    // again on this cluster starts without it.
    drop_namespace(&client, &ns).await;
    drop(driver);
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for name in crd_names {
        let _ = crds.delete(&name, &DeleteParams::default()).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `parentResource.ignoreStatusChanges: true`: someone else's write to a
/// converged Hello's status queues nothing (the status stays as they wrote
/// it), a label change does (and the driver writes the status back).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignore_status_changes_leaves_a_status_write_alone() {
    let (path, client) = cluster_with_crds().await;
    let hooks = start(&path, &["serve"]).await;
    let dir = hello_manifest_at(hooks.port, None, "metahook-e2e-ignore-status");
    let manifest = dir.join("hello.yaml");
    let text = std::fs::read_to_string(&manifest).expect("the manifest");
    let ignoring = text.replacen(
        "    resource: helloes\n",
        "    resource: helloes\n    ignoreStatusChanges: true\n",
        1,
    );
    assert_ne!(ignoring, text, "the parentResource's resource line");
    std::fs::write(&manifest, ignoring).expect("writing the manifest");
    let driver = start_drive(&path, &dir).await;
    let ns = namespace(&client, "e2e-ignore-status").await;
    let hellos = hello_api(&client, &ns);
    create_hellos(&client, &ns, &["quiet".to_owned()], 1).await;
    wait_for("the Hello converged", || async {
        converged(&client, &ns, "quiet", 1).await.then_some(())
    })
    .await;
    let reconciles = || {
        metric(
            driver.port,
            "metahook_driver_reconciles_total{controller=\"hello\"",
        )
    };
    // Settled: no reconcile for two seconds.
    let settled = wait_for("the reconciles to settle", || async {
        let before = reconciles();
        tokio::time::sleep(Duration::from_secs(2)).await;
        (reconciles() == before).then_some(before)
    })
    .await;

    let status = |generation: i64| json!({"status": {"observedGeneration": generation}});
    hellos
        .patch_status("quiet", &PatchParams::default(), &Patch::Merge(&status(0)))
        .await
        .expect("writing the status as someone else");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let hello = hellos.get("quiet").await.expect("the Hello");
    assert_eq!(
        hello.data["status"]["observedGeneration"], 0,
        "the driver rewrote the status"
    );
    assert_eq!(reconciles(), settled, "a status write queued the Hello");

    let label = json!({"metadata": {"labels": {"touched": "yes"}}});
    hellos
        .patch("quiet", &PatchParams::default(), &Patch::Merge(&label))
        .await
        .expect("labelling the Hello");
    wait_for("the status written back after a label change", || async {
        let hello = hellos.get("quiet").await.ok()?;
        (hello.data["status"]["observedGeneration"] == json!(hello.metadata.generation))
            .then_some(())
    })
    .await;
    // Counted once the reconcile ends, after its status write: seen
    // written back first, on a busy machine, with the count not yet up.
    wait_for("the label change's reconcile counted", || async {
        (reconciles() > settled).then_some(())
    })
    .await;
    drop(driver);
    drop_namespace(&client, &ns).await;
}
