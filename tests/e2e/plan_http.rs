//! `metahook plan --live --controllers DIR` with hooks this binary does not
//! have: Metacontroller's own configmappropagation example (examples/ of
//! its source archive, as `tests/metacontroller/build.sh` extracts it), its
//! `sync.py` unmodified under `tests/examples/python_hook.py` as the
//! examples step runs it, its CompositeController's webhooks pointed at it
//! on loopback. `metahook drive` converges three ConfigMapPropagations
//! (cluster-scoped; a customize hook names each one's source ConfigMap);
//! with the driver stopped, the plan calls the same Python hooks over HTTP
//! and finds nothing to change (exit 0); after one parent gains a target
//! namespace, it reports that parent's new ConfigMap and status and
//! nothing else (exit 2). The plan runs as a user bound only to the role
//! `manifests --plan-role --controllers DIR` prints; the audit log shows
//! it only read.

use crate::plan::{assert_only_reads, bind_plan_role, counts, kubeconfig_of_nobody, plan_live};
use crate::support::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

const PARENTS: usize = 3;
/// The example, in the source `tests/metacontroller/build.sh` links.
const EXAMPLE: &str = "target/metacontroller/src/examples/configmappropagation";
/// Where its CompositeController's webhooks point: a Service in the
/// cluster, which the test replaces by its loopback server.
const SERVICE_URL: &str = "http://configmap-propagation-controller.metacontroller/";

/// The example's hook server, killed when dropped.
struct ExampleHooks(Child);

impl Drop for ExampleHooks {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn propagations() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            "examples.metacontroller.io",
            "v1alpha1",
            "ConfigMapPropagation",
        ),
        "configmappropagations",
    )
}

/// The example's `sync.py` on `port` (its port 80 moved there), answering
/// once it listens.
async fn start_hooks(example: &Path, port: u16) -> ExampleHooks {
    let child = Command::new("python3")
        .arg(root().join("tests/examples/python_hook.py"))
        .arg(example.join("manifest/sync.py"))
        .env("EXAMPLES_PORTS", json!({"80": port}).to_string())
        .spawn()
        .expect("starting python3");
    let hooks = ExampleHooks(child);
    wait_for("the example's hook server to listen", || async {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    })
    .await;
    hooks
}

/// The example's CompositeController, its webhooks at `port` on loopback,
/// alone in a directory: the `--controllers` of `drive` and `plan`.
fn controllers_dir(example: &Path, port: u16) -> PathBuf {
    let text = std::fs::read_to_string(example.join("manifest/configmap-propagation.yaml"))
        .expect("the example's manifest");
    let controller = text
        .split("\n---")
        .find(|doc| doc.contains("kind: CompositeController"))
        .expect("its CompositeController");
    assert_eq!(controller.matches(SERVICE_URL).count(), 2, "{controller}");
    let controller = controller.replace(SERVICE_URL, &format!("http://127.0.0.1:{port}/"));
    let dir = std::env::temp_dir().join(format!("metahook-e2e-plan-http-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temp dir");
    std::fs::write(dir.join("configmap-propagation.yaml"), controller)
        .expect("writing the manifest");
    dir
}

/// Whether `name` reports `copies` ConfigMaps expected and made.
async fn propagated(api: &Api<DynamicObject>, name: &str, copies: usize) -> bool {
    let Ok(parent) = api.get(name).await else {
        return false;
    };
    let status = &parent.data["status"];
    status["expected_copies"] == json!(copies) && status["actual_copies"] == json!(copies)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_live_calls_a_metacontroller_example_s_python_hooks_over_http() {
    let admin_config = kubeconfig();
    let client = admin().await;
    let example = root().join(EXAMPLE);
    let crd: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(example.join("v1/crdv1.yaml")).expect("the example's CRD"),
    )
    .expect("a YAML CRD");
    apply_crds(&client, vec![crd]).await;
    let port = free_port();
    let hooks = start_hooks(&example, port).await;
    let controllers = controllers_dir(&example, port);
    let dir = controllers.to_str().expect("a UTF-8 path");

    // A source ConfigMap; each parent copies it into a namespace of its own.
    let source = namespace(&client, "e2e-plan-http").await;
    Api::<ConfigMap>::namespaced(client.clone(), &source)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "settings"}, "data": {"some": "value"},
            }))
            .expect("a ConfigMap"),
        )
        .await
        .expect("creating the source ConfigMap");
    let mut targets = Vec::new();
    for i in 0..=PARENTS {
        targets.push(namespace(&client, &format!("e2e-plan-http-{i}")).await);
    }
    let parents: Vec<String> = (0..PARENTS).map(|i| format!("{source}-{i}")).collect();
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &propagations());
    let driver = start_drive(&admin_config, &controllers).await;
    for (name, target) in parents.iter().zip(&targets) {
        let parent = json!({
            "apiVersion": "examples.metacontroller.io/v1alpha1",
            "kind": "ConfigMapPropagation",
            // `version: v1`: the example's CompositeController selects it.
            "metadata": {"name": name, "labels": {"version": "v1", "e2e-plan-http": source}},
            "spec": {"sourceName": "settings", "sourceNamespace": source,
                     "targetNamespaces": [target]},
        });
        api.create(
            &PostParams::default(),
            &serde_json::from_value(parent).expect("a parent"),
        )
        .await
        .expect("creating a ConfigMapPropagation");
    }
    for name in &parents {
        wait_for(&format!("{name} to propagate its ConfigMap"), || async {
            propagated(&api, name, 1).await.then_some(())
        })
        .await;
    }
    drop(driver);

    let user = "metahook-plan-http-e2e";
    let as_planner = kubeconfig_of_nobody(user);
    let selector = format!("e2e-plan-http={source}");
    let args = ["--controllers", dir, "--selector", &selector];
    // Bound to nothing, the user may not even list the parents.
    let denied = plan_live(&as_planner, &args);
    assert_eq!(denied.code, 1, "{}", denied.stderr);
    assert!(denied.stderr.contains("forbidden"), "{}", denied.stderr);

    let role = bind_plan_role(
        &client,
        user,
        &["--controllers", dir, "--service", "e2e-propagation"],
        &propagations(),
    )
    .await;
    let converged = plan_live(&as_planner, &args);
    assert_eq!(
        converged.code, 0,
        "a converged cluster plans no change:\n{}",
        converged.stderr
    );
    assert!(
        converged.stdout.starts_with(&format!(
            "No changes: {PARENTS} parents, each as the driver would leave it.\n"
        )),
        "{}",
        converged.stdout
    );

    // One parent copies into one more namespace while nothing drives.
    let changed = &parents[1];
    let extra = &targets[PARENTS];
    api.patch(
        changed,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"targetNamespaces": [targets[1], extra]}})),
    )
    .await
    .expect("changing a ConfigMapPropagation");
    let planned = plan_live(
        &as_planner,
        &[args.as_slice(), &["--output", "json"]].concat(),
    );
    assert_eq!(planned.code, 2, "a change planned:\n{}", planned.stderr);
    let plan: Value = serde_json::from_str(&planned.stdout).expect("one JSON document");
    let parents_planned = plan["parents"].as_array().expect("parents");
    assert_eq!(
        parents_planned.len(),
        1,
        "only the changed parent: {plan:#}"
    );
    let parent = &parents_planned[0];
    assert_eq!(parent["name"], changed.as_str());
    assert_eq!(parent["controller"], "configmap-propagation-controller");
    assert_eq!(parent["hook"], "sync");
    let steps = parent["steps"].as_array().expect("steps");
    let applies: Vec<&Value> = steps.iter().filter(|s| s["op"] == "apply").collect();
    assert_eq!(
        applies,
        [&json!({
            "op": "apply", "kind": "ConfigMap", "namespace": extra, "name": "settings",
            "detail": "create",
        })],
        "the new namespace's copy, and the other copy left alone: {plan:#}"
    );
    let status: Vec<&Value> = steps
        .iter()
        .filter(|s| s["op"] == "writeStatus")
        .flat_map(|s| s["changed"].as_array().into_iter().flatten())
        .filter(|c| c["path"] != "status.observedGeneration")
        .collect();
    assert_eq!(
        status,
        [&json!({"path": "status.expected_copies", "from": 1, "to": 2})],
        "the hook's status: two copies expected, one made so far: {plan:#}"
    );
    let others: Vec<&Value> = steps
        .iter()
        .filter(|s| !matches!(s["op"].as_str(), Some("apply" | "writeStatus" | "event")))
        .collect();
    assert!(others.is_empty(), "no other operation: {plan:#}");
    let n = PARENTS as u64;
    assert_eq!(counts(&plan), [n, n - 1, 1, 0], "{plan:#}");

    let requests = assert_only_reads(user);
    eprintln!("the plan's requests, three plans of {PARENTS} parents: {requests}");

    crate::plan::unbind_plan_role(&client, &role).await;
    drop(hooks);
    cleanup(&client, &api, &parents, &source, &targets).await;
    let _ = std::fs::remove_dir_all(&controllers);
}

/// The parents (no finalizer: the garbage collector takes their copies)
/// and the namespaces.
async fn cleanup(
    client: &Client,
    api: &Api<DynamicObject>,
    parents: &[String],
    source: &str,
    targets: &[String],
) {
    for name in parents {
        let _ = api.delete(name, &DeleteParams::default()).await;
    }
    drop_namespace(client, source).await;
    for target in targets {
        drop_namespace(client, target).await;
    }
}
