//! Traces, received by a real OpenTelemetry Collector (built from its Go
//! modules: tests/monitoring/collector, the OTLP receiver and the file
//! exporter) on the default OTLP/HTTP address. With the `OTEL_*` variables
//! unset, a `metahook drive` and a `metahook serve` reconcile a Hello and
//! send nothing; set, one reconcile is one trace in which the driver's
//! reconcile span is the parent of its hook call (and of its API writes),
//! and the hook server's request span, continued from the `traceparent`
//! the driver sent, is the hook call's child. The reconcile's record names
//! its trace.

use crate::support::*;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where the SDK sends traces when only the variables' presence says so:
/// OTLP/HTTP's default address, so that a binary exporting by default
/// would be caught.
const COLLECTOR: &str = "127.0.0.1:4318";

/// One span as the file exporter writes it, with its resource's
/// `service.name`.
#[derive(Debug, Clone)]
struct Span {
    service: String,
    name: String,
    trace: String,
    id: String,
    parent: String,
    attributes: HashMap<String, String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_reconcile_is_one_trace_from_the_driver_into_the_hook_server() {
    let (path, client) = cluster_with_crds().await;
    let scratch = std::env::temp_dir().join(format!("metahook-e2e-tracing-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("a directory");
    let spans_file = scratch.join("spans.jsonl");
    let _collector = Collector::start(&scratch, &spans_file).await;
    let ns = namespace(&client, "e2e-tracing").await;

    // Unset: nothing is exported, though a collector listens where the
    // SDK would send by default.
    let quiet = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", None),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", None),
        ("OTEL_SERVICE_NAME", Some("e2e-quiet")),
    ];
    run_pair(&path, &client, &ns, "quiet", &quiet, &quiet).await;

    // Set: the hook server and the driver named apart.
    let endpoint = format!("http://{COLLECTOR}");
    let traced = |service| {
        [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", Some(endpoint.as_str())),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", None),
            ("OTEL_SERVICE_NAME", Some(service)),
        ]
    };
    let record = run_pair(
        &path,
        &client,
        &ns,
        "traced",
        &traced("e2e-hooks"),
        &traced("e2e-driver"),
    )
    .await;

    let spans = wait_for(
        "the driver's and the hooks' spans at the collector",
        || async {
            let spans = read_spans(&spans_file);
            let has = |service: &str| spans.iter().any(|s| s.service == service);
            (has("e2e-driver") && has("e2e-hooks")).then_some(spans)
        },
    )
    .await;
    let quiet_spans: Vec<&Span> = spans.iter().filter(|s| s.service == "e2e-quiet").collect();
    assert!(
        quiet_spans.is_empty(),
        "with OTEL_EXPORTER_OTLP_ENDPOINT unset nothing is sent: {quiet_spans:#?}"
    );

    let parent = format!("{ns}/traced");
    let reconciles: Vec<&Span> = spans
        .iter()
        .filter(|s| s.service == "e2e-driver" && s.name == "reconcile")
        .filter(|s| s.attributes.get("parent") == Some(&parent))
        .collect();
    assert!(
        !reconciles.is_empty(),
        "no reconcile span of {parent}: {spans:#?}"
    );
    let children_of = |span: &Span| -> Vec<&Span> {
        spans
            .iter()
            .filter(|s| s.parent == span.id && s.trace == span.trace)
            .collect()
    };
    // A reconcile that called the hook: its hook call, the server's request
    // under it, and its API requests beside it, all in its trace.
    let complete = reconciles.iter().find_map(|reconcile| {
        let children = children_of(reconcile);
        let hook = children.iter().find(|s| {
            s.name == "hook call" && s.attributes.get("hook").map(String::as_str) == Some("sync")
        })?;
        let served = children_of(hook)
            .into_iter()
            .find(|s| s.service == "e2e-hooks" && s.name == "HTTP request")?;
        let requests = children.iter().filter(|s| s.name != "hook call").count();
        Some((reconcile, served, requests))
    });
    let Some((reconcile, served, requests)) = complete else {
        panic!("no reconcile of {parent} with a hook call served under it: {spans:#?}");
    };
    assert_eq!(
        served.attributes.get("http.target").map(String::as_str),
        Some("/hello/sync"),
        "{served:?}"
    );
    assert!(
        requests > 0,
        "the reconcile's API requests are its children: {reconcile:?}"
    );
    // Each reconcile of the parent is a trace of its own.
    let traces: HashSet<&str> = reconciles.iter().map(|s| s.trace.as_str()).collect();
    assert_eq!(traces.len(), reconciles.len(), "one trace per reconcile");
    // The record names the trace of the parent's last reconcile.
    let id = record["traceId"].as_str().unwrap_or_default();
    assert!(
        traces.contains(id),
        "the record's traceId {id:?} is one of the reconciles' traces {traces:?}"
    );
    drop_namespace(&client, &ns).await;
    let _ = std::fs::remove_dir_all(&scratch);
}

/// `serve` and `drive` (hooks over HTTP, `/debug/driver` on), each with
/// its environment, reconcile a Hello `name` in `ns`; both are stopped
/// with SIGTERM (which flushes what they buffered) once its record shows.
/// The record, as `/debug/driver/reconciles` gave it.
async fn run_pair(
    kubeconfig: &Path,
    client: &kube::Client,
    ns: &str,
    name: &str,
    hooks_env: &[(&str, Option<&str>)],
    driver_env: &[(&str, Option<&str>)],
) -> Value {
    let hooks_port = free_port();
    let mut hooks = spawn_with_env(kubeconfig, &["serve"], hooks_port, hooks_env);
    wait_ready(&mut hooks).await;
    let dir = hello_manifest_at(hooks_port, None, &format!("metahook-e2e-tracing-{name}"));
    let debug = free_port();
    let debug_listen = format!("127.0.0.1:{debug}");
    let controllers = dir.to_str().expect("UTF-8");
    let mut driver = spawn_with_env(
        kubeconfig,
        &[
            "drive",
            "--controllers",
            controllers,
            "--debug-driver-listen",
            &debug_listen,
        ],
        free_port(),
        driver_env,
    );
    wait_ready(&mut driver).await;
    let names = vec![name.to_owned()];
    create_hellos(client, ns, &names, 0).await;
    wait_for("the Hello observed", || async {
        all_observed(client, ns, &names).await.then_some(())
    })
    .await;
    let record = wait_for("the Hello's record", || async {
        let path = format!("/debug/driver/reconciles?namespace={ns}");
        debug_json(debug, &path)
            .as_array()?
            .iter()
            .find(|r| r["parent"]["name"] == json!(name))
            .cloned()
    })
    .await;
    stop(&mut driver).await;
    stop(&mut hooks).await;
    record
}

/// Waits until `metahook` answers `/readyz`, failing if it exits.
async fn wait_ready(metahook: &mut Metahook) {
    let port = metahook.port;
    assert!(
        ready_or_exited(metahook).await,
        "metahook on port {port} exited at start"
    );
}

/// SIGTERM, then waits (bounded) for the process to exit.
async fn stop(metahook: &mut Metahook) {
    metahook.signal("TERM");
    let child = &mut metahook.child;
    wait_for("metahook to exit after SIGTERM", || {
        let exited = matches!(child.try_wait(), Ok(Some(_)));
        async move { exited.then_some(()) }
    })
    .await;
}

/// The collector of tests/monitoring/collector on [`COLLECTOR`], writing
/// each batch it receives as a JSON line; killed when dropped.
struct Collector(std::process::Child);

impl Collector {
    async fn start(scratch: &Path, spans: &Path) -> Collector {
        let tools = crate::monitoring::monitoring_tools();
        let config = scratch.join("collector.yaml");
        let text = format!(
            "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: {COLLECTOR}\n\
             exporters:\n  file:\n    path: {}\n    flush_interval: 100ms\n\
             service:\n  telemetry:\n    metrics:\n      level: none\n  pipelines:\n    traces:\n      receivers: [otlp]\n      exporters: [file]\n",
            spans.display()
        );
        std::fs::write(&config, text).expect("the collector's config");
        let log = std::fs::File::create(scratch.join("collector.log")).expect("its log");
        let child = Command::new(tools.join("collector"))
            .arg("--config")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting the collector");
        let mut collector = Collector(child);
        let log_path = scratch.join("collector.log");
        wait_for("the collector to listen", || {
            let exited = matches!(collector.0.try_wait(), Ok(Some(_)));
            let log = log_path.clone();
            async move {
                assert!(
                    !exited,
                    "the collector exited:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
                std::net::TcpStream::connect(COLLECTOR).ok().map(|_| ())
            }
        })
        .await;
        collector
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every span in the file exporter's output so far (a line being written
/// is left for the next read).
fn read_spans(file: &PathBuf) -> Vec<Span> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut out = Vec::new();
    for line in text.lines() {
        let Ok(batch) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        for resource in batch["resourceSpans"].as_array().into_iter().flatten() {
            let attributes = attributes_of(&resource["resource"]["attributes"]);
            let service = attributes.get("service.name").cloned().unwrap_or_default();
            for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
                for span in scope["spans"].as_array().into_iter().flatten() {
                    let text = |key: &str| span[key].as_str().unwrap_or_default().to_owned();
                    out.push(Span {
                        service: service.clone(),
                        name: text("name"),
                        trace: text("traceId"),
                        id: text("spanId"),
                        parent: text("parentSpanId"),
                        attributes: attributes_of(&span["attributes"]),
                    });
                }
            }
        }
    }
    out
}

/// OTLP/JSON attributes (`[{key, value: {stringValue | intValue | ...}}]`)
/// as text.
fn attributes_of(list: &Value) -> HashMap<String, String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| {
            let key = a["key"].as_str()?.to_owned();
            let value = a["value"].as_object()?.values().next()?;
            let text = value
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| value.to_string());
            Some((key, text))
        })
        .collect()
}
