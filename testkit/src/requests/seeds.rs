//! Requests for the controllers metahook ships: Hello, Hikawa and Foo.

use super::objects::{Child, child, controller, deployment, owner_of, parent, sync_request};
use serde_json::{Value, json};

/// A Hello sync request observing `n` Deployments; the first is the Hello's
/// own (named like it), the rest are extra Deployments it also owns.
pub fn hello(n: usize) -> Value {
    let parent = parent(
        "fraim.co.jp/v1",
        "Hello",
        "hello",
        json!({"replicas": 2, "image": "nginxdemos/hello:0.3-plain-text"}),
        json!({}),
    );
    let owner = owner_of(&parent);
    let children = (0..n)
        .map(|i| {
            let name = if i == 0 {
                "hello".to_owned()
            } else {
                format!("hello-{i:05}")
            };
            let labels = json!({
                "app.kubernetes.io/managed-by": "metahook",
                "app.kubernetes.io/name": name,
                "operator.fraim.co.jp/managed-by": "metahook"
            });
            deployment(
                &name,
                "default",
                &owner,
                labels,
                2,
                "nginxdemos/hello:0.3-plain-text",
                i,
            )
        })
        .collect();
    sync_request(
        controller("hello", "fraim.co.jp/v1", "helloes"),
        parent,
        vec![("Deployment.apps/v1", children)],
    )
}

pub const HIKAWA_API: &str = "zundokokiyoshi.kaitoy.github.com/v1beta1";
/// Where the Hikawa hook records when a word was said (`hikawa::SAID_AT`;
/// spelled out so the generator stands without the hooks crate).
pub const HIKAWA_SAID_AT: &str = "zundokokiyoshi.kaitoy.github.com/said-at";

/// A Hikawa sync request mid-song with `n` observed Zundokos (no Kiyoshi
/// yet: the words never end in Zun×4+Doko, so the hook has work to do).
pub fn hikawa(n: usize) -> Value {
    let parent = parent(
        HIKAWA_API,
        "Hikawa",
        "hikawa",
        json!({"intervalMillis": 500, "maxZundokos": 10_000}),
        json!({"numZundokosSaid": n, "kiyoshied": false}),
    );
    let owner = owner_of(&parent);
    let zundokos = (0..n)
        .map(|i| {
            let name = format!("hikawa-zundoko-{:03}", i + 1);
            // Doko every third word: never four Zuns in a row.
            let word = if i % 3 == 2 { "Doko" } else { "Zun" };
            let said_at = format!(
                "2026-11-22T02:{:02}:{:02}.{:03}Z",
                (i / 120) % 60,
                (i / 2) % 60,
                (i % 2) * 500
            );
            child(
                Child {
                    api_version: HIKAWA_API,
                    kind: "Zundoko",
                    name: &name,
                    namespace: "default",
                    labels: json!({"controller-uid": owner.uid}),
                    annotations: &[(HIKAWA_SAID_AT, &said_at)],
                    spec: json!({"say": word}),
                    status: Value::Null,
                },
                &owner,
                i,
            )
        })
        .collect();
    sync_request(
        controller("hikawa", HIKAWA_API, "hikawas"),
        parent,
        vec![
            ("Zundoko.zundokokiyoshi.kaitoy.github.com/v1beta1", zundokos),
            ("Kiyoshi.zundokokiyoshi.kaitoy.github.com/v1beta1", vec![]),
        ],
    )
}

pub const FOO_API: &str = "samplecontroller.k8s.io/v1alpha1";

fn foo_parent() -> Value {
    parent(
        FOO_API,
        "Foo",
        "example-foo",
        json!({"deploymentName": "example-foo", "replicas": 1}),
        json!({"availableReplicas": 1}),
    )
}

/// A Foo customize request: the controller and the parent only.
pub fn foo_customize() -> Value {
    json!({
        "controller": controller("foo", FOO_API, "foos"),
        "parent": foo_parent()
    })
}

/// A Foo sync request with its Deployment observed and related.
pub fn foo_sync() -> Value {
    let parent = foo_parent();
    let owner = owner_of(&parent);
    let labels = json!({"app": "nginx", "controller": "example-foo"});
    let child = deployment(
        "example-foo",
        "default",
        &owner,
        labels,
        1,
        "nginx:latest",
        0,
    );
    let mut request = sync_request(
        controller("foo", FOO_API, "foos"),
        parent,
        vec![("Deployment.apps/v1", vec![child.clone()])],
    );
    request["related"] = json!({"Deployment.apps/v1": {"default/example-foo": child}});
    request
}
