//! The seeds' CRDs (`support::crds`: `chart/crds/` and the stored version of `chart/conversion/`) on the real API server: accepted, every sample in
//! `samples/` created, specs the schema forbids refused with a message
//! naming the field, printer columns shown by `kubectl get`.

use crate::support::*;
use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use std::path::Path;

/// The served version of `kind`'s CRD, and its plural.
fn resource(kind: &str) -> (ApiResource, Vec<String>) {
    let crd = crds()
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .unwrap_or_else(|| panic!("a CRD for {kind} among the seeds' CRDs"));
    let version = crd
        .spec
        .versions
        .iter()
        .find(|v| v.served)
        .expect("a served version");
    let gvk = GroupVersionKind::gvk(&crd.spec.group, &version.name, kind);
    let columns = version
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| c.name.to_uppercase())
        .collect();
    (
        ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural),
        columns,
    )
}

fn api(client: &Client, ns: &str, kind: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &resource(kind).0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn samples_are_accepted_and_printed_with_their_columns() {
    let client = admin().await;
    install_crds(&client).await;
    let ns = namespace(&client, "e2e-samples").await;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut created = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("samples/") {
        let path = entry.expect("an entry").path();
        let text = std::fs::read_to_string(&path).expect("a sample");
        let sample: DynamicObject =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let kind = sample
            .types
            .as_ref()
            .expect("apiVersion and kind")
            .kind
            .clone();
        api(&client, &ns, &kind)
            .create(&PostParams::default(), &sample)
            .await
            .unwrap_or_else(|e| panic!("{} refused: {e}", path.display()));
        created.push(kind);
    }
    created.sort();
    assert_eq!(created, ["Foo", "Hello", "Hikawa"], "one sample per parent");

    for kind in &created {
        let (resource, columns) = resource(kind);
        let out = kubectl(&["get", &resource.plural, "-n", &ns]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "kubectl get {}: {}",
            resource.plural,
            String::from_utf8_lossy(&out.stderr)
        );
        let header: Vec<&str> = text
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        let mut want = vec!["NAME".to_owned()];
        want.extend(columns);
        assert_eq!(header, want, "kubectl get {}:\n{text}", resource.plural);
    }
    drop_namespace(&client, &ns).await;
}

/// Specs each CRD's schema forbids, and the field the refusal must name.
fn forbidden() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        ("Hello", json!({"replicas": 21}), "spec.replicas"),
        ("Hello", json!({"replicas": -1}), "spec.replicas"),
        ("Hello", json!({"replicas": 1, "image": ""}), "spec.image"),
        ("Hikawa", json!({}), "spec.intervalMillis"),
        (
            "Hikawa",
            json!({"intervalMillis": 3_600_001}),
            "spec.intervalMillis",
        ),
        (
            "Foo",
            json!({"deploymentName": "Not_A_Name", "replicas": 1}),
            "spec.deploymentName",
        ),
        // Absent, deploymentName is the default hook's to fill (Foo's own
        // name); empty, the schema refuses it.
        (
            "Foo",
            json!({"deploymentName": "", "replicas": 1}),
            "spec.deploymentName",
        ),
        ("Zundoko", json!({"say": "Hello"}), "spec.say"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn specs_the_schema_forbids_are_refused_naming_the_field() {
    let client = admin().await;
    install_crds(&client).await;
    let ns = namespace(&client, "e2e-schema").await;
    for (i, (kind, spec, field)) in forbidden().into_iter().enumerate() {
        let (resource, _) = resource(kind);
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": resource.api_version, "kind": kind,
            "metadata": {"name": format!("forbidden-{i}")},
            "spec": spec,
        }))
        .expect("an object");
        let err = api(&client, &ns, kind)
            .create(&PostParams::default(), &object)
            .await
            .expect_err(&format!("{kind} {spec} must be refused"));
        let kube::Error::Api(status) = &err else {
            panic!("{kind} {spec}: not an API error: {err}");
        };
        assert_eq!(status.code, 422, "{kind} {spec}: {status:?}");
        assert!(
            status.message.contains(field),
            "{kind} {spec}: the refusal names {field}: {}",
            status.message
        );
    }
    drop_namespace(&client, &ns).await;
}
