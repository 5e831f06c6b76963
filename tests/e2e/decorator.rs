//! A DecoratorController under `metahook drive`, against the real control
//! plane: a small Python hook server (written here, run with python3)
//! decorates ConfigMaps chosen by an annotation and Widgets (a CRD with a
//! status subresource) chosen by a label, as Metacontroller's
//! service-per-pod and clusteredparent examples do: labels and annotations
//! edited on the object, a status through the subresource, a Secret
//! attached with the object as its controller owner, removed when the hook
//! stops wanting it, and the finalize hook called on deletion.

use crate::python_hooks::{self, e2e_crd};
use crate::support::*;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::path::Path;

const NAME: &str = "e2e-decorator";
const FINALIZER: &str = "metacontroller.io/decoratorcontroller-e2e-decorator";
const DECORATE: &str = "e2e.metahook.dev/decorate";
const WANT: &str = "e2e.metahook.dev/want-secret";

/// The hook: labels `decorated-by: e2e` and removes `remove-me`; counts its
/// attachments into an annotation; wants a Secret `<name>-attached` unless
/// the object is annotated `want-secret: "no"`; sets a status; finalize
/// appends the object's name to `finalized.log`, says `finalized` and still
/// wants the Secret (so that only its owner reference removes it).
const ANSWER: &str = include_str!("hooks/decorator.py");

fn manifest(port: u16) -> String {
    format!(
        r#"apiVersion: metacontroller.k8s.io/v1alpha1
kind: DecoratorController
metadata:
  name: {NAME}
spec:
  resources:
    - apiVersion: v1
      resource: configmaps
      annotationSelector:
        matchExpressions:
          - {{key: {DECORATE}, operator: Exists}}
    - apiVersion: e2e.metahook.dev/v1
      resource: widgets
      labelSelector:
        matchLabels: {{decorate: "yes"}}
  attachments:
    - apiVersion: v1
      resource: secrets
  hooks:
    sync:
      webhook: {{url: "http://127.0.0.1:{port}/sync"}}
    finalize:
      webhook: {{url: "http://127.0.0.1:{port}/finalize"}}
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decorator_controller_decorates_attaches_and_finalizes() {
    let path = kubeconfig();
    let client = admin().await;
    apply_crds(&client, vec![e2e_crd("Widget", "widgets")]).await;
    let hooks = python_hooks::start("decorator", ANSWER, manifest);
    let (controllers, log) = (hooks.controllers.clone(), hooks.dir.join("finalized.log"));
    std::fs::write(&log, "").expect("writing the finalize log");
    let _driver = start_drive(&path, &controllers).await;
    let ns = namespace(&client, "e2e-decorator").await;
    decorates_a_config_map(&client, &ns, &log).await;
    writes_a_widgets_status(&client, &ns).await;
    drop_namespace(&client, &ns).await;
}

async fn decorates_a_config_map(client: &Client, ns: &str, log: &Path) {
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let cm = |name: &str, decorate: bool| {
        let annotations = if decorate {
            json!({DECORATE: ""})
        } else {
            json!({})
        };
        serde_json::from_value::<ConfigMap>(json!({
            "metadata": {"name": name, "labels": {"remove-me": "x"}, "annotations": annotations},
            "data": {"k": "v"},
        }))
        .expect("a ConfigMap")
    };
    maps.create(&PostParams::default(), &cm("plain", false))
        .await
        .expect("creating a ConfigMap");
    let made = maps
        .create(&PostParams::default(), &cm("decorated", true))
        .await
        .expect("creating a ConfigMap");
    let uid = made.metadata.uid.clone().expect("a UID");

    say("decorator: labels, annotations and the finalizer on the ConfigMap");
    wait_for("the ConfigMap decorated", || async {
        let m = maps.get("decorated").await.ok()?;
        let labels = m.metadata.labels.clone().unwrap_or_default();
        let annotations = m.metadata.annotations.clone().unwrap_or_default();
        let finalizers = m.metadata.finalizers.clone().unwrap_or_default();
        (labels.get("decorated-by").map(String::as_str) == Some("e2e")
            && !labels.contains_key("remove-me")
            // The second pass saw the Secret the first attached.
            && annotations.get("e2e.metahook.dev/attachments-seen").map(String::as_str) == Some("1")
            && finalizers == [FINALIZER])
        .then_some(())
    })
    .await;

    say("decorator: the Secret attached, controlled by the ConfigMap");
    let secret = wait_for("the attached Secret", || async {
        secrets.get_opt("decorated-attached").await.ok()?
    })
    .await;
    let owners = serde_json::to_value(secret.metadata.owner_references.unwrap_or_default())
        .expect("owner references as JSON");
    assert_eq!(
        owners,
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "decorated", "uid": uid,
                "controller": true, "blockOwnerDeletion": true}])
    );
    assert_eq!(
        secret
            .metadata
            .annotations
            .unwrap_or_default()
            .get("metacontroller.k8s.io/decorator-controller")
            .map(String::as_str),
        Some(NAME)
    );

    say("decorator: the Secret deleted when the hook no longer wants it");
    let annotate = |value: &'static str| {
        let maps = maps.clone();
        async move {
            maps.patch(
                "decorated",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {WANT: value}}})),
            )
            .await
            .expect("annotating the ConfigMap");
        }
    };
    annotate("no").await;
    wait_gone(
        "the unwanted Secret deleted",
        &secrets,
        "decorated-attached",
    )
    .await;
    annotate("yes").await;
    wait_for("the Secret attached again", || async {
        secrets.get_opt("decorated-attached").await.ok()?
    })
    .await;

    say("decorator: deleting the ConfigMap calls finalize, which lets it go");
    maps.delete("decorated", &DeleteParams::default())
        .await
        .expect("deleting the ConfigMap");
    wait_gone("the finalized ConfigMap", &maps, "decorated").await;
    let finalized = std::fs::read_to_string(log).expect("the finalize log");
    assert!(
        finalized.lines().any(|l| l == "decorated"),
        "finalize was not called for the ConfigMap: {finalized:?}"
    );
    // Its owner gone, the garbage collector takes the attachment the
    // finalize hook still wanted: the driver deleted it only when the hook
    // stopped wanting it.
    wait_gone(
        "the Secret garbage-collected",
        &secrets,
        "decorated-attached",
    )
    .await;
    let deletes = driver_writes(ns)
        .into_iter()
        .filter(|w| w.verb == "delete" && w.name == "decorated-attached")
        .count();
    assert_eq!(deletes, 1, "the driver deleted the Secret {deletes} times");

    // The ConfigMap the annotation selector does not select was never
    // touched.
    let plain = maps.get("plain").await.expect("the plain ConfigMap");
    assert_eq!(
        plain
            .metadata
            .labels
            .unwrap_or_default()
            .get("remove-me")
            .map(String::as_str),
        Some("x")
    );
    assert!(plain.metadata.finalizers.unwrap_or_default().is_empty());
    assert!(
        secrets
            .get_opt("plain-attached")
            .await
            .expect("a Secret read")
            .is_none()
    );
}

async fn writes_a_widgets_status(client: &Client, ns: &str) {
    say("decorator: a Widget's status through its status subresource");
    let widgets = dynamic(client, ns, "e2e.metahook.dev", "v1", "Widget");
    let widget = serde_json::from_value(json!({
        "apiVersion": "e2e.metahook.dev/v1", "kind": "Widget",
        "metadata": {"name": "w", "labels": {"decorate": "yes"}},
        "spec": {"size": 1},
    }))
    .expect("a Widget");
    widgets
        .create(&PostParams::default(), &widget)
        .await
        .expect("creating a Widget");
    wait_for("the Widget's status and label", || async {
        let w = widgets.get("w").await.ok()?;
        let labelled = w
            .metadata
            .labels
            .clone()
            .unwrap_or_default()
            .get("decorated-by")
            == Some(&"e2e".to_owned());
        // The hook's status exactly: no observedGeneration added.
        (labelled && w.data.get("status") == Some(&json!({"decorated": true, "attachments": 1})))
            .then_some(())
    })
    .await;
    widgets
        .delete("w", &DeleteParams::default())
        .await
        .expect("deleting the Widget");
    wait_gone("the finalized Widget", &widgets, "w").await;
}
