//! A controller of someone's own — examples/widget, a crate outside this
//! workspace that depends on the library by path — as its user runs it:
//! its binary prints its CRD, serves its hooks to a request as
//! Metacontroller sends it, and `serve --drive` converges a Widget on the
//! real control plane and finalizes it; once converged, a change that asks
//! for nothing and a restart write nothing, and once its finalizer is off
//! the Widget is not asked for again (the audit log). `tests/e2e/run.sh`
//! builds the binary and names it in METAHOOK_E2E_WIDGET.

use crate::support::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The widget-operator binary.
/// The binary `var` names (tests/e2e/run.sh builds examples/widget, and
/// its next version for `upgrade.rs`).
pub fn binary_of(var: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "{var} is not set: tests/e2e/run.sh builds examples/widget and its next version (tests/e2e/widget-next.sh)"
        ),
    }
}

fn binary() -> PathBuf {
    binary_of("METAHOOK_E2E_WIDGET")
}

/// A process killed when dropped.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn run(args: &[&str]) -> (Running, u16) {
    run_as(args, &kubeconfig()).await
}

async fn run_as(args: &[&str], kubeconfig: &std::path::Path) -> (Running, u16) {
    start(&binary(), args, kubeconfig).await
}

/// `binary` with `args` and a `--listen` port of its own, as
/// `kubeconfig`'s user, once ready: the process and that port.
pub async fn start(
    binary: &std::path::Path,
    args: &[&str],
    kubeconfig: &std::path::Path,
) -> (Running, u16) {
    let port = free_port();
    let child = Command::new(binary)
        .args(args)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("KUBECONFIG", kubeconfig)
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

/// `new` is the metahook binary's (the `scaffold` feature): a binary
/// built on the library has every other command, and not that one.
#[test]
fn a_users_own_binary_has_no_new() {
    let help = std::process::Command::new(binary())
        .arg("--help")
        .output()
        .expect("running the widget's binary");
    let help = String::from_utf8_lossy(&help.stdout);
    for command in ["serve", "drive", "render", "crds", "chart", "manifests"] {
        assert!(
            help.contains(&format!("\n  {command} ")),
            "{command} in:\n{help}"
        );
    }
    assert!(!help.contains("\n  new "), "no `new` in:\n{help}");
    let new = std::process::Command::new(binary())
        .args(["new", "/nonexistent/x"])
        .output()
        .expect("running the widget's binary");
    assert!(!new.status.success());
    assert!(
        String::from_utf8_lossy(&new.stderr).contains("unrecognized subcommand"),
        "{}",
        String::from_utf8_lossy(&new.stderr)
    );
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

    // Driven by its own binary on the control plane, as a user of its own
    // in the audit log, its records on a debug port.
    let (driver, debug) = drive_as(DRIVER).await;
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
    let converged = jiff::Timestamp::now();

    // A change that asks for nothing: reconciled, unchanged.
    let touch = json!({"metadata": {"annotations": {"example.com/touched": "yes"},
                                    "labels": {"touched": "yes"}}});
    widgets
        .patch("greeting", &PatchParams::default(), &Patch::Merge(&touch))
        .await
        .expect("touching the Widget");
    let touched = wait_for("the touched Widget to be reconciled", || async {
        let record = greeting_record(debug, &ns)?;
        (record["parent"]["labels"]["touched"] == "yes").then_some(record)
    })
    .await;
    assert_eq!(touched["outcome"], "Unchanged", "{touched}");

    // A restart: a new process with empty caches, another user.
    drop(driver);
    let (_driver, debug) = drive_as(RESTARTED).await;
    let restarted = wait_for("the restarted driver to reconcile the Widget", || async {
        greeting_record(debug, &ns)
    })
    .await;
    assert_eq!(restarted["outcome"], "Unchanged", "{restarted}");
    let deleted = jiff::Timestamp::now();

    // Deleted: the finalize hook holds it until its ConfigMap is gone.
    widgets
        .delete("greeting", &DeleteParams::default())
        .await
        .expect("deleting the Widget");
    wait_gone("the Widget to be finalized and gone", &widgets, "greeting").await;
    wait_gone("its ConfigMap", &config_maps, "greeting").await;
    wrote_nothing_unasked(&ns, converged, deleted);
    drop_namespace(&client, &ns).await;
}

/// The audit log's users for the driver and the restarted driver.
const DRIVER: &str = "e2e-widget-driver";
const RESTARTED: &str = "e2e-widget-restarted";

/// `serve --drive` as `user` (in the audit log), its records on a debug
/// port of its own: the process and that port.
async fn drive_as(user: &str) -> (Running, u16) {
    let debug = free_port();
    let listen = format!("127.0.0.1:{debug}");
    let args = ["serve", "--drive", "--debug-driver-listen", &listen];
    let (driver, _) = run_as(&args, &kubeconfig_as(user)).await;
    (driver, debug)
}

/// The Widget `greeting`'s last reconcile, from the driver's records.
fn greeting_record(debug: u16, ns: &str) -> Option<Value> {
    let records = debug_json(debug, &format!("/debug/driver/reconciles?namespace={ns}"));
    records
        .as_array()?
        .iter()
        .find(|r| r["parent"]["name"] == "greeting")
        .cloned()
}

/// Between `converged` and `deleted` (a touch, a restart) neither driver
/// wrote in `ns`; after the finalizer's removal, the last write of the
/// Widget, no request of it at all.
fn wrote_nothing_unasked(ns: &str, converged: jiff::Timestamp, deleted: jiff::Timestamp) {
    let received = |e: &Value| {
        e["requestReceivedTimestamp"]
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    };
    let ours: Vec<Value> = audit()
        .into_iter()
        .filter(|e| matches!(e["user"]["username"].as_str(), Some(DRIVER | RESTARTED)))
        .filter(|e| e["objectRef"]["namespace"] == ns)
        .filter(|e| received(e).is_some_and(|t| t > converged))
        .collect();
    let describe = |e: &Value| {
        format!(
            "{} {} {}/{} {}",
            e["user"]["username"],
            e["verb"],
            e["objectRef"]["resource"],
            e["objectRef"]["subresource"],
            e["objectRef"]["name"]
        )
    };
    let write = |e: &Value| {
        matches!(
            e["verb"].as_str(),
            Some("create" | "update" | "patch" | "delete" | "deletecollection")
        )
    };
    let unasked: Vec<String> = ours
        .iter()
        .filter(|e| write(e) && received(e).is_some_and(|t| t < deleted))
        .map(describe)
        .collect();
    assert!(
        unasked.is_empty(),
        "written after convergence with nothing changed (a touch, a restart): {unasked:?}"
    );
    let of_the_widget =
        |e: &Value| e["objectRef"]["resource"] == "widgets" && e["objectRef"]["name"] == "greeting";
    let removal = ours
        .iter()
        .rposition(|e| write(e) && of_the_widget(e) && e["objectRef"]["subresource"].is_null())
        .unwrap_or_else(|| {
            panic!(
                "no write of the finalizer's removal: {:?}",
                ours.iter().map(describe).collect::<Vec<_>>()
            )
        });
    let after: Vec<String> = ours[removal + 1..]
        .iter()
        .filter(|e| of_the_widget(e))
        .map(describe)
        .collect();
    assert!(
        after.is_empty(),
        "asked for the Widget after its finalizer was taken off: {after:?}"
    );
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
