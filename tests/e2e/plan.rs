//! `metahook plan --live` on a cluster the driver has converged: with the
//! driver stopped, the plan finds nothing to change (exit 0); after one
//! Hello's spec changes, it reports that Hello's Deployment change and
//! nothing for the others (exit 2). It runs as a user of its own, and the
//! API server's audit log shows that user read and never wrote.

use crate::support::*;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use std::path::Path;

const HELLOS: usize = 3;

/// `metahook plan --live -n <ns> <more>` as `kubeconfig`'s user: its exit
/// code and standard output.
fn plan(kubeconfig: &Path, ns: &str, more: &[&str]) -> (i32, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_metahook"))
        .args(["plan", "--live", "--namespace", ns])
        .args(more)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("running metahook plan");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 output");
    eprintln!(
        "plan {more:?}:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), stdout)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_live_reports_exactly_the_changed_parent_and_never_writes() {
    let (admin_config, client) = cluster_with_crds().await;
    let ns = namespace(&client, "e2e-plan").await;
    let driver = start_driver(&admin_config).await;
    let hellos = names("hello", HELLOS);
    create_hellos(&client, &ns, &hellos, 2).await;
    wait_converged("every Hello ready", &client, &ns, &hellos, 2).await;
    drop(driver);

    let user = "metahook-plan-e2e";
    let as_planner = kubeconfig_as(user);
    let (code, text) = plan(&as_planner, &ns, &[]);
    assert_eq!(code, 0, "a converged cluster plans no change:\n{text}");
    assert!(
        text.starts_with(&format!(
            "No changes: {HELLOS} parents, each as the driver would leave it.\n"
        )),
        "{text}"
    );

    // One Hello scaled while nothing drives.
    let changed = &hellos[1];
    hello_api(&client, &ns)
        .patch(
            changed,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scaling a Hello");
    let (code, out) = plan(&as_planner, &ns, &["--output", "json"]);
    assert_eq!(code, 2, "one changed Hello is a change planned:\n{out}");
    let plan: Value = serde_json::from_str(&out).expect("one JSON document");
    let parents = plan["parents"].as_array().expect("parents");
    assert_eq!(parents.len(), 1, "only the scaled Hello changes: {plan:#}");
    let parent = &parents[0];
    assert_eq!(parent["name"], changed.as_str());
    assert_eq!(parent["hook"], "sync");
    let steps = parent["steps"].as_array().expect("steps");
    let applies: Vec<&Value> = steps.iter().filter(|s| s["op"] == "apply").collect();
    assert_eq!(
        applies,
        [&json!({
            "op": "apply", "kind": "Deployment", "namespace": ns, "name": changed,
            "changed": [{"path": "spec.replicas", "from": 2, "to": 3}],
        })],
        "the Deployment's replicas and nothing else: {plan:#}"
    );
    // Besides, only what the status of a changed spec says: its new
    // generation, and the Ready condition while the Deployment catches up.
    let others: Vec<&Value> = steps
        .iter()
        .filter(|s| !matches!(s["op"].as_str(), Some("apply" | "writeStatus" | "event")))
        .collect();
    assert!(others.is_empty(), "no other operation: {plan:#}");
    let summary = &plan["summary"];
    assert_eq!(
        (
            &summary["parents"],
            &summary["unchanged"],
            &summary["changed"],
            &summary["failed"]
        ),
        (&json!(HELLOS), &json!(HELLOS - 1), &json!(1), &json!(0))
    );

    // The plan's user only read, and what it read was through its own
    // client (the User-Agent the read-only client sends).
    let requests: Vec<(String, String)> = audit()
        .iter()
        .filter(|e| e["user"]["username"] == user)
        .map(|e| {
            (
                e["verb"].as_str().unwrap_or_default().to_owned(),
                e["userAgent"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert!(!requests.is_empty(), "the audit log shows the plan's reads");
    let not_reads: Vec<&(String, String)> = requests
        .iter()
        .filter(|(verb, agent)| {
            !matches!(verb.as_str(), "get" | "list" | "watch")
                || !agent.starts_with("metahook-plan/")
        })
        .collect();
    assert!(
        not_reads.is_empty(),
        "the plan wrote, or read through another client: {not_reads:?}"
    );
    eprintln!(
        "the plan's requests, two plans of {HELLOS} Hellos: {}",
        requests.len()
    );

    // The driver back, to finalize the Hellos.
    let driver = start_driver(&admin_config).await;
    delete_all_hellos(&client, &ns).await;
    drop(driver);
    drop_namespace(&client, &ns).await;
}
