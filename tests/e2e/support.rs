//! What every cluster test needs: a client for the control plane
//! `tests/e2e/run.sh` started, the CRDs installed, `metahook` started as a
//! child process, `kubectl`, and waits on outcomes.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Config};
use serde_json::{Value, json};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// The admin kubeconfig of the control plane (`tests/e2e/run.sh` sets it).
pub const KUBECONFIG_ENV: &str = "METAHOOK_E2E_KUBECONFIG";
/// Far above what any step needs; only a broken driver reaches it.
pub const DEADLINE: Duration = Duration::from_secs(120);
/// How long the control plane may take to run pods again after a test
/// restarted the API server ([`control_plane_runs_pods`]).
pub const RECOVERY: Duration = Duration::from_secs(300);

/// The admin kubeconfig; a test that needs the cluster fails without it
/// (`tests/e2e/run.sh` runs these tests with the control plane up).
pub fn kubeconfig() -> PathBuf {
    match std::env::var_os(KUBECONFIG_ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "{KUBECONFIG_ENV} is not set: run these tests with tests/e2e/run.sh, which starts the control plane"
        ),
    }
}

pub async fn client_for(path: &Path) -> Client {
    let kubeconfig = Kubeconfig::read_from(path).expect("reading the kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a usable kubeconfig");
    Client::try_from(config).expect("a client")
}

/// The admin client; says once which API server the tests run against.
pub async fn admin() -> Client {
    static ANNOUNCED: OnceLock<()> = OnceLock::new();
    let client = client_for(&kubeconfig()).await;
    let version = client
        .apiserver_version()
        .await
        .expect("the API server answers /version");
    ANNOUNCED.get_or_init(|| {
        say(&format!(
            "e2e against kube-apiserver {} ({}, platform {})",
            version.git_version, version.build_date, version.platform
        ));
    });
    client
}

/// Straight to the stderr handle: libtest captures `eprintln!` of passing
/// tests, and this must be seen.
pub fn say(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "*** {text}");
}

/// Every CRD the seeds own, at the version stored only: what `metahook
/// crds` prints and the chart installs without `hooks.tls` (`chart/crds/`,
/// and the stored version of `chart/conversion/`'s; `tests/chart_generated.rs`
/// checks those files are these).
pub fn crds() -> Vec<CustomResourceDefinition> {
    metahook_core::registry::all_crds(metahook_seeds::controllers())
}

/// Server-side applies every CRD of [`crds`] and waits until each is
/// established (served).
pub async fn install_crds(client: &Client) -> Vec<String> {
    let crds = crds()
        .iter()
        .map(|crd| serde_json::to_value(crd).expect("a CRD serializes"))
        .collect();
    apply_crds(client, crds).await
}

/// Server-side applies CRDs and waits until each is established; their
/// names.
pub async fn apply_crds(client: &Client, crds: Vec<serde_json::Value>) -> Vec<String> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::new();
    for crd in crds {
        let name = crd["metadata"]["name"]
            .as_str()
            .expect("a named CRD")
            .to_owned();
        api.patch(
            &name,
            &PatchParams::apply("metahook-e2e").force(),
            &Patch::Apply(&crd),
        )
        .await
        .unwrap_or_else(|e| panic!("installing CRD {name}: {e}"));
        names.push(name);
    }
    for name in &names {
        wait_for(&format!("CRD {name} to be established"), || async {
            let crd = api.get(name).await.ok()?;
            crd.status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
                .then_some(())
        })
        .await;
    }
    names
}

/// A `metahook` process, killed when dropped.
pub struct Metahook {
    pub child: Child,
    pub port: u16,
    /// Where `/debug/driver` is served (`--debug-driver-listen`), if it is.
    pub debug_port: Option<u16>,
}

impl Metahook {
    /// The `/debug/driver` port of a driver [`start_driver`] started.
    pub fn debug_port(&self) -> u16 {
        self.debug_port
            .expect("started with --debug-driver-listen (start_driver)")
    }

    /// Sends `signal` (`STOP`, `CONT`, `KILL`, ...) to the process.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -{signal} failed");
    }
}

impl Drop for Metahook {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("its address")
        .port()
}

/// `metahook serve --drive`, as the admin, with `/debug/driver` on a
/// loopback port of its own.
pub async fn start_driver(kubeconfig: &Path) -> Metahook {
    // A port free when picked may be taken by the time metahook binds it
    // (other tests run processes too): a start that fails so is retried
    // with new ports.
    for _ in 0..3 {
        let debug_port = free_port();
        let debug = format!("127.0.0.1:{debug_port}");
        let args = ["serve", "--drive", "--debug-driver-listen", &debug];
        let mut metahook = spawn_on(kubeconfig, &args, free_port());
        if ready_or_exited(&mut metahook).await {
            metahook.debug_port = Some(debug_port);
            return metahook;
        }
    }
    panic!("metahook serve --drive exited at start three times");
}

/// Runs `metahook <args> --listen 127.0.0.1:<free port>` with `kubeconfig`
/// and waits until it is ready (retried with another port if it exits
/// first, as [`start_driver`] does).
pub async fn start(kubeconfig: &Path, args: &[&str]) -> Metahook {
    for _ in 0..3 {
        let mut metahook = spawn_on(kubeconfig, args, free_port());
        if ready_or_exited(&mut metahook).await {
            return metahook;
        }
    }
    panic!("metahook {args:?} exited at start three times");
}

/// `metahook drive --controllers <controllers>`, ready.
pub async fn start_drive(kubeconfig: &Path, controllers: &Path) -> Metahook {
    start_drive_with(kubeconfig, controllers, &[]).await
}

/// As [`start_drive`], with `more` arguments.
pub async fn start_drive_with(kubeconfig: &Path, controllers: &Path, more: &[&str]) -> Metahook {
    let dir = controllers.to_str().expect("a UTF-8 path");
    let args = [["drive", "--controllers", dir].as_slice(), more].concat();
    start(kubeconfig, &args).await
}

/// Waits until `metahook` is ready (`true`) or has exited (`false`).
pub async fn ready_or_exited(metahook: &mut Metahook) -> bool {
    let started = std::time::Instant::now();
    loop {
        if readyz(metahook.port) {
            return true;
        }
        if matches!(metahook.child.try_wait(), Ok(Some(_))) {
            return false;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "gave up waiting for metahook to be ready"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// As [`start`], listening on `port`.
pub async fn start_on(kubeconfig: &Path, args: &[&str], port: u16) -> Metahook {
    let metahook = spawn_on(kubeconfig, args, port);
    wait_for("metahook to be ready", || async {
        readyz(metahook.port).then_some(())
    })
    .await;
    metahook
}

/// Runs `metahook <args> --listen 127.0.0.1:<free port>` with `kubeconfig`,
/// without waiting (a standby replica is never ready).
pub fn spawn(kubeconfig: &Path, args: &[&str]) -> Metahook {
    spawn_on(kubeconfig, args, free_port())
}

fn spawn_on(kubeconfig: &Path, args: &[&str], port: u16) -> Metahook {
    spawn_with_env(kubeconfig, args, port, &[])
}

/// As [`spawn`], listening on `port`, with `env` set (a value of `None`
/// removes the variable).
pub fn spawn_with_env(
    kubeconfig: &Path,
    args: &[&str],
    port: u16,
    env: &[(&str, Option<&str>)],
) -> Metahook {
    let listen = format!("127.0.0.1:{port}");
    let mut command = Command::new(env!("CARGO_BIN_EXE_metahook"));
    for (name, value) in env {
        match value {
            Some(v) => command.env(name, v),
            None => command.env_remove(name),
        };
    }
    let child = command
        .args(args)
        .args(["--listen", &listen])
        .env("KUBECONFIG", kubeconfig)
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "info".to_owned()),
        )
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting metahook");
    Metahook {
        child,
        port,
        debug_port: None,
    }
}

/// A kubeconfig for a client certificate of `user` in the `system:masters`
/// group, from the control plane: the audit log tells its requests apart.
pub fn kubeconfig_as(user: &str) -> PathBuf {
    let text = control(&format!("/kubeconfig?user={user}&group=system:masters"));
    let path = std::env::temp_dir().join(format!(
        "metahook-e2e-{user}-{}.kubeconfig",
        std::process::id()
    ));
    std::fs::write(&path, text).expect("writing a kubeconfig");
    path
}

/// Waits until the process on `port` says it is ready (`what`: what is
/// awaited, for the failure).
pub async fn wait_ready(what: &str, port: u16) {
    wait_for(what, || async { readyz(port).then_some(()) }).await
}

/// Waits until every Hello of `names` in `ns` has converged at `replicas`.
pub async fn wait_converged(
    what: &str,
    client: &Client,
    ns: &str,
    names: &[String],
    replicas: i64,
) {
    wait_for(what, || async {
        all_converged(client, ns, names, replicas)
            .await
            .then_some(())
    })
    .await
}

/// The admin's kubeconfig and client, with the seeds' CRDs installed.
pub async fn cluster_with_crds() -> (PathBuf, Client) {
    let path = kubeconfig();
    let client = admin().await;
    install_crds(&client).await;
    (path, client)
}

pub fn readyz(port: u16) -> bool {
    http("GET", &format!("127.0.0.1:{port}"), "/readyz").is_some_and(|(status, _)| status == 200)
}

/// One HTTP/1.1 request on loopback: the status and the body, or `None`
/// when nothing answered.
pub fn http(method: &str, host: &str, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(host).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(300))).ok()?;
    let request = format!(
        // HTTP/1.0: the whole body, never chunked.
        "{method} {path} HTTP/1.0\r\nHost: {host}\r\nContent-Length: 0\r\n\r\n"
    );
    s.write_all(request.as_bytes()).ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())?;
    Some((status, body))
}

/// Asks the control plane's control endpoint (stop or start kube-apiserver,
/// compact etcd, ...) and fails the test unless it says 200.
pub fn control(path: &str) -> String {
    let url = std::env::var("METAHOOK_CLUSTER_CONTROL")
        .expect("METAHOOK_CLUSTER_CONTROL (tests/e2e/run.sh exports it)");
    let host = url.trim_start_matches("http://");
    let (status, body) = http("POST", host, path)
        .unwrap_or_else(|| panic!("the control endpoint did not answer {path}"));
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// The sum of a metric's samples on `/metrics` whose line starts with
/// `prefix` (a name, optionally with the start of its labels).
pub fn metric(port: u16, prefix: &str) -> f64 {
    let Some((200, text)) = http("GET", &format!("127.0.0.1:{port}"), "/metrics") else {
        return 0.0;
    };
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The API server's audit records so far (JSON lines), the rotated files
/// first: kube-apiserver starts a new file every 100 MB
/// (`--audit-log-maxsize`), and a test that read only the current one
/// would miss what came before (seen: the leader-terms test lost the
/// Lease's first holders). A rotation while this reads (the current file
/// renamed between the listing and the read) is caught by listing again:
/// records are kept once each, by `auditID`.
pub fn audit() -> Vec<serde_json::Value> {
    let path = PathBuf::from(
        std::env::var("METAHOOK_CLUSTER_AUDIT_LOG")
            .expect("METAHOOK_CLUSTER_AUDIT_LOG (tests/e2e/run.sh exports it)"),
    );
    let dir = path.parent().expect("the audit log's directory").to_owned();
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("a UTF-8 file name")
        .to_owned();
    // Rotated: `<stem>-<timestamp>.log`, in time order by name.
    let rotated = || {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{stem}-")) && n.ends_with(".log"))
            })
            .collect();
        files.sort();
        files
    };
    let mut seen = std::collections::HashSet::new();
    let mut records = Vec::new();
    let mut read = |file: &Path, records: &mut Vec<serde_json::Value>| {
        // A file renamed away meanwhile is read under its new name below.
        let Ok(text) = std::fs::read_to_string(file) else {
            return;
        };
        for line in text.lines() {
            let Ok(record) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let id = record["auditID"].as_str().unwrap_or_default().to_owned();
            if seen.insert((id, record["stage"].as_str().unwrap_or_default().to_owned())) {
                records.push(record);
            }
        }
    };
    let first = rotated();
    for file in &first {
        read(file, &mut records);
    }
    read(&path, &mut records);
    for file in rotated().iter().filter(|f| !first.contains(f)) {
        read(file, &mut records);
    }
    // In the order the API server answered them, whichever file each was in.
    records.sort_by(|a, b| {
        a["stageTimestamp"]
            .as_str()
            .unwrap_or_default()
            .cmp(b["stageTimestamp"].as_str().unwrap_or_default())
    });
    records
}

/// One write the API server's audit log recorded.
#[derive(Debug, Clone)]
pub struct Write {
    pub user: String,
    pub verb: String,
    pub resource: String,
    pub name: String,
    pub code: u64,
    /// RFC 3339 with microseconds: sorts as text.
    pub received: String,
    pub completed: String,
}

/// The driver's writes (it says `User-Agent: metahook/...`) to objects in
/// `ns`.
pub fn driver_writes(ns: &str) -> Vec<Write> {
    writes_by("metahook/", ns)
}

/// The writes to objects in `ns` of the client whose `User-Agent` starts
/// with `user_agent`.
pub fn writes_by(user_agent: &str, ns: &str) -> Vec<Write> {
    audit()
        .iter()
        .filter(|e| {
            e["userAgent"]
                .as_str()
                .is_some_and(|u| u.starts_with(user_agent))
                && e["objectRef"]["namespace"] == ns
                && matches!(
                    e["verb"].as_str(),
                    Some("create" | "update" | "patch" | "delete" | "deletecollection")
                )
        })
        .map(|e| {
            let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
            Write {
                user: text(&e["user"]["username"]),
                verb: text(&e["verb"]),
                resource: text(&e["objectRef"]["resource"]),
                name: text(&e["objectRef"]["name"]),
                code: e["responseStatus"]["code"].as_u64().unwrap_or_default(),
                received: text(&e["requestReceivedTimestamp"]),
                completed: text(&e["stageTimestamp"]),
            }
        })
        .collect()
}

/// Polls `check` until it yields, or fails the test naming `what`.
pub async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    match poll(check, DEADLINE).await {
        Some(v) => v,
        None => panic!("gave up waiting for {what}"),
    }
}

/// [`wait_for`]; when it gives up, the failure also says what `show`
/// finds then (the objects the wait was about).
pub async fn wait_for_showing<T, F, Fut, S, Shown>(what: &str, check: F, show: S) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
    S: FnOnce() -> Shown,
    Shown: std::future::Future<Output = String>,
{
    wait_showing(what, check, show, DEADLINE).await
}

/// [`wait_for_showing`] for at most `deadline`.
async fn wait_showing<T, F, Fut, S, Shown>(what: &str, check: F, show: S, deadline: Duration) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
    S: FnOnce() -> Shown,
    Shown: std::future::Future<Output = String>,
{
    match poll(check, deadline).await {
        Some(v) => v,
        None => panic!("gave up waiting for {what}; then:\n{}", show().await),
    }
}

/// `check`, every 100 ms until it yields, for at most `deadline`.
async fn poll<T, F, Fut>(mut check: F, deadline: Duration) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = std::time::Instant::now();
    loop {
        if let Some(v) = check().await {
            return Some(v);
        }
        if start.elapsed() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the control plane runs a pod: a one-replica Deployment in
/// a namespace of its own becomes available (the controller-manager's
/// ReplicaSet, the node's pod, the Deployment's status). For a test whose
/// subject needs pods to become ready: a test before it may have stopped
/// the API server, and the control plane's own clients come back at their
/// own pace (client-go's relist backoff, seen to take 16 s), which is not
/// that test's subject: this waits up to [`RECOVERY`] for it.
pub async fn control_plane_runs_pods(client: &Client) {
    let started = std::time::Instant::now();
    let ns = namespace(client, "e2e-probe").await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let probe: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "probe"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "probe"}},
                 "template": {"metadata": {"labels": {"app": "probe"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    }))
    .expect("a Deployment");
    api.create(&PostParams::default(), &probe)
        .await
        .expect("creating the probe Deployment");
    wait_showing(
        "the control plane to run a pod (a one-replica Deployment available)",
        || async {
            let status = api.get("probe").await.ok()?.status?;
            (status.available_replicas == Some(1)).then_some(())
        },
        || async { pods_and_their_owners(client, &ns).await },
        RECOVERY,
    )
    .await;
    drop_namespace(client, &ns).await;
    let took = started.elapsed();
    if took > Duration::from_secs(10) {
        say(&format!(
            "the control plane took {took:.1?} to run a pod (after an earlier test's restart?)"
        ));
    }
}

/// The Deployments, ReplicaSets and pods in `ns`, with their status, one
/// line each: what a wait on a Deployment's pods shows when it gives up.
pub async fn pods_and_their_owners(client: &Client, ns: &str) -> String {
    let mut lines = Vec::new();
    for (version, kind) in [
        ("apps/v1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
        ("v1", "Pod"),
    ] {
        let (group, version) = version.split_once('/').unwrap_or(("", version));
        let api = dynamic(client, ns, group, version, kind);
        match api.list(&ListParams::default()).await {
            Ok(list) => lines.extend(list.items.iter().map(|o| {
                format!(
                    "{kind} {}: {}",
                    o.metadata.name.as_deref().unwrap_or_default(),
                    o.data.get("status").cloned().unwrap_or_default()
                )
            })),
            Err(e) => lines.push(format!("listing {kind}s: {e}")),
        }
    }
    lines.join("\n")
}

/// Waits until `name` no longer exists.
pub async fn wait_gone<K>(what: &str, api: &Api<K>, name: &str)
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    wait_for(what, || async {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await;
}

/// An empty ConfigMap `name` in `ns`, created: an object to own others.
pub async fn config_map(client: &Client, ns: &str, name: &str) -> ConfigMap {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    api.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": name}})).expect("a ConfigMap"),
    )
    .await
    .expect("creating a ConfigMap")
}

/// A namespace of its own, named after `prefix`.
pub async fn namespace(client: &Client, prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .subsec_nanos();
    let name = format!("{prefix}-{}-{nanos}", std::process::id());
    let api: Api<Namespace> = Api::all(client.clone());
    api.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": name}})).expect("a namespace"),
    )
    .await
    .expect("creating the namespace");
    name
}

pub async fn drop_namespace(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let _ = api.delete(name, &DeleteParams::default()).await;
}

pub fn dynamic(
    client: &Client,
    ns: &str,
    group: &str,
    version: &str,
    kind: &str,
) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    Api::namespaced_with(client.clone(), ns, &ar)
}

pub fn hello_api(client: &Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("fraim.co.jp", "v1", "Hello"),
        "helloes",
    );
    Api::namespaced_with(client.clone(), ns, &ar)
}

/// Warning Events about `name` in `ns`.
pub async fn warnings_about(client: &Client, ns: &str, name: &str) -> Vec<Event> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    events
        .list(&Default::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| {
            e.type_.as_deref() == Some("Warning")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
        })
        .collect()
}

/// `kubectl` of the same Kubernetes release as the control plane (built
/// with it; `tests/e2e/run.sh` names it in `METAHOOK_E2E_KUBECTL`), as the
/// admin.
pub fn kubectl(args: &[&str]) -> std::process::Output {
    let bin = std::env::var_os("METAHOOK_E2E_KUBECTL").unwrap_or_else(|| "kubectl".into());
    Command::new(&bin)
        .args(args)
        .env("KUBECONFIG", kubeconfig())
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", bin.to_string_lossy()))
}

/// `chart/metacontroller/<controller>.yaml` with its webhooks pointed at
/// `http://127.0.0.1:<port>` (each `service:` replaced by a `url:`), and
/// each hook's timeout set to `timeout` if given: the CompositeControllers
/// are written for a hook service inside the cluster, the tests run
/// `metahook serve` on loopback.
pub fn controller_manifest_value(controller: &str, port: u16, timeout: Option<&str>) -> Value {
    let manifest = match controller {
        "hello" => include_str!("../../chart/metacontroller/hello.yaml"),
        "hikawa" => include_str!("../../chart/metacontroller/hikawa.yaml"),
        "foo" => include_str!("../../chart/metacontroller/foo.yaml"),
        other => panic!("no chart/metacontroller/{other}.yaml"),
    };
    let mut object: Value = serde_saphyr::from_str(manifest)
        .unwrap_or_else(|e| panic!("chart/metacontroller/{controller}.yaml: {e}"));
    let hooks = object["spec"]["hooks"]
        .as_object_mut()
        .unwrap_or_else(|| panic!("{controller}: no spec.hooks"));
    assert!(!hooks.is_empty(), "{controller}: no hooks");
    for (kind, hook) in hooks.iter_mut() {
        let webhook = hook["webhook"]
            .as_object_mut()
            .unwrap_or_else(|| panic!("{controller}: hook {kind} has no webhook"));
        assert!(
            webhook.remove("service").is_some(),
            "{controller}: hook {kind} has no service"
        );
        let path = webhook
            .remove("path")
            .and_then(|p| p.as_str().map(str::to_owned))
            .unwrap_or_default();
        assert!(
            path.starts_with(&format!("/{controller}/")),
            "{controller}: hook {kind}'s path is {path:?}"
        );
        webhook.insert(
            "url".into(),
            json!(format!("http://127.0.0.1:{port}{path}")),
        );
        if let Some(t) = timeout {
            webhook.insert("timeout".into(), json!(t));
        }
    }
    object
}

/// [`controller_manifest_value`] as YAML text.
pub fn controller_manifest_at(controller: &str, port: u16, timeout: Option<&str>) -> String {
    let object = controller_manifest_value(controller, port, timeout);
    serde_saphyr::to_string(&object).unwrap_or_else(|e| panic!("{controller} as YAML: {e}"))
}

/// A directory holding `chart/metacontroller/hello.yaml` as
/// [`controller_manifest_at`] rewrites it: for `metahook drive
/// --controllers DIR`.
pub fn hello_manifest_at(port: u16, timeout: Option<&str>, dir_name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{dir_name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let text = controller_manifest_at("hello", port, timeout);
    assert!(text.contains("/hello/finalize"), "{text}");
    std::fs::write(dir.join("hello.yaml"), text).expect("writing the manifest");
    dir
}

/// Creates `names` as Hellos of `replicas` in `ns`, all at once.
pub async fn create_hellos(client: &Client, ns: &str, names: &[String], replicas: i64) {
    let hellos = hello_api(client, ns);
    let creates = names
        .iter()
        .map(|name| create_hello(&hellos, "fraim.co.jp/v1", name, &[], replicas));
    futures::future::join_all(creates).await;
}

/// Creates the Hello `name` with `labels` through `api` (of the Hello type
/// served as `api_version`), in the namespace `api` is for.
pub async fn create_hello(
    api: &Api<DynamicObject>,
    api_version: &str,
    name: &str,
    labels: &[(&str, &str)],
    replicas: i64,
) -> DynamicObject {
    let labels: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    let hello: DynamicObject = serde_json::from_value(json!({
        "apiVersion": api_version, "kind": "Hello",
        "metadata": {"name": name, "labels": labels},
        "spec": {"replicas": replicas}
    }))
    .expect("a Hello");
    api.create(&PostParams::default(), &hello)
        .await
        .expect("creating a Hello")
}

/// Whether a Warning Event about `name` in `ns` gives `reason` and a note
/// containing `needle`.
pub async fn warned(client: &Client, ns: &str, name: &str, reason: &str, needle: &str) -> bool {
    warnings_about(client, ns, name).await.iter().any(|e| {
        e.reason.as_deref() == Some(reason) && e.note.as_deref().is_some_and(|n| n.contains(needle))
    })
}

/// The `status` of `name`, once it has one (`None` also while it cannot be
/// read).
pub async fn status_of(api: &Api<DynamicObject>, name: &str) -> Option<Value> {
    api.get(name).await.ok()?.data.get("status").cloned()
}

/// Whether `owners` name `uid` as their controller.
pub fn controlled_by(owners: Option<&Vec<OwnerReference>>, uid: &str) -> bool {
    owners
        .into_iter()
        .flatten()
        .any(|r| r.uid == uid && r.controller == Some(true))
}

/// Whether the Hello `name` is done: its status observed its generation,
/// and its one Deployment (controlled by it) has `replicas` ready.
pub async fn converged(client: &Client, ns: &str, name: &str, replicas: i64) -> bool {
    hello_state(client, ns, name, replicas)
        .await
        .is_some_and(|ready| ready == json!(replicas))
}

/// Whether the engine has done its part for the Hello `name`, whatever the
/// controller-manager has made of it yet: its status observed its
/// generation, and its one Deployment (controlled by it) asks for
/// `replicas`.
pub async fn applied(client: &Client, ns: &str, name: &str, replicas: i64) -> bool {
    hello_state(client, ns, name, replicas).await.is_some()
}

/// The Hello's `status.readyReplicas` when its status observed its
/// generation and its Deployment, controlled by it, asks for `replicas`.
async fn hello_state(client: &Client, ns: &str, name: &str, replicas: i64) -> Option<Value> {
    let hellos = hello_api(client, ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let (Ok(hello), Ok(Some(deployment))) =
        (hellos.get(name).await, deployments.get_opt(name).await)
    else {
        return None;
    };
    let status = hello.data.get("status")?;
    let uid = hello.metadata.uid.as_deref().unwrap_or_default();
    (controlled_by(deployment.metadata.owner_references.as_ref(), uid)
        && status["observedGeneration"] == json!(hello.metadata.generation)
        && deployment.spec.and_then(|s| s.replicas) == Some(replicas as i32))
    .then(|| status["readyReplicas"].clone())
}

/// Whether each Hello has its Deployment and a status for its generation:
/// the driver's part, whatever the controller-manager has done yet.
pub async fn all_observed(client: &Client, ns: &str, names: &[String]) -> bool {
    let hellos = hello_api(client, ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    for name in names {
        let (Ok(hello), Ok(Some(_))) = (hellos.get(name).await, deployments.get_opt(name).await)
        else {
            return false;
        };
        let observed = hello
            .data
            .get("status")
            .is_some_and(|s| s["observedGeneration"] == json!(hello.metadata.generation));
        if !observed {
            return false;
        }
    }
    true
}

pub async fn all_converged(client: &Client, ns: &str, names: &[String], replicas: i64) -> bool {
    for name in names {
        if !converged(client, ns, name, replicas).await {
            return false;
        }
    }
    true
}

pub fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:03}")).collect()
}

/// Deletes every Hello in `ns` and waits until all are gone: the finalize
/// hook ran for each and no finalizer was left behind.
pub async fn delete_all_hellos(client: &Client, ns: &str) {
    let hellos = hello_api(client, ns);
    hellos
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .expect("deleting the Hellos");
    wait_for("every Hello to be finalized and gone", || async {
        hellos
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .is_empty()
            .then_some(())
    })
    .await;
}

/// A `/debug/driver` answer of the driver listening on `port`.
pub fn debug_json(port: u16, path: &str) -> serde_json::Value {
    let (status, body) = http("GET", &format!("127.0.0.1:{port}"), path).expect("an answer");
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).expect("JSON")
}
