//! Conversion on the real API server: Foo's CRD with v1alpha1 (the hub,
//! stored) and v1 (`spec.deployment.{name,replicas}`) served, converted by
//! `metahook serve` over TLS (by URL on loopback, its CA in `caBundle`), as
//! `Controller::crds_with_conversion` writes it. A Foo written at one
//! version is read at the other, its metadata unchanged; a list converts
//! every object; with the hook service gone, only the stored version reads.
//! Then the storage version moves to v1 (as a migration does), a Foo is
//! stored at v1 beside those stored at v1alpha1, and a list at either
//! version converts the mix.
//!
//! A CRD's name is fixed by its group and plural, so this test changes the
//! Foo CRD every other test uses: it puts the stored version's back when it
//! ends, passed or not (the tests run one at a time), with the storage
//! versions it recorded (`status.storedVersions`) set back to v1alpha1.

use crate::admission::serve_tls;
use crate::support::*;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use metahook_core::conversion::ConversionWebhook;
use serde_json::{Value, json};

const GROUP: &str = "samplecontroller.k8s.io";
const CRD: &str = "foos.samplecontroller.k8s.io";

/// Puts the Foo CRD of [`crds`] back if the test ends early (a panic):
/// the async restore at the end cannot run then.
struct Restore {
    armed: bool,
}

impl Drop for Restore {
    fn drop(&mut self) {
        if self.armed {
            // The API server refuses to drop a version still in
            // storedVersions; the Foos stored at v1 go with the namespace.
            let out = kubectl(&[
                "patch",
                "crd",
                CRD,
                "--subresource=status",
                "--type=merge",
                "-p",
                r#"{"status":{"storedVersions":["v1alpha1"]}}"#,
            ]);
            say(&format!(
                "storedVersions of {CRD} reset: {}",
                String::from_utf8_lossy(&out.stdout).trim()
            ));
            let path = std::env::temp_dir().join(format!("{CRD}-{}.json", std::process::id()));
            if let Err(e) = std::fs::write(&path, chart_crd().to_string()) {
                say(&format!(
                    "{CRD} not restored: writing {}: {e}",
                    path.display()
                ));
                return;
            }
            let path = path.to_string_lossy().into_owned();
            let out = kubectl(&[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--field-manager=metahook-e2e",
                "-f",
                &path,
            ]);
            say(&format!(
                "restored {CRD}: {}",
                String::from_utf8_lossy(&out.stdout).trim()
            ));
        }
    }
}

/// The Foo CRD with both versions, converted by the hook service at `port`.
fn crd_with_conversion(port: u16, ca_pem: &str) -> Value {
    let webhook = ConversionWebhook::url(format!("https://127.0.0.1:{port}"))
        .ca_bundle(ca_pem.as_bytes().to_vec());
    let crds = metahook_seeds::foo::controller()
        .crds_with_conversion(&webhook)
        .expect("Foo's versions make one CRD");
    serde_json::to_value(&crds[0]).expect("a CRD serializes")
}

/// The same CRD with `storage` the version stored.
fn storing(mut crd: Value, storage: &str) -> Value {
    for version in crd["spec"]["versions"].as_array_mut().into_iter().flatten() {
        let stored = version["name"] == storage;
        version["storage"] = json!(stored);
    }
    crd
}

fn chart_crd() -> Value {
    let crd = crds()
        .into_iter()
        .find(|c| c.metadata.name.as_deref() == Some(CRD))
        .expect("the seeds own Foo's CRD");
    serde_json::to_value(&crd).expect("a CRD serializes")
}

#[tokio::test]
async fn the_api_server_converts_foos_through_the_hook() {
    let (_, client) = cluster_with_crds().await;
    let ns = namespace(&client, "e2e-conversion").await;
    let (server, ca_pem, _dir) = serve_tls().await;
    let mut restore = Restore { armed: true };
    apply_crds(&client, vec![crd_with_conversion(server.port, &ca_pem)]).await;

    checks(&client, &ns).await;

    say("the hook service stopped: only the stored version reads");
    let dead_port = server.port;
    drop(server);
    let v1 = dynamic(&client, &ns, GROUP, "v1", "Foo");
    let v1alpha1 = dynamic(&client, &ns, GROUP, "v1alpha1", "Foo");
    let failed = v1
        .get("example-foo")
        .await
        .expect_err("no conversion without the hook");
    say(&format!("reading at v1 without the hook: {failed}"));
    let kube::Error::Api(status) = &failed else {
        panic!("not an API error: {failed}")
    };
    // What kube-apiserver 1.37 answers: the stored object cannot be
    // decoded at v1, reported as a storage error naming the webhook.
    assert_eq!(
        (status.code, status.reason.as_str()),
        (500, "InternalError"),
        "{status:?}"
    );
    assert!(
        status.message.contains(
            "conversion webhook for samplecontroller.k8s.io/v1alpha1, Kind=Foo failed: Post"
        ) && status.message.contains("/foo/convert?timeout=30s"),
        "{status:?}"
    );
    v1alpha1
        .get("example-foo")
        .await
        .expect("the stored version needs no conversion");

    mixed(&client, &ns, dead_port, &ca_pem).await;

    // The Foos stored at v1 are deleted (converted by a hook service that
    // is up again) before v1 leaves storedVersions and the CRD.
    let (server, ca_pem, _dir) = serve_tls().await;
    let crd = crd_with_conversion(server.port, &ca_pem);
    apply_crds(&client, vec![crd]).await;
    wait_for("the Foos stored at v1 to be deleted", || async {
        let _ = v1alpha1
            .delete_collection(&Default::default(), &Default::default())
            .await;
        v1alpha1
            .list(&Default::default())
            .await
            .ok()
            .filter(|l| l.items.is_empty())
    })
    .await;
    Api::<CustomResourceDefinition>::all(client.clone())
        .patch_status(
            CRD,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"storedVersions": ["v1alpha1"]}})),
        )
        .await
        .expect("storedVersions back to v1alpha1");
    apply_crds(&client, vec![chart_crd()]).await;
    restore.armed = false;
    let crd = Api::<CustomResourceDefinition>::all(client.clone())
        .get(CRD)
        .await
        .expect("Foo's CRD");
    let versions: Vec<_> = crd.spec.versions.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(versions, ["v1alpha1"], "Foo's CRD put back");
    // kubectl keeps the API server's discovery on disk for minutes and
    // would go on looking for foos at v1, the version that sorted first
    // (a later test, kubectl get foos, got NotFound): `api-resources`
    // reads discovery again and writes it back, until v1 is gone.
    wait_for("kubectl to see Foo served at v1alpha1 only", || async {
        let out = kubectl(&["api-resources", "--api-group", GROUP]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let served = |version: &str| {
            let wanted = format!("{GROUP}/{version}");
            text.split_whitespace().any(|word| word == wanted)
        };
        (out.status.success() && served("v1alpha1") && !served("v1")).then_some(())
    })
    .await;
    drop_namespace(&client, &ns).await;
}

async fn checks(client: &Client, ns: &str) {
    let v1alpha1 = dynamic(client, ns, GROUP, "v1alpha1", "Foo");
    let v1 = dynamic(client, ns, GROUP, "v1", "Foo");

    say("a Foo written at v1alpha1 (seed 004's manifest) read at v1");
    let example: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
        "metadata": {"name": "example-foo", "labels": {"app": "sample"}, "annotations": {"note": "kept"}},
        "spec": {"deploymentName": "foo-deployment", "replicas": 2},
    }))
    .expect("a Foo");
    // The API server reads a new CRD's conversion from an informer: until
    // it has it, v1 may not be served yet.
    v1alpha1
        .create(&PostParams::default(), &example)
        .await
        .expect("a v1alpha1 Foo is stored");
    let stored = v1alpha1.get("example-foo").await.expect("read at v1alpha1");
    let read = wait_for("the Foo to be read at v1", || async {
        v1.get("example-foo").await.ok()
    })
    .await;
    let read = serde_json::to_value(&read).expect("JSON");
    let stored = serde_json::to_value(&stored).expect("JSON");
    assert_eq!(read["apiVersion"], "samplecontroller.k8s.io/v1");
    assert_eq!(
        read["spec"],
        json!({"deployment": {"name": "foo-deployment", "replicas": 2}})
    );
    assert_eq!(read["metadata"], stored["metadata"], "metadata kept");

    say("a Foo written at v1 read at v1alpha1, and at v1 as written");
    let restructured: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "samplecontroller.k8s.io/v1", "kind": "Foo",
        "metadata": {"name": "example-foo-v1", "labels": {"app": "sample"}},
        "spec": {"deployment": {"name": "foo-deployment-v1", "replicas": 1}},
    }))
    .expect("a v1 Foo");
    let created = v1
        .create(&PostParams::default(), &restructured)
        .await
        .expect("a v1 Foo is stored");
    let created = serde_json::to_value(&created).expect("JSON");
    assert_eq!(
        created["spec"],
        json!({"deployment": {"name": "foo-deployment-v1", "replicas": 1}})
    );
    let old = v1alpha1
        .get("example-foo-v1")
        .await
        .expect("read at v1alpha1");
    let old = serde_json::to_value(&old).expect("JSON");
    assert_eq!(
        old["spec"],
        json!({"deploymentName": "foo-deployment-v1", "replicas": 1})
    );
    assert_eq!(old["metadata"], created["metadata"], "metadata kept");

    say("a change at v1 and a status at v1alpha1, each read at the other");
    v1.patch(
        "example-foo",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"deployment": {"replicas": 3}}})),
    )
    .await
    .expect("a change at v1");
    v1alpha1
        .patch_status(
            "example-foo",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"availableReplicas": 3}})),
        )
        .await
        .expect("a status at v1alpha1");
    let old = v1alpha1.get("example-foo").await.expect("read at v1alpha1");
    assert_eq!(old.data["spec"]["replicas"], 3);
    let new = v1.get("example-foo").await.expect("read at v1");
    assert_eq!(new.data["status"]["availableReplicas"], 3);
    assert_eq!(new.data["spec"]["deployment"]["name"], "foo-deployment");

    say("a list at v1: every stored Foo converted");
    let list = v1.list(&Default::default()).await.expect("a list at v1");
    let names: Vec<_> = list
        .items
        .iter()
        .map(|f| {
            (
                f.metadata.name.clone().unwrap_or_default(),
                f.data["spec"]["deployment"]["name"].clone(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("example-foo".to_owned(), json!("foo-deployment")),
            ("example-foo-v1".to_owned(), json!("foo-deployment-v1")),
        ]
    );
    let table = kubectl(&["get", "foos.v1.samplecontroller.k8s.io", "-n", ns]);
    let table = String::from_utf8_lossy(&table.stdout);
    say(&format!("kubectl get foos.v1:\n{table}"));
    let row = table
        .lines()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>())
        .find(|cells| cells.first() == Some(&"example-foo-v1"));
    assert_eq!(
        row,
        Some(vec!["example-foo-v1", "foo-deployment-v1", "1"]),
        "v1's printer columns: {table}"
    );
}

/// Storage moved to v1 while the hook service is down (stopped by the
/// caller, whose CRD points at `dead_port`): a Foo written at v1 needs no
/// conversion then, so its create succeeding says the API server stores
/// v1. With a hook service up again, a list at either version converts
/// what is stored at the other.
async fn mixed(client: &Client, ns: &str, dead_port: u16, dead_ca: &str) {
    let v1alpha1 = dynamic(client, ns, GROUP, "v1alpha1", "Foo");
    let v1 = dynamic(client, ns, GROUP, "v1", "Foo");
    say("storage moved to v1: a Foo stored at v1 beside two at v1alpha1");
    apply_crds(
        client,
        vec![storing(crd_with_conversion(dead_port, dead_ca), "v1")],
    )
    .await;
    let at_v1: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "samplecontroller.k8s.io/v1", "kind": "Foo",
        "metadata": {"name": "example-foo-stored-v1"},
        "spec": {"deployment": {"name": "stored-v1", "replicas": 4}},
    }))
    .expect("a v1 Foo");
    wait_for("the API server to store Foos at v1", || async {
        v1.create(&PostParams::default(), &at_v1).await.ok()
    })
    .await;
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    let crd = crds.get(CRD).await.expect("Foo's CRD");
    let stored = crd.status.and_then(|s| s.stored_versions);
    assert_eq!(stored, Some(vec!["v1alpha1".to_owned(), "v1".to_owned()]));

    let (server, ca_pem, _dir) = serve_tls().await;
    apply_crds(
        client,
        vec![storing(crd_with_conversion(server.port, &ca_pem), "v1")],
    )
    .await;
    say("a list at v1alpha1 and at v1: the mix converted");
    let old = wait_for(
        "a list at v1alpha1 through the new hook service",
        || async { v1alpha1.list(&Default::default()).await.ok() },
    )
    .await;
    let specs = |list: &kube::api::ObjectList<DynamicObject>| -> Vec<(String, Value)> {
        list.items
            .iter()
            .map(|f| {
                let name = f.metadata.name.clone().unwrap_or_default();
                (name, f.data["spec"].clone())
            })
            .collect()
    };
    assert_eq!(
        specs(&old),
        [
            (
                "example-foo".to_owned(),
                json!({"deploymentName": "foo-deployment", "replicas": 3})
            ),
            (
                "example-foo-stored-v1".to_owned(),
                json!({"deploymentName": "stored-v1", "replicas": 4})
            ),
            (
                "example-foo-v1".to_owned(),
                json!({"deploymentName": "foo-deployment-v1", "replicas": 1})
            ),
        ]
    );
    assert!(
        old.items.iter().all(|f| f
            .types
            .as_ref()
            .is_none_or(|t| t.api_version.ends_with("/v1alpha1"))),
        "every item at v1alpha1"
    );
    let new = v1.list(&Default::default()).await.expect("a list at v1");
    assert_eq!(
        specs(&new),
        [
            (
                "example-foo".to_owned(),
                json!({"deployment": {"name": "foo-deployment", "replicas": 3}})
            ),
            (
                "example-foo-stored-v1".to_owned(),
                json!({"deployment": {"name": "stored-v1", "replicas": 4}})
            ),
            (
                "example-foo-v1".to_owned(),
                json!({"deployment": {"name": "foo-deployment-v1", "replicas": 1}})
            ),
        ]
    );
}
