//! The bundled driver end to end: `metahook serve --drive` (the built
//! binary) against the real control plane, checked only through the API.

use crate::support::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use std::path::Path;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driver_reconciles_every_controller() {
    let path = kubeconfig();
    let client = admin().await;
    install_crds(&client).await;
    {
        let driver = start_driver(&path).await;
        hello(&client, driver.port).await;
        hikawa(&client).await;
        foo_refuses(&client).await;
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

/// Runs `write` with the Hello CRD's `spec.replicas` bounds removed, then
/// puts the CRD back as `crds/` has it: how an object the schema now
/// forbids gets into a cluster (it was written before the CRD tightened).
async fn with_loose_hello_schema<F, Fut, T>(client: &Client, write: F) -> T
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let strict = crds()
        .into_iter()
        .find(|c| c.metadata.name.as_deref() == Some("helloes.fraim.co.jp"))
        .expect("the Hello CRD in crds/");
    let mut loose = serde_json::to_value(&strict).expect("a CRD is JSON");
    let replicas = &mut loose["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"]["replicas"];
    replicas
        .as_object_mut()
        .expect("spec.replicas in the schema")
        .remove("maximum");
    let apply = PatchParams::apply("metahook-e2e").force();
    api.patch("helloes.fraim.co.jp", &apply, &Patch::Apply(&loose))
        .await
        .expect("loosening the Hello CRD");
    // The new schema is served once the CRD's storage is rebuilt: retry
    // the write until the server takes it.
    let result = write().await;
    api.patch("helloes.fraim.co.jp", &apply, &Patch::Apply(&strict))
        .await
        .expect("restoring the Hello CRD");
    result
}

/// Hello: creates its Deployment, scaling reaches it, status fills in, a
/// spec the schema forbids is refused by the API server, one that got in
/// anyway loses nothing and warns, deletion runs finalize and removes the
/// finalizer.
async fn hello(client: &Client, driver_port: u16) {
    let ns = namespace(client, "e2e-hello").await;
    let hellos = hello_api(client, &ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let hello: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "fraim.co.jp/v1", "kind": "Hello",
        "metadata": {"name": "greeter", "namespace": ns},
        "spec": {"replicas": 2}
    }))
    .expect("a Hello");
    let created = hellos
        .create(&PostParams::default(), &hello)
        .await
        .expect("creating the Hello");
    let uid = created.metadata.uid.clone().expect("a uid");

    let deployment = wait_for("the Hello's Deployment", || async {
        deployments.get_opt("greeter").await.ok().flatten()
    })
    .await;
    let owner = deployment
        .metadata
        .owner_references
        .clone()
        .unwrap_or_default();
    assert!(
        owner
            .iter()
            .any(|r| r.uid == uid && r.controller == Some(true)),
        "the Deployment is controlled by the Hello: {owner:?}"
    );
    assert_eq!(deployment.spec.as_ref().map(|s| s.replicas), Some(Some(2)));
    let deployment_uid = deployment.metadata.uid.clone().expect("a uid");

    // Ready replicas come from the controller-manager's ReplicaSets and the
    // kubelet stand-in's pods, through the Deployment's status.
    let finalizer = "metacontroller.io/compositecontroller-hello";
    let filled = wait_for("the Hello's status", || async {
        let h = hellos.get("greeter").await.ok()?;
        let status = h.data.get("status")?;
        (status["observedGeneration"] == json!(h.metadata.generation?)
            && status["readyReplicas"] == json!(2))
        .then_some(h)
    })
    .await;
    assert!(
        filled
            .metadata
            .finalizers
            .clone()
            .unwrap_or_default()
            .iter()
            .any(|f| f == finalizer)
    );

    // What the driver did is on /debug/driver (loopback): the caches, and a
    // record of the Hello's last reconcile.
    let overview = debug_json(driver_port, "/debug/driver");
    assert_eq!(overview["driving"], true, "{overview}");
    assert!(
        overview["caches"].as_array().is_some_and(|c| c
            .iter()
            .any(|c| c["kind"] == "Hello" && c["synced"] == true)),
        "{overview}"
    );
    let records = debug_json(
        driver_port,
        &format!("/debug/driver/reconciles?controller=hello&namespace={ns}"),
    );
    let record = &records[0];
    assert_eq!(record["controller"], "hello", "{records}");
    assert_eq!(record["parent"]["name"], "greeter");
    assert_eq!(record["parent"]["uid"], json!(uid));
    assert!(
        ["Succeeded", "Unchanged"].contains(&record["outcome"].as_str().unwrap_or_default()),
        "{record}"
    );
    assert_eq!(record["children"]["observed"], 1, "{record}");

    // Claiming: an orphan matching the selector is adopted and, as the hook
    // does not desire it, deleted; another controller's object is left alone.
    let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), &ns);
    let other_owner = configmaps
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "other-owner"}}))
                .expect("a ConfigMap"),
        )
        .await
        .expect("creating the ConfigMap");
    let labelled = |name: &str, owner: Option<&str>| -> Deployment {
        let mut d = json!({
            "metadata": {"name": name, "labels": {"controller-uid": uid}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
        });
        if let Some(owner_uid) = owner {
            d["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
                "name": "other-owner", "uid": owner_uid, "controller": true}]);
        }
        serde_json::from_value(d).expect("a Deployment")
    };
    let other_uid = other_owner.metadata.uid.clone().expect("a uid");
    deployments
        .create(
            &PostParams::default(),
            &labelled("foreign", Some(&other_uid)),
        )
        .await
        .expect("creating the foreign Deployment");
    deployments
        .create(&PostParams::default(), &labelled("stray", None))
        .await
        .expect("creating the stray Deployment");
    wait_gone(
        "the adopted stray Deployment to be deleted",
        &deployments,
        "stray",
    )
    .await;

    // Scaling reaches the Deployment.
    hellos
        .patch(
            "greeter",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scaling the Hello");
    wait_for("the scale-up", || async {
        let d = deployments.get("greeter").await.ok()?;
        (d.spec?.replicas == Some(3)).then_some(())
    })
    .await;

    // The API server refuses a spec the CRD's schema forbids, naming the
    // field.
    let refused = hellos
        .patch(
            "greeter",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 21}})),
        )
        .await
        .expect_err("the schema allows at most 20 replicas");
    let message = refused.to_string();
    assert!(
        message.contains("spec.replicas") && message.contains("20"),
        "the refusal names the field and the bound: {message}"
    );

    // One that got in before the schema said so loses nothing and says why.
    let invalid = with_loose_hello_schema(client, || {
        wait_for("the loosened schema to accept 21 replicas", || async {
            hellos
                .patch(
                    "greeter",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"replicas": 21}})),
                )
                .await
                .ok()
        })
    })
    .await;
    let generation = invalid.metadata.generation.expect("a generation");
    let status = wait_for("the InvalidSpec condition", || async {
        let h = hellos.get("greeter").await.ok()?;
        let status = h.data.get("status")?.clone();
        (status["observedGeneration"] == json!(generation)).then_some(status)
    })
    .await;
    let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
    assert!(
        conditions
            .iter()
            .any(|c| c["status"] == "False" && c["reason"] == "InvalidSpec"),
        "{conditions:?}"
    );
    let held = deployments
        .get("greeter")
        .await
        .expect("the Deployment is still there");
    assert_eq!(
        held.metadata.uid.as_deref(),
        Some(deployment_uid.as_str()),
        "same Deployment"
    );
    assert_eq!(held.spec.map(|s| s.replicas), Some(Some(3)), "nothing lost");
    wait_for("a Warning event about the invalid spec", || async {
        let warnings = warnings_about(client, &ns, "greeter").await;
        warnings
            .iter()
            .any(|e| e.reason.as_deref() == Some("InvalidSpec"))
            .then_some(())
    })
    .await;

    let foreign = deployments
        .get("foreign")
        .await
        .expect("the foreign Deployment is still there");
    let owners = foreign.metadata.owner_references.unwrap_or_default();
    assert_eq!(
        owners.len(),
        1,
        "another controller's Deployment is never touched"
    );
    assert_eq!(owners[0].uid, other_uid);

    // Deletion: finalize deletes the Deployment, then the finalizer goes and
    // the Hello with it (its spec still past the schema: removing the
    // finalizer changes metadata only, which the server allows).
    hellos
        .delete("greeter", &DeleteParams::default())
        .await
        .expect("deleting the Hello");
    wait_gone("the Deployment to go", &deployments, "greeter").await;
    wait_gone("the Hello to go (finalizer removed)", &hellos, "greeter").await;
    wait_for("the Hello's record to go with it", || async {
        (debug_json(
            driver_port,
            &format!("/debug/driver/reconciles?namespace={ns}"),
        ) == json!([]))
        .then_some(())
    })
    .await;
    drop_namespace(client, &ns).await;
}

/// Hikawa: sings Zundokos until a Kiyoshi.
async fn hikawa(client: &Client) {
    let ns = namespace(client, "e2e-hikawa").await;
    let group = "zundokokiyoshi.kaitoy.github.com";
    let hikawas = dynamic(client, &ns, group, "v1beta1", "Hikawa");
    let kiyoshis = dynamic(client, &ns, group, "v1beta1", "Kiyoshi");
    let hikawa: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1beta1"), "kind": "Hikawa",
        "metadata": {"name": "kiyoshi", "namespace": ns},
        "spec": {"intervalMillis": 10}
    }))
    .expect("a Hikawa");
    let created = hikawas
        .create(&PostParams::default(), &hikawa)
        .await
        .expect("creating the Hikawa");
    let uid = created.metadata.uid.expect("a uid");
    wait_for("a Kiyoshi of the Hikawa", || async {
        let list = kiyoshis.list(&Default::default()).await.ok()?;
        list.items
            .iter()
            .any(|k| {
                k.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|r| r.uid == uid && r.controller == Some(true))
            })
            .then_some(())
    })
    .await;
    // The status catches up with the children: the whole song, ending on
    // the first Zun Zun Zun Zun Doko, one Zundoko per word said.
    let zundokos = dynamic(client, &ns, group, "v1beta1", "Zundoko");
    let status = wait_for("the Hikawa's status to say Kiyoshi!", || async {
        let status = hikawas
            .get("kiyoshi")
            .await
            .ok()?
            .data
            .get("status")
            .cloned()?;
        (status["kiyoshied"] == true).then_some(status)
    })
    .await;
    let song = status["song"].as_str().unwrap_or_default().to_owned();
    assert!(song.ends_with("Zun Zun Zun Zun Doko Kiyoshi!"), "{song}");
    assert!(
        !song
            .trim_end_matches("Zun Zun Zun Zun Doko Kiyoshi!")
            .contains("Zun Zun Zun Zun Doko"),
        "sang past the first Zun Zun Zun Zun Doko: {song}"
    );
    let said = zundokos
        .list(&Default::default())
        .await
        .expect("listing Zundokos")
        .items
        .len();
    assert_eq!(status["numZundokosSaid"], json!(said), "{status}");
    assert_eq!(
        kiyoshis
            .list(&Default::default())
            .await
            .expect("listing Kiyoshis")
            .items
            .len(),
        1
    );
    drop_namespace(client, &ns).await;
}

/// Foo: refuses a same-named Deployment it does not control.
async fn foo_refuses(client: &Client) {
    let ns = namespace(client, "e2e-foo").await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let foreign: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "taken", "namespace": ns},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "other"}},
                 "template": {"metadata": {"labels": {"app": "other"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    }))
    .expect("a Deployment");
    deployments
        .create(&PostParams::default(), &foreign)
        .await
        .expect("creating the foreign Deployment");
    let foos = dynamic(client, &ns, "samplecontroller.k8s.io", "v1alpha1", "Foo");
    let parent: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
        "metadata": {"name": "example-foo", "namespace": ns},
        "spec": {"deploymentName": "taken", "replicas": 3}
    }))
    .expect("a Foo");
    foos.create(&PostParams::default(), &parent)
        .await
        .expect("creating the Foo");
    wait_for(
        "an ErrResourceExists Warning about the foreign Deployment",
        || async {
            let warnings = warnings_about(client, &ns, "example-foo").await;
            warnings
                .iter()
                .any(|e| {
                    e.reason.as_deref() == Some("ErrResourceExists")
                        && e.note.as_deref().is_some_and(|n| {
                            n.contains(
                                r#"Resource "taken" already exists and is not managed by Foo"#,
                            )
                        })
                })
                .then_some(())
        },
    )
    .await;
    let still = deployments
        .get("taken")
        .await
        .expect("the foreign Deployment is still there");
    assert!(
        still
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty(),
        "not adopted"
    );
    assert_eq!(still.spec.map(|s| s.replicas), Some(Some(1)), "not changed");
    drop_namespace(client, &ns).await;
}

/// A `/debug/driver` answer of the driver listening on `port`.
fn debug_json(port: u16, path: &str) -> serde_json::Value {
    let (status, body) = http("GET", &format!("127.0.0.1:{port}"), path).expect("an answer");
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).expect("JSON")
}
