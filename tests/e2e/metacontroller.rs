//! The scenarios of `scenarios.rs` under the real Metacontroller: v4.17.2,
//! built from its unmodified source by `tests/metacontroller/build.sh`
//! (`tests/e2e/run.sh` names the binary in `METAHOOK_E2E_METACONTROLLER`),
//! run outside the cluster as a process with the control plane's admin
//! kubeconfig, with its own CRDs (from the source archive) and the
//! CompositeControllers of `chart/metacontroller/*.yaml` pointed at `metahook
//! serve` on loopback. Each test starts both and removes Metacontroller's
//! CRDs (and with them the CompositeControllers) when it ends, so nothing of
//! it is left for the chart's tests.
//!
//! Without the binary these tests fail: the source archive is always there
//! to build it from.

use crate::scenarios::{Engine, drift_is_put_back, foo_refuses, hello, hikawa};
use crate::support::*;
use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The Metacontroller binary (`tests/e2e/run.sh` exports it).
const BINARY_ENV: &str = "METAHOOK_E2E_METACONTROLLER";
/// Where the source archive is, if not beside the repository (the variable
/// `tests/metacontroller/build.sh` reads too).
const ARCHIVE_ENV: &str = "METAHOOK_METACONTROLLER_ARCHIVE";
/// Metacontroller's CRDs, in its source archive.
const CRDS_IN_ARCHIVE: &str = "manifests/production/metacontroller-crds-v1.yaml";
/// Every controller of `chart/metacontroller/`.
const CONTROLLERS: [&str; 3] = ["hello", "hikawa", "foo"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_is_created_scaled_held_while_invalid_and_finalized() {
    let run = Metacontroller::start().await;
    hello(&run.client, Engine::Metacontroller).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_edited_by_hand_is_put_back_without_a_hot_loop() {
    let run = Metacontroller::start().await;
    let ns = namespace(&run.client, "e2e-mc-drift").await;
    drift_is_put_back(&run.client, &ns, Engine::Metacontroller).await;
    drop_namespace(&run.client, &ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hikawa_sings_to_exactly_one_kiyoshi() {
    let run = Metacontroller::start().await;
    hikawa(&run.client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foo_leaves_a_deployment_it_does_not_own_alone() {
    let run = Metacontroller::start().await;
    foo_refuses(&run.client, Engine::Metacontroller).await;
}

/// The binary `tests/e2e/run.sh` built; the test fails without it.
fn binary() -> PathBuf {
    let path = match std::env::var_os(BINARY_ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "{BINARY_ENV} is not set: these tests run the real Metacontroller; \
             tests/e2e/run.sh builds it (tests/metacontroller/build.sh) and sets it"
        ),
    };
    assert!(
        path.is_file(),
        "{BINARY_ENV}={}: no such file; build it with tests/metacontroller/build.sh",
        path.display()
    );
    path
}

/// Metacontroller's own CRDs (CompositeController, DecoratorController,
/// ControllerRevision), read from its source archive.
fn metacontroller_crds() -> Vec<Value> {
    let archive = std::env::var_os(ARCHIVE_ENV)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../shared/metacontroller/metacontroller-v4.17.2.tar.gz")
        });
    let out = Command::new("tar")
        .arg("-xzOf")
        .arg(&archive)
        .arg(CRDS_IN_ARCHIVE)
        .output()
        .expect("running tar");
    assert!(
        out.status.success(),
        "reading {CRDS_IN_ARCHIVE} from {}: {}",
        archive.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8 CRDs");
    let crds: Vec<Value> = serde_saphyr::from_multiple(&text).expect("YAML CRDs");
    let crds: Vec<Value> = crds.into_iter().filter(|c| !c.is_null()).collect();
    let names: Vec<&str> = crds
        .iter()
        .filter_map(|c| c["metadata"]["name"].as_str())
        .collect();
    assert!(
        names.contains(&"compositecontrollers.metacontroller.k8s.io"),
        "{names:?}"
    );
    crds
}

fn compositecontrollers(client: &Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("metacontroller.k8s.io", "v1alpha1", "CompositeController");
    Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, "compositecontrollers"),
    )
}

/// Metacontroller running against the control plane, its hooks answered
/// by `metahook serve`. Dropped: Metacontroller stopped, its CRDs (and the
/// CompositeControllers) removed, `metahook serve` stopped.
pub(crate) struct Metacontroller {
    pub(crate) client: Client,
    child: Child,
    log: PathBuf,
    crds: Vec<String>,
    /// `metahook serve`, if this run owns it: dropped (stopped) after
    /// Metacontroller.
    _hooks: Option<Metahook>,
    /// Where the hooks are served.
    port: u16,
}

impl Metacontroller {
    async fn start() -> Metacontroller {
        let hooks = start(&kubeconfig(), &["serve"]).await;
        let port = hooks.port;
        Self::calling(Some(hooks), port, |name, port| {
            controller_manifest_at(name, port, None)
        })
        .await
    }

    /// Metacontroller calling the hooks on `port` (served by `hooks`, if it
    /// is to be stopped with it), with the CompositeControllers
    /// `manifest(controller, port)` makes.
    pub(crate) async fn calling(
        hooks: Option<Metahook>,
        port: u16,
        manifest: impl Fn(&str, u16) -> String,
    ) -> Metacontroller {
        let binary = binary();
        let client = admin().await;
        install_crds(&client).await;
        let crds = install_metacontroller_crds(&client).await;

        let health = free_port();
        let log = std::env::temp_dir().join(format!(
            "metahook-e2e-metacontroller-{}-{}.log",
            std::process::id(),
            health
        ));
        let log_file = std::fs::File::create(&log).expect("creating Metacontroller's log");
        let child = Command::new(&binary)
            // client-go names the program in its User-Agent: the audit log
            // tells Metacontroller's writes apart by `metacontroller/`.
            .arg0("metacontroller")
            .args([
                // The parents' CRDs are installed before it starts; a short
                // refresh anyway.
                "--discovery-interval=5s",
                "--metrics-address=127.0.0.1:0",
                &format!("--health-probe-bind-address=127.0.0.1:{health}"),
                // Its default (5 QPS, burst 10) would only slow the tests;
                // the hooks see the same requests either way.
                "--client-go-qps=100",
                "--client-go-burst=200",
            ])
            .env("KUBECONFIG", kubeconfig())
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("the log's handle"))
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
        let mut run = Metacontroller {
            client,
            child,
            log,
            crds,
            _hooks: hooks,
            port,
        };
        wait_for("Metacontroller to answer /readyz", || {
            let ready = run.ready(health);
            async move { ready.then_some(()) }
        })
        .await;
        let version = run.version();
        say(&format!(
            "under the real Metacontroller {version} ({}; its log {} is kept if the test fails), hooks answered by metahook serve on 127.0.0.1:{}",
            binary.display(),
            run.log.display(),
            run.port
        ));
        run.apply_controllers(manifest).await;
        run
    }

    /// Whether it answers `/readyz`; fails the test if it has exited.
    fn ready(&mut self, port: u16) -> bool {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("Metacontroller exited ({status}):\n{}", self.log_tail(40));
        }
        readyz(port)
    }

    /// The version it says it is in its first log line (`Configuration
    /// information`, `version`): build.sh stamps the release.
    fn version(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|l| l["msg"] == "Configuration information")
            .and_then(|l| l["version"].as_str().map(str::to_owned))
            .unwrap_or_else(|| panic!("no version in Metacontroller's log:\n{text}"))
    }

    /// The CompositeControllers of `chart/metacontroller/*.yaml`, their webhooks
    /// at `metahook serve`; waits until Metacontroller starts each.
    async fn apply_controllers(&self, manifest: impl Fn(&str, u16) -> String) {
        let api = compositecontrollers(&self.client);
        for name in CONTROLLERS {
            let text = manifest(name, self.port);
            let object: Value = serde_saphyr::from_str(&text).expect("a CompositeController");
            let applied = api
                .patch(
                    name,
                    &PatchParams::apply("metahook-e2e").force(),
                    &Patch::Apply(&object),
                )
                .await
                .unwrap_or_else(|e| panic!("applying CompositeController {name}: {e}"));
            let uid = applied.metadata.uid.expect("a uid");
            // It says so in a Normal Event about the CompositeController.
            let events: Api<Event> = Api::all(self.client.clone());
            wait_for(
                &format!("Metacontroller to start CompositeController {name}"),
                || async {
                    events
                        .list(&Default::default())
                        .await
                        .ok()?
                        .items
                        .iter()
                        .any(|e| {
                            e.reason.as_deref() == Some("Starting")
                                && e.regarding.as_ref().and_then(|r| r.uid.as_deref())
                                    == Some(uid.as_str())
                        })
                        .then_some(())
                },
            )
            .await;
        }
    }

    fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for Metacontroller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            say(&format!(
                "Metacontroller's log ({}), last 60 lines:\n{}",
                self.log.display(),
                self.log_tail(60)
            ));
        } else {
            let _ = std::fs::remove_file(&self.log);
        }
        // Its CRDs go, the CompositeControllers with them: the chart's tests
        // install a CompositeController CRD of their own afterwards.
        let mut args = vec!["delete", "crd", "--ignore-not-found", "--timeout=60s"];
        args.extend(self.crds.iter().map(String::as_str));
        let out = kubectl(&args);
        if !out.status.success() && !std::thread::panicking() {
            panic!(
                "removing Metacontroller's CRDs: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Server-side applies Metacontroller's CRDs and waits until each is
/// established; their names.
async fn install_metacontroller_crds(client: &Client) -> Vec<String> {
    apply_crds(client, metacontroller_crds()).await
}
