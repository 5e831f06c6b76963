//! The aggregated API (`driver.metahook.dev/v1alpha1` reconciles) behind
//! the control plane's real aggregation layer, with `metahook serve
//! --drive --api-listen` on loopback: the APIService points at an
//! ExternalName Service naming `localhost` (the aggregator resolves it to
//! that host and the APIService's port, and checks the serving certificate
//! for `<service>.<namespace>.svc`). The chart's own install of it runs on
//! the real node (tests/chart/test_aggregated_api.py); what is here needs
//! the process outside a pod: sockets held against its port.

use crate::support::*;
use k8s_openapi::api::core::v1::Service;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

const API_SERVICE: &str = "v1alpha1.driver.metahook.dev";
const SERVICE: &str = "metahook-api";
/// Idle sockets held against the API's port: three times actix's default
/// TLS handshake slots (256 per worker, two workers), enough to make a new
/// connection wait longer than the aggregator's 5-second check on this
/// machine before the limits were set.
const IDLE_SOCKETS_DEFAULT: usize = 1500;

/// `METAHOOK_E2E_IDLE_SOCKETS`, to try other numbers.
fn idle_sockets() -> usize {
    std::env::var("METAHOOK_E2E_IDLE_SOCKETS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(IDLE_SOCKETS_DEFAULT)
}

fn api_services(client: &Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
    ));
    Api::all_with(client.clone(), &ar)
}

/// The APIService's Available condition (`True`, `False`, or empty).
async fn available(client: &Client) -> (String, String) {
    let Ok(service) = api_services(client).get(API_SERVICE).await else {
        return (String::new(), "no APIService".to_owned());
    };
    let conditions = service.data["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    conditions
        .iter()
        .find(|c| c["type"] == "Available")
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_owned(),
                c["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .unwrap_or_default()
}

/// A serving certificate for the Service's name, written as `tls.crt` and
/// `tls.key` into a directory of its own; its PEM is the caBundle.
fn serving_cert(ns: &str) -> (PathBuf, String) {
    let key = rcgen::KeyPair::generate().expect("a key");
    let cert = rcgen::CertificateParams::new(vec![format!("{SERVICE}.{ns}.svc")])
        .expect("certificate parameters")
        .self_signed(&key)
        .expect("a self-signed certificate");
    let dir = std::env::temp_dir().join(format!("metahook-e2e-api-{ns}"));
    std::fs::create_dir_all(&dir).expect("a directory");
    std::fs::write(dir.join("tls.crt"), cert.pem()).expect("tls.crt");
    std::fs::write(dir.join("tls.key"), key.serialize_pem()).expect("tls.key");
    (dir, cert.pem())
}

/// The APIService and the Service it names, removed when dropped: an
/// APIService left pointing at nothing stalls every namespace deletion.
struct Registered {
    client: Client,
    ns: String,
}

impl Registered {
    async fn new(client: &Client, ns: &str, port: u16, ca_pem: &str) -> Self {
        let services: Api<Service> = Api::namespaced(client.clone(), ns);
        services
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({
                    "metadata": {"name": SERVICE},
                    "spec": {"type": "ExternalName", "externalName": "localhost",
                             "ports": [{"name": "api", "port": port, "protocol": "TCP"}]}
                }))
                .expect("a Service"),
            )
            .await
            .expect("creating the Service");
        let body: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": API_SERVICE},
            "spec": {"group": "driver.metahook.dev", "version": "v1alpha1",
                     "groupPriorityMinimum": 1000, "versionPriority": 15,
                     "service": {"name": SERVICE, "namespace": ns, "port": port},
                     "caBundle": k8s_openapi::ByteString(ca_pem.as_bytes().to_vec())}
        }))
        .expect("an APIService");
        api_services(client)
            .patch(
                API_SERVICE,
                &PatchParams::apply("metahook-e2e").force(),
                &Patch::Apply(&body),
            )
            .await
            .expect("registering the APIService");
        Registered {
            client: client.clone(),
            ns: ns.to_owned(),
        }
    }

    /// Has the aggregator check again now (it does on a change to the
    /// Service), rather than at its 30-second resync.
    async fn recheck(&self, n: usize) {
        let services: Api<Service> = Api::namespaced(self.client.clone(), &self.ns);
        let patch = json!({"metadata": {"annotations": {"metahook-e2e/recheck": n.to_string()}}});
        services
            .patch(SERVICE, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("annotating the Service");
    }

    async fn remove(self) {
        let _ = api_services(&self.client)
            .delete(API_SERVICE, &DeleteParams::default())
            .await;
        wait_gone(
            "the APIService to go",
            &api_services(&self.client),
            API_SERVICE,
        )
        .await;
    }
}

impl Drop for Registered {
    /// Also when the test fails half-way.
    fn drop(&mut self) {
        let _ = kubectl(&["delete", "apiservice", API_SERVICE, "--ignore-not-found"]);
    }
}

/// `n` TCP connections to `addr` that never send a byte, each opened again
/// as soon as the server closes it (as a client meaning harm would), on
/// threads of their own until dropped.
struct IdleSockets {
    stop: Arc<AtomicBool>,
    open: Arc<AtomicUsize>,
    closed_by_server: Arc<AtomicUsize>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl IdleSockets {
    fn hold(addr: SocketAddr, n: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let open = Arc::new(AtomicUsize::new(0));
        let closed_by_server = Arc::new(AtomicUsize::new(0));
        let per_thread = n.div_ceil(8);
        let threads = (0..n.div_ceil(per_thread))
            .map(|t| {
                let count = per_thread.min(n - t * per_thread);
                let (stop, open, closed) = (stop.clone(), open.clone(), closed_by_server.clone());
                std::thread::spawn(move || {
                    let mut sockets: Vec<Option<TcpStream>> = (0..count).map(|_| None).collect();
                    while !stop.load(Ordering::Relaxed) {
                        for slot in sockets.iter_mut() {
                            match slot {
                                None => {
                                    if let Ok(s) =
                                        TcpStream::connect_timeout(&addr, Duration::from_secs(1))
                                        && s.set_nonblocking(true).is_ok()
                                    {
                                        *slot = Some(s);
                                        open.fetch_add(1, Ordering::Relaxed);
                                    }
                                }
                                Some(s) => {
                                    let mut byte = [0u8; 1];
                                    let gone = match std::io::Read::read(s, &mut byte) {
                                        Ok(_) => true,
                                        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
                                    };
                                    if gone {
                                        *slot = None;
                                        open.fetch_sub(1, Ordering::Relaxed);
                                        closed.fetch_add(1, Ordering::Relaxed);
                                    }
                                }
                            }
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                })
            })
            .collect();
        IdleSockets {
            stop,
            open,
            closed_by_server,
            threads,
        }
    }

    fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }
}

impl Drop for IdleSockets {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// `kubectl get reconciles -n NS -o json`, through the aggregator: the
/// names listed, or why not.
fn kubectl_reconciles(ns: &str) -> Result<Vec<String>, String> {
    let out = kubectl(&[
        "get",
        "reconciles",
        "-n",
        ns,
        "-o",
        "json",
        "--request-timeout=20s",
    ]);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let list: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    Ok(list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_owned))
        .collect())
}

/// Idle sockets held against the API's port, each reopened as soon as
/// the server closes it, do not take the TLS handshakes the aggregator
/// needs: registered while they are held (as after a restart of either
/// side: the aggregator keeps an HTTP/2 connection open for as long as it
/// answers, and then needs a new one), the APIService becomes Available
/// and stays so, and `kubectl get reconciles` answers throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_do_not_make_the_api_unavailable() {
    let (path, client) = cluster_with_crds().await;
    let ns = namespace(&client, "aggregated").await;
    let (tls_dir, ca_pem) = serving_cert(&ns);
    let api_port = free_port();
    let listen = format!("127.0.0.1:{api_port}");
    let driver = start(
        &path,
        &[
            "serve",
            "--drive",
            "--api-listen",
            &listen,
            "--api-tls-dir",
            tls_dir.to_str().expect("a UTF-8 path"),
        ],
    )
    .await;
    create_hellos(&client, &ns, &names("idle", 1), 1).await;

    let sockets = IdleSockets::hold(listen.parse().expect("an address"), idle_sockets());
    wait_for("the idle sockets to be open", || async {
        (sockets.open() >= idle_sockets() * 9 / 10).then_some(())
    })
    .await;
    let registered = Registered::new(&client, &ns, api_port, &ca_pem).await;
    // From its registration on, every condition the aggregator writes is
    // seen (polled every 250 ms): none may be False. Every 7 s (longer
    // than actix's 5 s keep-alive) it is asked to check again (it does on
    // a change to the Service), and kubectl lists the reconciles.
    let mut failures = Vec::new();
    let (mut seen_true, mut fewest_open) = (0, usize::MAX);
    for tick in 0..160 {
        fewest_open = fewest_open.min(sockets.open());
        let (status, message) = available(&client).await;
        match status.as_str() {
            "True" => seen_true += 1,
            "False" => failures.push(format!("tick {tick}: Available=False: {message}")),
            _ => {}
        }
        if tick % 28 == 27 {
            registered.recheck(tick).await;
            match kubectl_reconciles(&ns) {
                Ok(names) if names.iter().any(|n| n == "hello.idle-000") => {}
                other => failures.push(format!("tick {tick}: kubectl get reconciles: {other:?}")),
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let closed = sockets.closed_by_server.load(Ordering::Relaxed);
    drop(sockets);
    say(&format!(
        "{} idle sockets held: at least {fewest_open} open at every tick, {closed} closed by the server and reopened",
        idle_sockets()
    ));
    registered.remove().await;
    delete_all_hellos(&client, &ns).await;
    drop(driver);
    drop_namespace(&client, &ns).await;
    let _ = std::fs::remove_dir_all(&tls_dir);
    failures.dedup_by(|a, b| a.split_once(": ").map(|x| x.1) == b.split_once(": ").map(|x| x.1));
    assert_eq!(failures, Vec::<String>::new());
    assert!(seen_true > 0, "the APIService never became Available");
    // Held throughout: a socket closed by the server is open again within
    // a sweep, so at every tick most are open.
    assert!(
        fewest_open >= idle_sockets() / 2,
        "the sockets were held: {fewest_open}"
    );
}
