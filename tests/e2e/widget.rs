//! A controller of someone's own — examples/widget, a crate outside this
//! workspace that depends on the library by path — as its user runs it:
//! its binary prints its CRD, serves its hooks to a request as
//! Metacontroller sends it, and `serve --drive` converges a Widget on the
//! real control plane and finalizes it. `tests/e2e/run.sh` builds the
//! binary and names it in METAHOOK_E2E_WIDGET.

use crate::support::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The widget-operator binary.
fn binary() -> PathBuf {
    match std::env::var_os("METAHOOK_E2E_WIDGET") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "METAHOOK_E2E_WIDGET is not set: tests/e2e/run.sh builds examples/widget and names its binary"
        ),
    }
}

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn run(args: &[&str]) -> (Running, u16) {
    let port = free_port();
    let child = Command::new(binary())
        .args(args)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("KUBECONFIG", kubeconfig())
        .env("RUST_LOG", "info")
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting widget-operator");
    let running = Running(child);
    wait_ready("widget-operator to be ready", port).await;
    (running, port)
}

fn widget_api(client: &kube::Client, ns: &str) -> Api<kube::api::DynamicObject> {
    dynamic(client, ns, "example.metahook.dev", "v1", "Widget")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_own_controller_is_served_driven_and_finalized() {
    // Its CRD, from its own Rust types.
    let crds = Command::new(binary())
        .arg("crds")
        .output()
        .expect("widget-operator crds");
    assert!(
        crds.status.success(),
        "{}",
        String::from_utf8_lossy(&crds.stderr)
    );
    let crd: Value = serde_saphyr::from_str(&String::from_utf8_lossy(&crds.stdout)).expect("YAML");
    assert_eq!(crd["spec"]["names"]["kind"], "Widget");
    let client = admin().await;
    apply_crds(&client, vec![crd]).await;

    // Its hooks, to a request as Metacontroller sends it.
    let (_server, port) = run(&["serve"]).await;
    let request = json!({
        "controller": {"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
                       "metadata": {"name": "widget"}},
        "parent": {"apiVersion": "example.metahook.dev/v1", "kind": "Widget",
                   "metadata": {"name": "w", "namespace": "shop", "uid": "u-1", "generation": 1},
                   "spec": {"message": "hi", "copies": 2}},
        "children": {"ConfigMap.v1": {}},
        "related": {},
        "finalizing": false,
    });
    let answer = post(port, "/widget/sync", &request);
    assert_eq!(answer["children"][0]["data"]["text"], "hi hi", "{answer}");

    // Driven by its own binary on the control plane.
    let (_driver, _) = run(&["serve", "--drive"]).await;
    let ns = namespace(&client, "e2e-widget").await;
    let widgets = widget_api(&client, &ns);
    let widget = serde_json::from_value(json!({
        "apiVersion": "example.metahook.dev/v1", "kind": "Widget",
        "metadata": {"name": "greeting", "namespace": ns},
        "spec": {"message": "hello", "copies": 3},
    }))
    .expect("a Widget");
    widgets
        .create(&PostParams::default(), &widget)
        .await
        .expect("creating a Widget");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    wait_for("the Widget to be written and Ready", || async {
        let w = widgets.get("greeting").await.ok()?;
        let status = w.data.get("status")?;
        let ready = status["conditions"][0]["status"] == "True";
        (ready && status["written"] == "hello hello hello").then_some(())
    })
    .await;
    let config_map = config_maps.get("greeting").await.expect("its ConfigMap");
    let owner = &config_map.metadata.owner_references.expect("owned")[0];
    assert_eq!(owner.kind, "Widget");
    assert_eq!(owner.controller, Some(true));

    // Deleted: the finalize hook holds it until its ConfigMap is gone.
    widgets
        .delete("greeting", &DeleteParams::default())
        .await
        .expect("deleting the Widget");
    wait_gone("the Widget to be finalized and gone", &widgets, "greeting").await;
    wait_gone("its ConfigMap", &config_maps, "greeting").await;
    drop_namespace(&client, &ns).await;
}

/// POSTs `body` as JSON and returns the 200 answer.
fn post(port: u16, path: &str, body: &Value) -> Value {
    use std::io::{Read, Write};
    let text = body.to_string();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connecting");
    write!(
        s,
        "POST {path} HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{text}",
        text.len()
    )
    .expect("sending");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("reading");
    assert!(
        answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200"),
        "{answer}"
    );
    serde_json::from_str(answer.split_once("\r\n\r\n").map_or("", |(_, b)| b)).expect("JSON")
}
