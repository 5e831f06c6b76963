//! The hooks over mutual TLS: `metahook serve --tls-dir --tls-client-auth`
//! called by the bundled driver (`metahook drive`) and by the real
//! Metacontroller, each reading the webhooks' `caBundle` and `clientTLS`
//! from Secrets in the cluster. With the right CA a Hello converges; with a
//! CA bundle of another CA every call fails, the caller says why in a
//! Warning Event on the Hello, and no child or status is written. With the
//! certificates Metacontroller's own webhook-auth example makes (openssl;
//! an X.509 v1 client certificate), Metacontroller's calls are answered,
//! and a client certificate of another CA is refused and counted.

use crate::metacontroller::Metacontroller;
use crate::support::*;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use metahook_testkit::certs::{Ca, OpensslRecipe, Pair};
use metahook_testkit::https::HttpsClient;
use metahook_testkit::metrics_text::sample;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The hook server's CA, the client certificate it issued its callers,
/// its certificate directory, and `metahook serve` over mutual TLS on it.
struct Hooks {
    ca_pem: String,
    caller: Pair,
    dir: PathBuf,
    server: Metahook,
}

impl Drop for Hooks {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// With certificates from testkit's CA (v3).
async fn serve_mtls(kubeconfig: &Path) -> Hooks {
    let ca = Ca::new("metahook-e2e-hooks");
    let dir = std::env::temp_dir().join(format!("metahook-e2e-hooks-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let caller = ca.client("metacontroller");
    serve_with(
        kubeconfig,
        dir,
        &ca.pem,
        &ca.server(&["127.0.0.1", "localhost"]),
        caller,
    )
    .await
}

/// With certificates made as Metacontroller's webhook-auth example makes
/// them (its test.sh's openssl commands; the server's names are where it
/// is dialled): the client certificate is X.509 v1.
async fn serve_mtls_made_as_the_example(kubeconfig: &Path) -> Hooks {
    let dir = std::env::temp_dir().join(format!("metahook-e2e-hooks-v1-{}", std::process::id()));
    let made = OpensslRecipe::new(&dir.join("made"), "IP:127.0.0.1,DNS:localhost");
    serve_with(kubeconfig, dir, &made.ca_pem, &made.server, made.client).await
}

async fn serve_with(
    kubeconfig: &Path,
    dir: PathBuf,
    ca_pem: &str,
    serving: &Pair,
    caller: Pair,
) -> Hooks {
    let server = serve_mtls_at(kubeconfig, &dir, ca_pem, serving).await;
    Hooks {
        ca_pem: ca_pem.to_owned(),
        caller,
        dir,
        server,
    }
}

/// `metahook serve --tls-dir <dir> --tls-client-auth`, `dir` holding
/// `serving` and `ca_pem` as `ca.crt`; once ready.
pub(crate) async fn serve_mtls_at(
    kubeconfig: &Path,
    dir: &Path,
    ca_pem: &str,
    serving: &Pair,
) -> Metahook {
    std::fs::create_dir_all(dir).expect("a directory");
    serving.write(dir);
    std::fs::write(dir.join("ca.crt"), ca_pem).expect("ca.crt");
    let server = spawn(
        kubeconfig,
        &[
            "serve",
            "--tls-dir",
            dir.to_str().expect("UTF-8"),
            "--tls-client-auth",
        ],
    );
    // /readyz needs no client certificate: as the kubelet's probe.
    let probe = HttpsClient::new(ca_pem, None);
    let addr = format!("127.0.0.1:{}", server.port)
        .parse()
        .expect("an address");
    wait_for("metahook serve over HTTPS to be ready", || async {
        probe
            .get(addr, "/readyz")
            .ok()
            .and_then(|r| (r.status == 200).then_some(()))
    })
    .await;
    server
}

/// `metahook_hook_tls_refusals_total{reason}` on the hooks' `/metrics`.
fn tls_refusals(hooks: &Hooks, reason: &str) -> u64 {
    let addr = format!("127.0.0.1:{}", hooks.server.port)
        .parse()
        .expect("an address");
    let answer = HttpsClient::new(&hooks.ca_pem, None)
        .get(addr, "/metrics")
        .expect("/metrics");
    let series = format!("metahook_hook_tls_refusals_total{{reason=\"{reason}\"}}");
    sample(&answer.body, &series) as u64
}

/// The Secrets, in a namespace of their own (CompositeControllers are
/// cluster-scoped; Secrets are not), whose name it returns: Metacontroller's
/// (and the driver's) client certificate, one another CA issued the same
/// way, the right CA and another one.
async fn secrets(client: &Client, hooks: &Hooks, stranger: &Pair) -> String {
    let ns = namespace(client, "e2e-hooks-secrets").await;
    let api: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let caller = &hooks.caller;
    let secret = |name: &str, data: &[(&str, &str)]| Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..Default::default()
    };
    for object in [
        secret(
            "hooks-client",
            &[("tls.crt", &caller.cert), ("tls.key", &caller.key)],
        ),
        secret(
            "stranger-client",
            &[("tls.crt", &stranger.cert), ("tls.key", &stranger.key)],
        ),
        secret("hooks-ca", &[("ca.crt", &hooks.ca_pem)]),
        secret("another-ca", &[("ca.crt", &Ca::new("someone-else").pem)]),
    ] {
        let name = object.metadata.name.clone().expect("a name");
        api.create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("creating Secret {name}: {e}"));
    }
    ns
}

/// `chart/metacontroller/<controller>.yaml` calling `https://127.0.0.1:<port>`,
/// verifying it with the CA in Secret `ca_secret` and presenting the client
/// certificate of Secret `hooks-client`, both in namespace `ns`.
fn mtls_manifest(controller: &str, port: u16, ns: &str, ca_secret: &str) -> String {
    mtls_manifest_as(controller, port, ns, ca_secret, "hooks-client")
}

/// [`mtls_manifest`] presenting the client certificate of Secret
/// `client_secret`.
fn mtls_manifest_as(
    controller: &str,
    port: u16,
    ns: &str,
    ca_secret: &str,
    client_secret: &str,
) -> String {
    let mut object = controller_manifest_value(controller, port, None);
    let hooks = object["spec"]["hooks"]
        .as_object_mut()
        .unwrap_or_else(|| panic!("{controller}: no spec.hooks"));
    for hook in hooks.values_mut() {
        let webhook = &mut hook["webhook"];
        let url = webhook["url"].as_str().unwrap_or_default();
        webhook["url"] = json!(url.replacen("http://", "https://", 1));
        webhook["caBundle"] = json!({"secretRef": {"name": ca_secret, "namespace": ns}});
        webhook["clientTLS"] = json!({"secretRef": {"name": client_secret, "namespace": ns}});
    }
    let out = serde_saphyr::to_string(&object).unwrap_or_else(|e| panic!("{controller}: {e}"));
    assert!(
        out.contains("clientTLS") && out.contains("https://127.0.0.1:"),
        "{out}"
    );
    out
}

/// `metahook drive` with the Hello manifest of [`mtls_manifest`].
async fn drive(kubeconfig: &Path, port: u16, ns: &str, ca_secret: &str) -> (Metahook, PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "metahook-e2e-mtls-{ca_secret}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("a directory");
    std::fs::write(
        dir.join("hello.yaml"),
        mtls_manifest("hello", port, ns, ca_secret),
    )
    .expect("the manifest");
    let driver = start_drive(kubeconfig, &dir).await;
    (driver, dir)
}

/// A Hello converges through the hooks.
async fn converges(client: &Client, prefix: &str) {
    control_plane_runs_pods(client).await;
    let ns = namespace(client, prefix).await;
    create_hellos(client, &ns, &["secure".to_owned()], 2).await;
    wait_for(
        "the Hello to converge through hooks over mutual TLS",
        || async { converged(client, &ns, "secure", 2).await.then_some(()) },
    )
    .await;
    delete_all_hellos(client, &ns).await;
    drop_namespace(client, &ns).await;
}

/// With the wrong CA: a Warning Event naming `expected`, and no child and
/// no status written.
async fn refuses(client: &Client, prefix: &str, expected: &str) {
    let ns = namespace(client, prefix).await;
    create_hellos(client, &ns, &["unverified".to_owned()], 1).await;
    let message = wait_for(
        "a Warning Event saying the hook's certificate is not trusted",
        || async {
            warnings_about(client, &ns, "unverified")
                .await
                .into_iter()
                .filter_map(|e| e.note)
                .find(|note| note.contains(expected))
        },
    )
    .await;
    say(&format!("the caller's event: {message}"));
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    assert!(
        deployments
            .list(&Default::default())
            .await
            .expect("listing")
            .items
            .is_empty(),
        "no child without a verified hook"
    );
    let hello = hello_api(client, &ns)
        .get("unverified")
        .await
        .expect("the Hello");
    assert!(
        hello
            .data
            .get("status")
            .is_none_or(|s| s.is_null() || s.as_object().is_some_and(|o| o.is_empty())),
        "no status without a verified hook: {:?}",
        hello.data.get("status")
    );
    // The finalize hook cannot be called either: the finalizer goes by hand.
    let hellos = hello_api(client, &ns);
    hellos
        .delete("unverified", &DeleteParams::default())
        .await
        .expect("deleting the Hello");
    hellos
        .patch(
            "unverified",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("removing the finalizer");
    wait_gone("the unverified Hello", &hellos, "unverified").await;
    drop_namespace(client, &ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_calls_the_hooks_over_mutual_tls() {
    let (path, client) = cluster_with_crds().await;
    let hooks = serve_mtls(&path).await;
    let secrets_ns = secrets(&client, &hooks, &Ca::new("stranger").client("driver")).await;
    {
        let (_driver, dir) = drive(&path, hooks.server.port, &secrets_ns, "hooks-ca").await;
        converges(&client, "e2e-mtls-driver").await;
        let _ = std::fs::remove_dir_all(dir);
    }
    let (_driver, dir) = drive(&path, hooks.server.port, &secrets_ns, "another-ca").await;
    refuses(&client, "e2e-mtls-driver-wrong-ca", "UnknownIssuer").await;
    let _ = std::fs::remove_dir_all(dir);
    drop_namespace(&client, &secrets_ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metacontroller_calls_the_hooks_over_mutual_tls() {
    let path = kubeconfig();
    let client = admin().await;
    let hooks = serve_mtls(&path).await;
    let secrets_ns = secrets(&client, &hooks, &Ca::new("stranger").client("mc")).await;
    let port = hooks.server.port;
    {
        let run = Metacontroller::calling(None, port, |name, port| {
            mtls_manifest(name, port, &secrets_ns, "hooks-ca")
        })
        .await;
        converges(&run.client, "e2e-mtls-metacontroller").await;
    }
    let run = Metacontroller::calling(None, port, |name, port| {
        mtls_manifest(name, port, &secrets_ns, "another-ca")
    })
    .await;
    refuses(
        &run.client,
        "e2e-mtls-metacontroller-wrong-ca",
        "certificate signed by unknown authority",
    )
    .await;
    drop(run);
    drop_namespace(&client, &secrets_ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metacontroller_calls_the_hooks_with_certificates_made_as_its_webhook_auth_example_makes_them()
 {
    let path = kubeconfig();
    let client = admin().await;
    let hooks = serve_mtls_made_as_the_example(&path).await;
    // Another CA made by the same recipe: the same names, another key.
    let stranger = OpensslRecipe::new(&hooks.dir.join("stranger"), "DNS:localhost");
    let secrets_ns = secrets(&client, &hooks, &stranger.client).await;
    let port = hooks.server.port;
    {
        let run = Metacontroller::calling(None, port, |name, port| {
            mtls_manifest(name, port, &secrets_ns, "hooks-ca")
        })
        .await;
        converges(&run.client, "e2e-mtls-v1-metacontroller").await;
    }
    assert_eq!(
        tls_refusals(&hooks, "unknown_ca"),
        0,
        "no handshake refused while Metacontroller called with its v1 certificate"
    );
    // Metacontroller presenting the other CA's certificate: each call fails
    // the handshake, Metacontroller says so, and the hooks count it.
    let run = Metacontroller::calling(None, port, |name, port| {
        mtls_manifest_as(name, port, &secrets_ns, "hooks-ca", "stranger-client")
    })
    .await;
    refuses(&run.client, "e2e-mtls-v1-stranger", "remote error: tls").await;
    let refused = tls_refusals(&hooks, "unknown_ca");
    say(&format!(
        "the hooks refused {refused} handshakes as unknown_ca"
    ));
    assert!(refused > 0, "the stranger's handshakes are counted");
    drop(run);
    drop_namespace(&client, &secrets_ns).await;
}
