//! End to end: `metahook serve --drive` (the built binary) against the API
//! server named by `METAHOOK_E2E_KUBECONFIG`, checked only through the API.
//!
//! Without the variable every test prints that it was skipped and passes:
//! plain `cargo test` needs no cluster. `tests/e2e/run.sh` starts
//! `../shared/fakeapi/fakeapi.py` (an in-memory API server, not Kubernetes)
//! and points this target at it; a real cluster (kind, k3d) is the proof.
//!
//! Each test makes and removes its own namespace. Waits poll the API with a
//! generous deadline: they wait for an outcome, they do not measure time.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Config};
use serde_json::json;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const ENV: &str = "METAHOOK_E2E_KUBECONFIG";
/// Far above what any step needs; only a broken driver reaches it.
const DEADLINE: Duration = Duration::from_secs(90);

fn kubeconfig() -> Option<PathBuf> {
    match std::env::var_os(ENV) {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            // Straight to the stderr handle: libtest captures `eprintln!`
            // of passing tests, and this must be seen.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIPPED: {ENV} is not set; the bundled-driver e2e tests did not run.\n\
                 *** Run tests/e2e/run.sh (starts ../shared/fakeapi) or point {ENV} at a cluster.\n"
            );
            None
        }
    }
}

async fn client(path: &Path) -> Client {
    let kubeconfig = Kubeconfig::read_from(path).expect("reading the kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a usable kubeconfig");
    Client::try_from(config).expect("a client")
}

/// Server-side applies every CRD in `crds/`.
async fn install_crds(client: &Client) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("crds/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let crd: CustomResourceDefinition = serde_saphyr::from_str(&text).unwrap();
        let name = crd.metadata.name.clone().unwrap();
        api.patch(
            &name,
            &PatchParams::apply("metahook-e2e").force(),
            &Patch::Apply(&crd),
        )
        .await
        .unwrap_or_else(|e| panic!("installing CRD {name}: {e}"));
        names.push(name);
    }
    names
}

/// The binary, killed when dropped.
struct Driver {
    child: Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn start_driver(kubeconfig: &Path) -> Driver {
    start(kubeconfig, &["serve", "--drive"]).await
}

/// Runs `metahook <args> --listen 127.0.0.1:<free port>` and waits until
/// it is ready.
async fn start(kubeconfig: &Path, args: &[&str]) -> Driver {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let child = Command::new(env!("CARGO_BIN_EXE_metahook"))
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
    let driver = Driver { child, port };
    wait_for("metahook to be ready", || async {
        readyz(driver.port).then_some(())
    })
    .await;
    driver
}

fn readyz(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.starts_with("HTTP/1.1 200")
}

/// Polls `check` until it yields, or fails the test naming `what`.
async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = std::time::Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(start.elapsed() < DEADLINE, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A namespace of its own, deleted at the end.
/// Waits until `name` no longer exists.
async fn wait_gone<K>(what: &str, api: &Api<K>, name: &str)
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    wait_for(what, || async {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await;
}

async fn namespace(client: &Client, prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let name = format!("{prefix}-{}-{nanos}", std::process::id());
    let api: Api<Namespace> = Api::all(client.clone());
    api.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
    )
    .await
    .unwrap();
    name
}

async fn drop_namespace(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let _ = api.delete(name, &DeleteParams::default()).await;
}

fn dynamic(
    client: &Client,
    ns: &str,
    group: &str,
    version: &str,
    kind: &str,
) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    Api::namespaced_with(client.clone(), ns, &ar)
}

fn hello_api(client: &Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("fraim.co.jp", "v1", "Hello"),
        "helloes",
    );
    Api::namespaced_with(client.clone(), ns, &ar)
}

async fn warnings_about(client: &Client, ns: &str, name: &str) -> Vec<Event> {
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

fn registered(controller: &str) -> bool {
    let found = metahook_hooks::registry::controller(controller).is_some();
    if !found {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "*** note: controller {controller} is not in the registry yet; its e2e part is skipped"
        );
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_driver() {
    let Some(path) = kubeconfig() else { return };
    let client = client(&path).await;
    let crds = install_crds(&client).await;
    {
        let _driver = start_driver(&path).await;
        hello(&client).await;
        if registered("hikawa") && crds.iter().any(|c| c.starts_with("hikawas.")) {
            hikawa(&client).await;
        }
        if registered("foo") && crds.iter().any(|c| c.starts_with("foos.")) {
            foo_refuses(&client).await;
        }
    }
    // The same through `metahook drive`: hooks over HTTP (served by a plain
    // `metahook serve`), with leader election on a Lease. One driver at a
    // time: the first one stopped above.
    drive_over_http(&client, &path).await;
}

async fn drive_over_http(client: &Client, kubeconfig: &Path) {
    let hooks = start(kubeconfig, &["serve"]).await;
    let dir = std::env::temp_dir().join(format!("metahook-e2e-controllers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = include_str!("../metacontroller/hello.yaml");
    let mut text = String::new();
    let mut lines = manifest.lines().peekable();
    // Point the service webhooks at the local hook server: `service:` and
    // its three lines become one `url:`.
    while let Some(line) = lines.next() {
        if line.trim() == "service:" {
            let indent = &line[..line.len() - line.trim_start().len()];
            for _ in 0..3 {
                lines.next();
            }
            let path_line = lines.next().unwrap();
            let path = path_line.trim().trim_start_matches("path:").trim();
            text.push_str(&format!(
                "{indent}url: \"http://127.0.0.1:{}{path}\"\n",
                hooks.port
            ));
        } else {
            text.push_str(line);
            text.push('\n');
        }
    }
    assert!(text.contains("/hello/finalize"), "{text}");
    std::fs::write(dir.join("hello.yaml"), text).unwrap();
    let _driver = start(
        kubeconfig,
        &[
            "drive",
            "--controllers",
            dir.to_str().unwrap(),
            "--leader-election",
            "--leader-election-namespace",
            "default",
            "--pod-name",
            "e2e",
        ],
    )
    .await;
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), "default");
    let lease = leases
        .get("metahook-driver")
        .await
        .expect("the driver's Lease");
    assert_eq!(
        lease.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("e2e")
    );

    let ns = namespace(client, "e2e-http").await;
    let hellos = hello_api(client, &ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let hello: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "fraim.co.jp/v1", "kind": "Hello",
        "metadata": {"name": "remote", "namespace": ns},
        "spec": {"replicas": 1}
    }))
    .unwrap();
    hellos.create(&PostParams::default(), &hello).await.unwrap();
    wait_for("the Deployment made through HTTP hooks", || async {
        let d = deployments.get_opt("remote").await.ok()??;
        (d.spec?.replicas == Some(1)).then_some(())
    })
    .await;
    hellos
        .delete("remote", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(
        "the Hello to go through the HTTP finalize hook",
        &hellos,
        "remote",
    )
    .await;
    drop_namespace(client, &ns).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Hello: creates its Deployment, scaling reaches it, status fills in, an
/// invalid spec loses nothing and warns, deletion runs finalize and removes
/// the finalizer.
async fn hello(client: &Client) {
    let ns = namespace(client, "e2e-hello").await;
    let hellos = hello_api(client, &ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let hello: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "fraim.co.jp/v1", "kind": "Hello",
        "metadata": {"name": "greeter", "namespace": ns},
        "spec": {"replicas": 2}
    }))
    .unwrap();
    let created = hellos.create(&PostParams::default(), &hello).await.unwrap();
    let uid = created.metadata.uid.clone().unwrap();

    let deployment = wait_for("the Hello's Deployment", || async {
        deployments.get_opt("greeter").await.ok().flatten()
    })
    .await;
    let owner = deployment
        .metadata
        .owner_references
        .clone()
        .unwrap_or_default();
    assert!(
        owner
            .iter()
            .any(|r| r.uid == uid && r.controller == Some(true)),
        "the Deployment is controlled by the Hello: {owner:?}"
    );
    assert_eq!(deployment.spec.as_ref().unwrap().replicas, Some(2));
    let deployment_uid = deployment.metadata.uid.clone().unwrap();

    let finalizer = "metacontroller.io/compositecontroller-hello";
    let filled = wait_for("the Hello's status", || async {
        let h = hellos.get("greeter").await.ok()?;
        let status = h.data.get("status")?;
        (status["observedGeneration"] == json!(h.metadata.generation?)
            && status["readyReplicas"] == json!(2))
        .then_some(h)
    })
    .await;
    assert!(
        filled
            .metadata
            .finalizers
            .clone()
            .unwrap_or_default()
            .iter()
            .any(|f| f == finalizer)
    );

    // Claiming: an orphan matching the selector is adopted and, as the hook
    // does not desire it, deleted; another controller's object is left alone.
    let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), &ns);
    let other_owner = configmaps
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "other-owner"}})).unwrap(),
        )
        .await
        .unwrap();
    let labelled = |name: &str, owner: Option<&str>| -> Deployment {
        let mut d = json!({
            "metadata": {"name": name, "labels": {"controller-uid": uid}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
        });
        if let Some(owner_uid) = owner {
            d["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
                "name": "other-owner", "uid": owner_uid, "controller": true}]);
        }
        serde_json::from_value(d).unwrap()
    };
    let other_uid = other_owner.metadata.uid.clone().unwrap();
    deployments
        .create(
            &PostParams::default(),
            &labelled("foreign", Some(&other_uid)),
        )
        .await
        .unwrap();
    deployments
        .create(&PostParams::default(), &labelled("stray", None))
        .await
        .unwrap();
    wait_gone(
        "the adopted stray Deployment to be deleted",
        &deployments,
        "stray",
    )
    .await;

    // Scaling reaches the Deployment.
    hellos
        .patch(
            "greeter",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    wait_for("the scale-up", || async {
        let d = deployments.get("greeter").await.ok()?;
        (d.spec?.replicas == Some(3)).then_some(())
    })
    .await;

    // An invalid spec (past the schema: this API server does not validate)
    // loses nothing and says why.
    let invalid = hellos
        .patch(
            "greeter",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 21}})),
        )
        .await
        .unwrap();
    let generation = invalid.metadata.generation.unwrap();
    let status = wait_for("the InvalidSpec condition", || async {
        let h = hellos.get("greeter").await.ok()?;
        let status = h.data.get("status")?.clone();
        (status["observedGeneration"] == json!(generation)).then_some(status)
    })
    .await;
    let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
    assert!(
        conditions
            .iter()
            .any(|c| c["status"] == "False" && c["reason"] == "InvalidSpec"),
        "{conditions:?}"
    );
    let held = deployments.get("greeter").await.unwrap();
    assert_eq!(
        held.metadata.uid.as_deref(),
        Some(deployment_uid.as_str()),
        "same Deployment"
    );
    assert_eq!(held.spec.unwrap().replicas, Some(3), "nothing lost");
    wait_for("a Warning event about the invalid spec", || async {
        let warnings = warnings_about(client, &ns, "greeter").await;
        warnings
            .iter()
            .any(|e| e.reason.as_deref() == Some("InvalidSpec"))
            .then_some(())
    })
    .await;

    let foreign = deployments.get("foreign").await.unwrap();
    let owners = foreign.metadata.owner_references.unwrap_or_default();
    assert_eq!(
        owners.len(),
        1,
        "another controller's Deployment is never touched"
    );
    assert_eq!(owners[0].uid, other_uid);

    // Deletion: finalize deletes the Deployment, then the finalizer goes and
    // the Hello with it.
    hellos
        .delete("greeter", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone("the Deployment to go", &deployments, "greeter").await;
    wait_gone("the Hello to go (finalizer removed)", &hellos, "greeter").await;
    drop_namespace(client, &ns).await;
}

/// Hikawa: sings Zundokos until a Kiyoshi.
async fn hikawa(client: &Client) {
    let ns = namespace(client, "e2e-hikawa").await;
    let group = "zundokokiyoshi.kaitoy.github.com";
    let hikawas = dynamic(client, &ns, group, "v1beta1", "Hikawa");
    let kiyoshis = dynamic(client, &ns, group, "v1beta1", "Kiyoshi");
    let hikawa: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1beta1"), "kind": "Hikawa",
        "metadata": {"name": "kiyoshi", "namespace": ns},
        "spec": {"intervalMillis": 10}
    }))
    .unwrap();
    let created = hikawas
        .create(&PostParams::default(), &hikawa)
        .await
        .unwrap();
    let uid = created.metadata.uid.unwrap();
    wait_for("a Kiyoshi of the Hikawa", || async {
        let list = kiyoshis.list(&Default::default()).await.ok()?;
        list.items
            .iter()
            .any(|k| {
                k.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|r| r.uid == uid && r.controller == Some(true))
            })
            .then_some(())
    })
    .await;
    // The status catches up with the children: the whole song, ending on
    // the first Zun Zun Zun Zun Doko, one Zundoko per word said.
    let zundokos = dynamic(client, &ns, group, "v1beta1", "Zundoko");
    let status = wait_for("the Hikawa's status to say Kiyoshi!", || async {
        let status = hikawas
            .get("kiyoshi")
            .await
            .ok()?
            .data
            .get("status")
            .cloned()?;
        (status["kiyoshied"] == true).then_some(status)
    })
    .await;
    let song = status["song"].as_str().unwrap_or_default().to_owned();
    assert!(song.ends_with("Zun Zun Zun Zun Doko Kiyoshi!"), "{song}");
    assert!(
        !song
            .trim_end_matches("Zun Zun Zun Zun Doko Kiyoshi!")
            .contains("Zun Zun Zun Zun Doko"),
        "sang past the first Zun Zun Zun Zun Doko: {song}"
    );
    let said = zundokos
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .len();
    assert_eq!(status["numZundokosSaid"], json!(said), "{status}");
    assert_eq!(
        kiyoshis
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    drop_namespace(client, &ns).await;
}

/// Foo: refuses a same-named Deployment it does not control.
async fn foo_refuses(client: &Client) {
    let ns = namespace(client, "e2e-foo").await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let foreign: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "taken", "namespace": ns},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "other"}},
                 "template": {"metadata": {"labels": {"app": "other"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &foreign)
        .await
        .unwrap();
    let foos = dynamic(client, &ns, "samplecontroller.k8s.io", "v1alpha1", "Foo");
    let parent: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
        "metadata": {"name": "example-foo", "namespace": ns},
        "spec": {"deploymentName": "taken", "replicas": 3}
    }))
    .unwrap();
    foos.create(&PostParams::default(), &parent).await.unwrap();
    wait_for(
        "an ErrResourceExists Warning about the foreign Deployment",
        || async {
            let warnings = warnings_about(client, &ns, "example-foo").await;
            warnings
                .iter()
                .any(|e| {
                    e.reason.as_deref() == Some("ErrResourceExists")
                        && e.note.as_deref().is_some_and(|n| {
                            n.contains(
                                r#"Resource "taken" already exists and is not managed by Foo"#,
                            )
                        })
                })
                .then_some(())
        },
    )
    .await;
    let still = deployments.get("taken").await.unwrap();
    assert!(
        still
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty(),
        "not adopted"
    );
    assert_eq!(still.spec.unwrap().replicas, Some(1), "not changed");
    drop_namespace(client, &ns).await;
}
