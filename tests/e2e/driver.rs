//! The bundled driver end to end: `metahook serve --drive` (the built
//! binary) against the real control plane, checked only through the API.

use crate::scenarios::{Engine, foo_refuses, hello, hikawa};
use crate::support::*;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use serde_json::json;
use std::path::Path;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driver_reconciles_every_controller() {
    let path = kubeconfig();
    let client = admin().await;
    install_crds(&client).await;
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
    let _driver = start(
        kubeconfig,
        &[
            "drive",
            "--controllers",
            dir.to_str().expect("a UTF-8 path"),
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
    let hello: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "fraim.co.jp/v1", "kind": "Hello",
        "metadata": {"name": "remote", "namespace": ns},
        "spec": {"replicas": 1}
    }))
    .expect("a Hello");
    hellos
        .create(&PostParams::default(), &hello)
        .await
        .expect("creating the Hello");
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
