//! Upgrading a controller on the real control plane (#47): examples/widget
//! 0.1.0 drives 55 Widgets, 50 whose text holds several copies of their
//! message and 5 with one. Its next version (tests/e2e/widget-next.sh:
//! the copies joined with ", ", version 0.2.0) plans them with `plan
//! --live`: the 50 ConfigMaps' text and their Widgets' status, nothing for
//! the 5. Then it drives: every Widget is answered by 0.2.0 (its records,
//! its metrics), what it wrote (the API server's audit log) is what the plan
//! printed, parent by parent, its budget holding requests back, and nothing for
//! the 5. The plan's user only read.

use crate::support::*;
use crate::widget::{Running, binary_of, start};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

const CHANGED: usize = 50;
const SAME: usize = 5;
/// The next version's client budget (`--kube-qps`, `--kube-burst`).
const QPS: f64 = 5.0;
const BURST: usize = 10;

/// The audit log's users.
const FIRST: &str = "e2e-upgrade-0.1.0";
const NEXT: &str = "e2e-upgrade-0.2.0";
const PLANNER: &str = "e2e-upgrade-plan";

/// `serve --drive` of `binary` as `user`, with `more` arguments: the
/// process, its service port (`/metrics`) and its debug port (records).
async fn drive(binary: &Path, user: &str, more: &[&str]) -> (Running, u16, u16) {
    let debug = free_port();
    let debug_listen = format!("127.0.0.1:{debug}");
    let mut args = vec!["serve", "--drive", "--debug-driver-listen", &debug_listen];
    args.extend_from_slice(more);
    let (running, port) = start(binary, &args, &kubeconfig_as(user)).await;
    (running, port, debug)
}

/// The Widgets: `w-NN` with 2 to 4 copies, `one-N` with one.
fn widgets() -> Vec<(String, u32)> {
    let changed = (0..CHANGED).map(|i| (format!("w-{i:02}"), 2 + (i % 3) as u32));
    let same = (0..SAME).map(|i| (format!("one-{i}"), 1));
    changed.chain(same).collect()
}

/// What a Widget's ConfigMap holds, its copies joined with `separator`.
fn text(name: &str, copies: u32, separator: &str) -> String {
    vec![format!("say {name}"); copies as usize].join(separator)
}

/// Waits until every Widget is Ready with its text written as `separator`
/// joins it.
async fn wait_written(api: &Api<DynamicObject>, separator: &str) {
    let want: BTreeMap<String, String> = widgets()
        .into_iter()
        .map(|(name, copies)| (text(&name, copies, separator), name))
        .map(|(text, name)| (name, text))
        .collect();
    wait_for(
        &format!("every Widget written with {separator:?}"),
        || async {
            let list = api.list(&ListParams::default()).await.ok()?;
            let done = list
                .items
                .iter()
                .filter(|w| {
                    let status = &w.data["status"];
                    let name = w.metadata.name.clone().unwrap_or_default();
                    status["conditions"][0]["status"] == "True"
                        && want.get(&name).is_some_and(|t| status["written"] == *t)
                })
                .count();
            (done == want.len()).then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_version_is_planned_then_rolled_out_as_planned() {
    let (first, next) = (
        binary_of("METAHOOK_E2E_WIDGET"),
        binary_of("METAHOOK_E2E_WIDGET_NEXT"),
    );
    let crds = Command::new(&first).arg("crds").output().expect("crds");
    let crd: Value = serde_saphyr::from_str(&String::from_utf8_lossy(&crds.stdout)).expect("YAML");
    let client = admin().await;
    apply_crds(&client, vec![crd]).await;
    let ns = namespace(&client, "e2e-upgrade").await;
    let api = dynamic(&client, &ns, "example.metahook.dev", "v1", "Widget");
    for (name, copies) in widgets() {
        let widget = serde_json::from_value(json!({
            "apiVersion": "example.metahook.dev/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"message": format!("say {name}"), "copies": copies},
        }))
        .expect("a Widget");
        api.create(&PostParams::default(), &widget)
            .await
            .expect("creating a Widget");
    }
    let (driver, _, _) = drive(&first, FIRST, &[]).await;
    wait_written(&api, " ").await;
    drop(driver);

    // The plan of the next version, as a user of its own.
    let output = Command::new(&next)
        .args(["plan", "--live", "--namespace", &ns, "--output", "json"])
        .env("KUBECONFIG", kubeconfig_as(PLANNER))
        .output()
        .expect("running the next version's plan");
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(2), "changes planned");
    let plan: Value = serde_json::from_str(&stdout).expect("one JSON document");
    let summary = &plan["summary"];
    assert_eq!(
        [
            &summary["parents"],
            &summary["unchanged"],
            &summary["changed"],
            &summary["failed"]
        ],
        [
            &json!(CHANGED + SAME),
            &json!(SAME),
            &json!(CHANGED),
            &json!(0)
        ],
        "{summary:#}"
    );
    let copies: BTreeMap<String, u32> = widgets().into_iter().collect();
    let mut planned: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for parent in plan["parents"].as_array().expect("parents") {
        let name = parent["name"].as_str().expect("a name").to_owned();
        let n = copies[&name];
        assert!(
            name.starts_with("w-"),
            "only the Widgets of several copies: {parent:#}"
        );
        let mut ops = Vec::new();
        for step in parent["steps"].as_array().expect("steps") {
            match step["op"].as_str() {
                Some("apply") => {
                    assert_eq!(
                        step,
                        &json!({"op": "apply", "kind": "ConfigMap", "namespace": ns, "name": name,
                                "changed": [{"path": "data.text",
                                             "from": text(&name, n, " "),
                                             "to": text(&name, n, ", ")}]}),
                        "its ConfigMap's text and nothing else"
                    );
                    ops.push(format!("patch configmaps {name}"));
                }
                Some("writeStatus") => ops.push(format!("patch widgets/status {name}")),
                Some("event") => ops.push("create events".to_owned()),
                _ => panic!("no other operation: {parent:#}"),
            }
        }
        planned.insert(name, ops);
    }
    assert_eq!(planned.len(), CHANGED);

    // The next version drives, within its budget.
    let started = jiff::Timestamp::now();
    let budget = [
        "--kube-qps".to_owned(),
        QPS.to_string(),
        "--kube-burst".to_owned(),
        BURST.to_string(),
    ];
    let budget: Vec<&str> = budget.iter().map(String::as_str).collect();
    let (driver, port, debug) = drive(&next, NEXT, &budget).await;
    wait_written(&api, ", ").await;
    let records = wait_for("every Widget's record to name 0.2.0", || async {
        let records = debug_json(debug, &format!("/debug/driver/reconciles?namespace={ns}"));
        let records = records.as_array()?.clone();
        let all =
            records.len() == CHANGED + SAME && records.iter().all(|r| r["revision"] == "0.2.0");
        all.then_some(records)
    })
    .await;
    for record in records.iter().filter(|r| {
        r["parent"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("one-"))
    }) {
        assert_eq!(record["outcome"], "Unchanged", "{record:#}");
    }
    let parents = metric(port, "metahook_driver_parents{");
    let answered = metric(
        port,
        "metahook_driver_parents_answered{controller=\"widget\",revision=\"0.2.0\"}",
    );
    assert_eq!(
        (parents, answered),
        (55.0, 55.0),
        "parents, answered by 0.2.0"
    );
    // Its budget held requests back (what the limiter lets through, and
    // when, is tested on a paused clock: driver/src/client/throttle.rs).
    let throttled = metric(port, "metahook_driver_api_throttled_requests_total");
    assert!(throttled > 0.0, "no request waited for the budget");

    // What it wrote, parent by parent, is what the plan printed. (Its
    // Events are sent beside its reconciles: waited for.)
    let planned_events = planned
        .values()
        .flatten()
        .filter(|op| *op == "create events")
        .count();
    let written = |e: &Value| {
        matches!(
            e["verb"].as_str(),
            Some("create" | "update" | "patch" | "delete" | "deletecollection")
        )
    };
    let is_event = |e: &Value| e["objectRef"]["resource"] == "events" && written(e);
    let audit = wait_for("the next version's Events", || async {
        let audit = audit();
        let by_next =
            |e: &&Value| e["user"]["username"] == NEXT && e["objectRef"]["namespace"] == ns;
        let events = audit.iter().filter(by_next).filter(|e| is_event(e)).count();
        (events >= planned_events).then_some(audit)
    })
    .await;
    let received = |e: &Value| {
        e["requestReceivedTimestamp"]
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    };
    // Once each (a watch is recorded as it starts and as it ends).
    let mut seen = BTreeSet::new();
    let by_next: Vec<&Value> = audit
        .iter()
        .filter(|e| e["user"]["username"] == NEXT)
        .filter(|e| received(e).is_some_and(|t| t > started))
        .filter(|e| seen.insert(e["auditID"].as_str().unwrap_or_default().to_owned()))
        .collect();
    let mut performed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in by_next
        .iter()
        .filter(|e| written(e) && e["objectRef"]["namespace"] == ns)
    {
        let object = &e["objectRef"];
        let resource = match object["subresource"].as_str() {
            Some(sub) => format!("{}/{sub}", object["resource"].as_str().unwrap_or_default()),
            None => object["resource"].as_str().unwrap_or_default().to_owned(),
        };
        let name = object["name"].as_str().unwrap_or_default();
        let (parent, op) = if resource == "events" {
            (
                "(events)".to_owned(),
                format!("{} events", e["verb"].as_str().unwrap_or_default()),
            )
        } else {
            (
                name.to_owned(),
                format!(
                    "{} {resource} {name}",
                    e["verb"].as_str().unwrap_or_default()
                ),
            )
        };
        performed.entry(parent).or_default().push(op);
    }
    eprintln!("written by {NEXT}: {performed:#?}");
    let events = performed.remove("(events)").unwrap_or_default();
    assert_eq!(events.len(), planned_events, "an Event per planned event");
    for ops in planned.values_mut().chain(performed.values_mut()) {
        ops.retain(|op| op != "create events");
        ops.sort();
    }
    assert_eq!(
        performed, planned,
        "written, parent by parent, as planned (and nothing for the rest)"
    );

    // How long its requests took, as the API server received them (its
    // controllers' and its Events', each a budget of its own).
    let (events, controllers): (Vec<&Value>, Vec<&Value>) = by_next
        .iter()
        .partition(|e| e["objectRef"]["resource"] == "events");
    span("its controllers' requests", &controllers);
    span("its Events", &events);

    // The plan's user only read.
    let by_planner: Vec<&Value> = audit
        .iter()
        .filter(|e| e["user"]["username"] == PLANNER)
        .collect();
    assert!(!by_planner.is_empty(), "the plan's reads are in the log");
    eprintln!("{PLANNER}: {} requests", by_planner.len());
    let by_planner: Vec<String> = by_planner
        .iter()
        .filter(|e| !matches!(e["verb"].as_str(), Some("get" | "list" | "watch")))
        .map(|e| format!("{} {}", e["verb"], e["objectRef"]))
        .collect();
    assert!(by_planner.is_empty(), "the plan wrote: {by_planner:?}");

    // The next version finalizes them.
    api.delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .expect("deleting the Widgets");
    wait_for("every Widget gone", || async {
        api.list(&ListParams::default())
            .await
            .ok()?
            .items
            .is_empty()
            .then_some(())
    })
    .await;
    drop(driver);
    drop_namespace(&client, &ns).await;
}

/// Prints how many of `requests` came in how long, as received. Not an
/// assertion: a stalled API server receives what the budget spread out
/// all at once, so arrival times cannot judge the client's pacing (its
/// limiter is tested on a paused clock: `driver/src/client/throttle.rs`).
fn span(what: &str, requests: &[&Value]) {
    let times: Vec<f64> = requests
        .iter()
        .filter_map(|e| {
            e["requestReceivedTimestamp"]
                .as_str()?
                .parse::<jiff::Timestamp>()
                .ok()
        })
        .map(|t| t.as_second() as f64 + f64::from(t.subsec_nanosecond()) / 1e9)
        .collect();
    let span = times.last().unwrap_or(&0.0) - times.first().unwrap_or(&0.0);
    eprintln!("{what}: {} in {span:.1} s", times.len());
}
