//! Admission on the real API server: `metahook serve` over TLS answers the
//! seeds' `validate` hooks as a ValidatingWebhookConfiguration's webhooks
//! (by URL on loopback, its CA in `caBundle`; the API server presents no
//! client certificate, as in a cluster that configures none). A Hello whose
//! image has a space is refused before it is stored, with the hook's
//! message and field; a valid one is stored; a Foo's change of
//! `deploymentName` is stored with a warning `kubectl` prints; a Foo
//! created without one is stored with its own name there (Foo's `default`
//! hook, a MutatingWebhookConfiguration's webhook). With the hook service
//! stopped, `failurePolicy: Fail` refuses a create. The
//! configuration only selects this test's namespace, so nothing else on
//! the control plane is asked.

use crate::support::*;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use metahook_testkit::certs::Ca;
use metahook_testkit::https::HttpsClient;
use serde_json::json;
use std::path::PathBuf;

/// The hook server's directory, removed when the test ends.
pub(crate) struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `metahook serve` over HTTPS (no client certificate asked), and its CA
/// (also the conversion test's, `conversion.rs`).
pub(crate) async fn serve_tls() -> (Metahook, String, Dir) {
    let ca = Ca::new("metahook-e2e-admission");
    // One directory per server: the conversion test runs two at once.
    static SERVED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SERVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = Dir(
        std::env::temp_dir().join(format!("metahook-e2e-admission-{}-{n}", std::process::id()))
    );
    std::fs::create_dir_all(&dir.0).expect("a directory");
    ca.server(&["127.0.0.1", "localhost"]).write(&dir.0);
    let server = spawn(
        &kubeconfig(),
        &["serve", "--tls-dir", dir.0.to_str().expect("UTF-8")],
    );
    let probe = HttpsClient::new(&ca.pem, None);
    let addr = format!("127.0.0.1:{}", server.port)
        .parse()
        .expect("an address");
    wait_for("metahook serve over HTTPS to be ready", || async {
        let ready = probe.get(addr, "/readyz").ok()?;
        (ready.status == 200).then_some(())
    })
    .await;
    (server, ca.pem, dir)
}

/// A webhook calling `hook` of the seed `controller` at `port`, for
/// namespace `ns` only.
fn webhook(
    hook: &str,
    port: u16,
    ca_pem: &str,
    ns: &str,
) -> impl Fn(&str, &str, &str, &str) -> serde_json::Value {
    move |controller: &str, group: &str, version: &str, plural: &str| {
        json!({
            "name": format!("{controller}.e2e.metahook.io"),
            "clientConfig": {
                "url": format!("https://127.0.0.1:{port}/{controller}/{hook}"),
                "caBundle": ByteString(ca_pem.as_bytes().to_vec()),
            },
            "rules": [{
                "apiGroups": [group], "apiVersions": [version],
                "operations": ["CREATE", "UPDATE"], "resources": [plural],
            }],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "failurePolicy": "Fail",
            "timeoutSeconds": 5,
        })
    }
}

/// The seeds' validate webhooks at `port`, for namespace `ns` only.
fn webhooks(name: &str, port: u16, ca_pem: &str, ns: &str) -> ValidatingWebhookConfiguration {
    let webhook = webhook("validate", port, ca_pem, ns);
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "webhooks": [
            webhook("hello", "fraim.co.jp", "v1", "helloes"),
            webhook("foo", "samplecontroller.k8s.io", "v1alpha1", "foos"),
        ],
    }))
    .expect("a ValidatingWebhookConfiguration")
}

/// Foo's default webhook at `port`, for namespace `ns` only.
fn defaulting(name: &str, port: u16, ca_pem: &str, ns: &str) -> MutatingWebhookConfiguration {
    let webhook = webhook("default", port, ca_pem, ns);
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "webhooks": [webhook("foo", "samplecontroller.k8s.io", "v1alpha1", "foos")],
    }))
    .expect("a MutatingWebhookConfiguration")
}

fn hello(name: &str, image: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "fraim.co.jp/v1", "kind": "Hello",
        "metadata": {"name": name},
        "spec": {"replicas": 0, "image": image},
    }))
    .expect("a Hello")
}

#[tokio::test]
async fn the_api_server_asks_validate_before_it_stores() {
    let (_, client) = cluster_with_crds().await;
    let ns = namespace(&client, "e2e-admission").await;
    let (server, ca_pem, _dir) = serve_tls().await;
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let config_name = ns.clone();
    configs
        .create(
            &PostParams::default(),
            &webhooks(&config_name, server.port, &ca_pem, &ns),
        )
        .await
        .expect("creating the ValidatingWebhookConfiguration");
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    mutating
        .create(
            &PostParams::default(),
            &defaulting(&config_name, server.port, &ca_pem, &ns),
        )
        .await
        .expect("creating the MutatingWebhookConfiguration");
    checks(&client, &ns).await;
    defaults(&client, &ns).await;
    // The hook service gone: failurePolicy Fail refuses what it would have
    // been asked, valid or not, saying it could not call the webhook.
    drop(server);
    let refused = hello_api(&client, &ns)
        .create(
            &PostParams::default(),
            &hello("unasked", "nginxdemos/hello:0.3-plain-text"),
        )
        .await;
    match refused {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 500, "{status:?}");
            assert!(
                status
                    .message
                    .contains("failed calling webhook \"hello.e2e.metahook.io\""),
                "{status:?}"
            );
        }
        other => panic!("with no hook service, a create under failurePolicy Fail got {other:?}"),
    }
    let _ = configs.delete(&config_name, &DeleteParams::default()).await;
    let _ = mutating
        .delete(&config_name, &DeleteParams::default())
        .await;
    drop_namespace(&client, &ns).await;
}

async fn checks(client: &Client, ns: &str) {
    let hellos = hello_api(client, ns);
    // The API server reads new webhook configurations from an informer:
    // until it has this one, a bad Hello would be stored. Each attempt
    // that got in is deleted again.
    let refusal = wait_for("the API server to ask the validate webhook", || async {
        match hellos
            .create(&PostParams::default(), &hello("spaced", "nginx demos"))
            .await
        {
            Err(kube::Error::Api(status)) => Some(status),
            Ok(_) => {
                let _ = hellos.delete("spaced", &DeleteParams::default()).await;
                None
            }
            Err(other) => panic!("creating a Hello: {other}"),
        }
    })
    .await;
    assert_eq!(refusal.code, 422, "{refusal:?}");
    assert_eq!(refusal.reason, "Invalid", "{refusal:?}");
    assert_eq!(
        refusal.message,
        "admission webhook \"hello.e2e.metahook.io\" denied the request: spec.image: must not contain whitespace"
    );
    assert!(
        hellos.get_opt("spaced").await.expect("a read").is_none(),
        "a refused Hello was stored"
    );

    hellos
        .create(
            &PostParams::default(),
            &hello("fine", "nginxdemos/hello:0.3-plain-text"),
        )
        .await
        .expect("a valid Hello is stored");

    let foos = dynamic(client, ns, "samplecontroller.k8s.io", "v1alpha1", "Foo");
    let example: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
        "metadata": {"name": "example-foo"},
        "spec": {"deploymentName": "example-foo", "replicas": 0},
    }))
    .expect("a Foo");
    foos.create(&PostParams::default(), &example)
        .await
        .expect("a valid Foo is stored");
    let renamed = kubectl(&[
        "patch",
        "foo",
        "example-foo",
        "-n",
        ns,
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"deploymentName":"example-foo-v2"}}"#,
    ]);
    let stderr = String::from_utf8_lossy(&renamed.stderr);
    assert!(renamed.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "Warning: spec.deploymentName: changing it from \"example-foo\" to \"example-foo-v2\" replaces Deployment example-foo"
        ),
        "no warning in: {stderr}"
    );
    let stored = foos.get("example-foo").await.expect("the Foo");
    assert_eq!(stored.data["spec"]["deploymentName"], "example-foo-v2");
}

/// A Foo created without `deploymentName` is stored with its own name
/// there: the API server applied the default hook's patch before the
/// validate hook (which refuses an empty name) was asked.
async fn defaults(client: &Client, ns: &str) {
    let foos = dynamic(client, ns, "samplecontroller.k8s.io", "v1alpha1", "Foo");
    let unnamed: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
        "metadata": {"name": "named-after-itself"},
        "spec": {"replicas": 0},
    }))
    .expect("a Foo");
    // Until the API server has read the MutatingWebhookConfiguration, the
    // validate hook refuses the Foo: an empty name.
    let stored = wait_for("the API server to ask the default webhook", || async {
        match foos.create(&PostParams::default(), &unnamed).await {
            Ok(stored) => Some(stored),
            Err(kube::Error::Api(status)) if status.code == 422 => {
                assert!(
                    status
                        .message
                        .contains("spec.deploymentName: must not be empty"),
                    "{status:?}"
                );
                None
            }
            Err(other) => panic!("creating a Foo: {other}"),
        }
    })
    .await;
    assert_eq!(stored.data["spec"]["deploymentName"], "named-after-itself");
    assert_eq!(stored.data["spec"]["replicas"], 0, "the rest as sent");
}
