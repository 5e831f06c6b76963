//! `metahook plan --live --controllers DIR` for a DecoratorController,
//! its hooks a Python server on loopback (`hooks/plan_decorator.py`): it
//! decorates ConfigMaps chosen by an annotation and Widgets (a CRD with
//! a status subresource) chosen by a label — labels and an annotation on
//! the object, its finalizer, a status on the Widget, and a Secret
//! attached to each (`InPlace`). `metahook drive` converges them; with
//! the driver stopped, the plan finds nothing to change (exit 0); after
//! one ConfigMap asks for another Secret text, it reports that
//! ConfigMap's Secret and nothing else (exit 2). The plan runs as a user
//! bound only to the role `manifests --plan-role --controllers DIR`
//! prints; the audit log shows it only read.

use crate::plan::{
    assert_only_reads, bind_plan_role, counts, kubeconfig_of_nobody, plan_live, unbind_plan_role,
};
use crate::python_hooks::{self, e2e_crd};
use crate::support::*;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use serde_json::{Value, json};

const NAME: &str = "e2e-plan-decorator";
const FINALIZER: &str = "metacontroller.io/decoratorcontroller-e2e-plan-decorator";
const DECORATE: &str = "e2e.metahook.dev/plan-decorate";
const SEEN: &str = "e2e.metahook.dev/attachments-seen";
const TEXT: &str = "e2e.metahook.dev/secret-text";
/// Every object of the test carries it: the plan's `--selector`.
const MINE: &str = "e2e-plan-decorator";

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
        matchLabels: {{plan-decorate: "yes"}}
  attachments:
    - apiVersion: v1
      resource: secrets
      updateStrategy: {{method: InPlace}}
  hooks:
    sync:
      webhook: {{url: "http://127.0.0.1:{port}/sync"}}
    finalize:
      webhook: {{url: "http://127.0.0.1:{port}/finalize"}}
"#
    )
}

/// Whether `object` is decorated as the driver leaves it, its Secret seen.
fn decorated(object: &DynamicObject) -> bool {
    let meta = &object.metadata;
    meta.labels.as_ref().and_then(|l| l.get("decorated-by")) == Some(&"e2e-plan".to_owned())
        && meta.annotations.as_ref().and_then(|a| a.get(SEEN)) == Some(&"1".to_owned())
        && meta.finalizers.as_deref() == Some(&[FINALIZER.to_owned()][..])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_live_plans_a_decorator_controller_s_objects_and_attachments() {
    let admin_config = kubeconfig();
    let client = admin().await;
    apply_crds(&client, vec![e2e_crd("Widget", "widgets")]).await;
    let hooks = python_hooks::start(NAME, include_str!("hooks/plan_decorator.py"), manifest);
    let dir = hooks.controllers.to_str().expect("a UTF-8 path").to_owned();
    let ns = namespace(&client, "e2e-plan-decorator").await;
    let config_maps = ApiResource::erase::<ConfigMap>(&());
    let maps: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &config_maps);
    let widgets = dynamic(&client, &ns, "e2e.metahook.dev", "v1", "Widget");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);

    let driver = start_drive(&admin_config, &hooks.controllers).await;
    let map = |name: &str, annotations: Value| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {MINE: "yes"}, "annotations": annotations},
            "data": {"k": "v"},
        }))
        .expect("a ConfigMap")
    };
    let decorated_maps = ["cm-0", "cm-1"];
    for name in decorated_maps {
        maps.create(&PostParams::default(), &map(name, json!({DECORATE: ""})))
            .await
            .expect("creating a ConfigMap");
    }
    maps.create(&PostParams::default(), &map("plain", json!({})))
        .await
        .expect("creating a ConfigMap");
    let widget = json!({
        "apiVersion": "e2e.metahook.dev/v1", "kind": "Widget",
        "metadata": {"name": "w", "labels": {MINE: "yes", "plan-decorate": "yes"}},
        "spec": {"size": 1},
    });
    widgets
        .create(
            &PostParams::default(),
            &serde_json::from_value(widget).expect("a Widget"),
        )
        .await
        .expect("creating a Widget");
    for name in decorated_maps {
        wait_for(&format!("{name} decorated, its Secret seen"), || async {
            decorated(&maps.get(name).await.ok()?).then_some(())
        })
        .await;
    }
    wait_for("the Widget decorated, its status written", || async {
        let w = widgets.get("w").await.ok()?;
        (decorated(&w) && w.data["status"] == json!({"decorated": true, "attachments": 1}))
            .then_some(())
    })
    .await;
    drop(driver);
    let attached = secrets.get("cm-1-attached").await.expect("cm-1's Secret");
    let annotations = attached.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations
            .get("metacontroller.k8s.io/decorator-controller")
            .map(String::as_str),
        Some(NAME),
        "an attachment names its decorator"
    );

    let user = "metahook-plan-decorator-e2e";
    let as_planner = kubeconfig_of_nobody(user);
    let selector = format!("{MINE}=yes");
    let args = [
        "--controllers",
        dir.as_str(),
        "--namespace",
        ns.as_str(),
        "--selector",
        selector.as_str(),
    ];
    let role = bind_plan_role(
        &client,
        user,
        &["--controllers", dir.as_str()],
        &config_maps,
    )
    .await;
    let converged = plan_live(&as_planner, &args);
    assert_eq!(
        converged.code, 0,
        "a converged cluster plans no change:\n{}{}",
        converged.stdout, converged.stderr
    );
    // Both resources planned: three ConfigMaps (one not decorated) and
    // the Widget; nothing left out.
    assert_eq!(
        converged.stdout,
        "No changes: 4 parents, each as the driver would leave it.\n"
    );

    // One ConfigMap asks for another text in its Secret while nothing
    // drives.
    maps.patch(
        "cm-1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {TEXT: "v2"}}})),
    )
    .await
    .expect("annotating a ConfigMap");
    let planned = plan_live(
        &as_planner,
        &[args.as_slice(), &["--output", "json"]].concat(),
    );
    assert_eq!(planned.code, 2, "a change planned:\n{}", planned.stderr);
    let plan: Value = serde_json::from_str(&planned.stdout).expect("one JSON document");
    assert_eq!(
        plan["parents"],
        json!([{
            "controller": NAME, "kind": "ConfigMap", "namespace": ns, "name": "cm-1",
            "hook": "sync",
            "steps": [
                {"op": "apply", "kind": "Secret", "namespace": ns, "name": "cm-1-attached",
                 "changed": [{"path": "data.text", "from": "<redacted>", "to": "<redacted>"}]},
                {"op": "event", "detail": "Normal Updated"},
            ],
        }]),
        "only cm-1's Secret, its value redacted: {plan:#}"
    );
    assert_eq!(counts(&plan), [4, 3, 1, 0], "{plan:#}");

    let requests = assert_only_reads(user);
    eprintln!("the plan's requests, two plans of 4 parents: {requests}");
    unbind_plan_role(&client, &role).await;

    // Nothing drives: the finalizers go by hand, then the namespace.
    let unfinalize = PatchParams::default();
    let no_finalizer = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    for name in decorated_maps {
        let _ = maps.patch(name, &unfinalize, &no_finalizer).await;
    }
    let _ = widgets.patch("w", &unfinalize, &no_finalizer).await;
    drop(hooks);
    drop_namespace(&client, &ns).await;
}
