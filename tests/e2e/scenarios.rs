//! The scenarios every engine must pass: the same bodies run under
//! metahook's own driver (`driver.rs`, `faults.rs`) and under the real
//! Metacontroller calling `metahook serve` (`metacontroller.rs`). They check
//! the cluster through the API; what only the driver does (its
//! `/debug/driver` records, the Events it writes for conditions) is checked
//! only when the driver runs.

use crate::support::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::time::Duration;

/// What applies the hooks' decisions to the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// metahook's driver (`serve --drive`), its `/debug/driver` on `port`
    /// (`--debug-driver-listen`).
    Driver { port: u16 },
    /// The real Metacontroller, its hooks answered by `metahook serve`.
    Metacontroller,
}

impl Engine {
    /// How its API requests start their `User-Agent` (the audit log tells
    /// its writes apart by it).
    pub fn user_agent(self) -> &'static str {
        match self {
            Engine::Driver { .. } => "metahook/",
            // client-go's default, from the program's name
            // (metacontroller.rs runs it as `metacontroller`).
            Engine::Metacontroller => "metacontroller/",
        }
    }

    /// The driver's port, when the driver runs.
    pub fn driver_port(self) -> Option<u16> {
        match self {
            Engine::Driver { port } => Some(port),
            Engine::Metacontroller => None,
        }
    }
}

/// No `SyncError` Warning about anything in `ns`: every answer of the hooks
/// was one the engine could apply (both engines write one for each failed
/// reconcile).
///
/// One is allowed, and only for a Hello that is gone: Metacontroller's
/// "can't remove finalizer ... not found". A sync already queued when the
/// finalizer came off reads the deleted Hello from its cache, calls finalize
/// (which rightly says `finalized`), and its finalizer removal (a GET, then
/// an update: `RemoveFinalizer` in pkg/dynamic/clientset) does not swallow
/// NotFound (pkg/controller/composite/controller.go, `syncParentObject`).
/// Nothing a hook answers can prevent it: the parent is already gone.
pub async fn assert_no_sync_error(client: &Client, ns: &str) {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let hellos = hello_api(client, ns);
    let mut errors = Vec::new();
    for e in events
        .list(&Default::default())
        .await
        .expect("listing Events")
        .items
    {
        if e.reason.as_deref() != Some("SyncError") {
            continue;
        }
        let regarding = e.regarding.unwrap_or_default();
        let name = regarding.name.unwrap_or_default();
        let note = e.note.unwrap_or_default();
        let finalized_hello_gone = regarding.kind.as_deref() == Some("Hello")
            && note.contains("can't remove finalizer")
            && note.contains("not found")
            && hellos
                .get_opt(&name)
                .await
                .expect("reading the Hello")
                .is_none_or(|h| h.metadata.uid != regarding.uid);
        if !finalized_hello_gone {
            errors.push(format!("{name}: {note}"));
        }
    }
    assert!(
        errors.is_empty(),
        "sync errors in {ns}:\n{}",
        errors.join("\n")
    );
}

/// The condition of `type_` in a status, if any.
pub fn condition<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Runs `write` with the Hello CRD's `spec.replicas` bounds removed, then
/// puts the CRD back as `chart/crds/` has it: how an object the schema now
/// forbids gets into a cluster (it was written before the CRD tightened).
pub async fn with_loose_hello_schema<F, Fut, T>(client: &Client, write: F) -> T
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let strict = crds()
        .into_iter()
        .find(|c| c.metadata.name.as_deref() == Some("helloes.fraim.co.jp"))
        .expect("the Hello CRD in chart/crds/");
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
pub async fn hello(client: &Client, engine: Engine) {
    control_plane_runs_pods(client).await;
    let ns = namespace(client, "e2e-hello").await;
    let hellos = hello_api(client, &ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let created = create_hello(&hellos, "fraim.co.jp/v1", "greeter", &[], 2).await;
    let uid = created.metadata.uid.clone().expect("a uid");

    let deployment = wait_for("the Hello's Deployment", || async {
        deployments.get_opt("greeter").await.ok().flatten()
    })
    .await;
    let owners = deployment.metadata.owner_references.as_ref();
    assert!(
        controlled_by(owners, &uid),
        "the Deployment is controlled by the Hello: {owners:?}"
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

    // What the driver did is on /debug/driver (a loopback port of its
    // own): the caches, and a record of the Hello's last reconcile.
    if let Some(driver_port) = engine.driver_port() {
        driver_records_the_hello(driver_port, &ns, &uid);
    }

    // Claiming: an orphan matching the selector is adopted and, as the hook
    // does not desire it, deleted; another controller's object is left alone.
    let other_owner = config_map(client, &ns, "other-owner").await;
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
    let spec_valid = condition(&status, "SpecValid");
    assert!(
        spec_valid.is_some_and(|c| c["status"] == "False"
            && c["reason"] == "InvalidSpec"
            && c["message"]
                .as_str()
                .is_some_and(|m| m.contains("replicas: greater than 20"))),
        "SpecValid says why: {status}"
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
    // The driver also says so in an Event (Metacontroller writes none for a
    // condition).
    if engine.driver_port().is_some() {
        wait_for("a Warning event about the invalid spec", || async {
            warned(client, &ns, "greeter", "InvalidSpec", "")
                .await
                .then_some(())
        })
        .await;
    }

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
    if let Some(driver_port) = engine.driver_port() {
        wait_for("the Hello's record to go with it", || async {
            (debug_json(
                driver_port,
                &format!("/debug/driver/reconciles?namespace={ns}"),
            ) == json!([]))
            .then_some(())
        })
        .await;
    }
    assert_no_sync_error(client, &ns).await;
    drop_namespace(client, &ns).await;
}

/// The driver's `/debug/driver` on `port`: the Hello's cache synced, and a
/// record of the Hello's last reconcile in `ns`.
fn driver_records_the_hello(driver_port: u16, ns: &str, uid: &str) {
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
}

/// Hikawa: sings Zundokos until a Kiyoshi.
pub async fn hikawa(client: &Client) {
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
            .any(|k| controlled_by(k.metadata.owner_references.as_ref(), &uid))
            .then_some(())
    })
    .await;
    // The status catches up with the children: the whole song, ending on
    // the first Zun Zun Zun Zun Doko, one Zundoko per word said.
    let zundokos = dynamic(client, &ns, group, "v1beta1", "Zundoko");
    let status = wait_for("the Hikawa's status to say Kiyoshi!", || async {
        let status = status_of(&hikawas, "kiyoshi").await?;
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
    assert_no_sync_error(client, &ns).await;
    drop_namespace(client, &ns).await;
}

/// Foo: refuses a same-named Deployment it does not control, and says so;
/// once that one is gone, runs its own in its place.
pub async fn foo_refuses(client: &Client, engine: Engine) {
    control_plane_runs_pods(client).await;
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
    let created = foos
        .create(&PostParams::default(), &parent)
        .await
        .expect("creating the Foo");
    let generation = created.metadata.generation.expect("a generation");
    let message = r#"Resource "taken" already exists and is not managed by Foo"#;
    // The status says so, whoever wrote it.
    let status = wait_for("the Foo's status to say ErrResourceExists", || async {
        let status = status_of(&foos, "example-foo").await?;
        (status["observedGeneration"] == json!(generation)
            && condition(&status, "Ready").is_some_and(|c| c["reason"] == "ErrResourceExists"))
        .then_some(status)
    })
    .await;
    let ready = condition(&status, "Ready");
    assert!(
        ready.is_some_and(|c| c["status"] == "False"
            && c["reason"] == "ErrResourceExists"
            && c["message"] == message),
        "Ready=False, ErrResourceExists: {status}"
    );
    assert_eq!(status["availableReplicas"], 0, "{status}");
    // The driver also writes it as a Warning Event, as the sample-controller
    // does (Metacontroller writes none for a condition).
    if engine.driver_port().is_some() {
        wait_for(
            "an ErrResourceExists Warning about the foreign Deployment",
            || async {
                warned(client, &ns, "example-foo", "ErrResourceExists", message)
                    .await
                    .then_some(())
            },
        )
        .await;
    }
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

    // Once the other Deployment is gone (a change of a related object, not
    // of a child or the Foo), the Foo runs its own under that name.
    deployments
        .delete("taken", &DeleteParams::background())
        .await
        .expect("deleting the foreign Deployment");
    let uid = created.metadata.uid.clone().expect("a uid");
    wait_for("the Foo's own Deployment in the freed name", || async {
        let d = deployments.get_opt("taken").await.ok()??;
        let owned = controlled_by(d.metadata.owner_references.as_ref(), &uid);
        (owned && d.spec?.replicas == Some(3)).then_some(())
    })
    .await;
    wait_for_showing(
        "the Foo to be Ready with 3 available",
        || async {
            let status = status_of(&foos, "example-foo").await?;
            (condition(&status, "Ready").is_some_and(|c| c["status"] == "True")
                && status["availableReplicas"] == 3)
                .then_some(())
        },
        || async {
            let parent = status_of(&foos, "example-foo").await.unwrap_or_default();
            format!(
                "Foo status: {parent}\n{}",
                pods_and_their_owners(client, &ns).await
            )
        },
    )
    .await;
    assert_no_sync_error(client, &ns).await;
    drop_namespace(client, &ns).await;
}

/// Drift: another writer takes a field of a child (`spec.replicas` of a
/// Hello's Deployment, by a forced server-side apply, as `kubectl apply
/// --server-side --force-conflicts` would), and the engine puts it back,
/// then stops writing: no hot loop. In `ns`, which the caller removes.
pub async fn drift_is_put_back(client: &Client, ns: &str, engine: Engine) {
    let name = names("conflict", 1);
    create_hellos(client, ns, &name, 2).await;
    // The engine's part only: whether the controller-manager has made the
    // pods ready is not this test's subject (on a busy machine its
    // ReplicaSet sync can lag for minutes), and the Deployment's status
    // changing while the test counts writes makes a hot loop likelier to
    // show, not less.
    wait_for("the engine to apply the Hello's Deployment", || async {
        applied(client, ns, &name[0], 2).await.then_some(())
    })
    .await;
    // A reconcile that started before the engine's own write reached its
    // cache may write once more.
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The engine's writes to the Deployment: those the API server took, and
    // all it was sent (a write refused, say a 409, is still a write a hot
    // loop would repeat).
    let deployment_writes = || {
        let writes: Vec<Write> = writes_by(engine.user_agent(), ns)
            .into_iter()
            .filter(|w| w.resource == "deployments" && w.name == name[0])
            .collect();
        let taken = writes
            .iter()
            .filter(|w| (200..300).contains(&w.code))
            .count();
        (taken, writes.len())
    };
    let (taken_before, _) = deployment_writes();
    assert!(
        taken_before >= 1,
        "the audit log shows the {engine:?} creating the Deployment (User-Agent {}...)",
        engine.user_agent()
    );

    // Another field manager takes a field the engine's writes own.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    deployments
        .patch(
            &name[0],
            &PatchParams::apply("intruder").force(),
            &Patch::Apply(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name[0]},
                "spec": {"replicas": 5}
            })),
        )
        .await
        .expect("the intruder's apply");
    wait_for("the engine to take spec.replicas back", || async {
        applied(client, ns, &name[0], 2).await.then_some(())
    })
    .await;
    // A reconcile that started before the engine's own write reached its
    // cache may write once more; then it is quiet.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (taken_after, sent_after) = deployment_writes();
    // A window in which a hot loop would show; nothing is timed.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (_, sent_settled) = deployment_writes();
    say(&format!(
        "conflicting writer under the {engine:?}: {} write(s) of the Deployment took it back, {} more sent in the next 5 s",
        taken_after - taken_before,
        sent_settled - sent_after
    ));
    assert!(
        (1..=2).contains(&(taken_after - taken_before)),
        "one write (two if the cache had not seen the first yet) takes the field back, not {}",
        taken_after - taken_before
    );
    assert_eq!(
        sent_settled, sent_after,
        "no write once it is back: no hot loop"
    );
    delete_all_hellos(client, ns).await;
    assert_no_sync_error(client, ns).await;
}
