//! Hello, Hikawa and Foo driven to a settled cluster by the bundled
//! driver's own planner (metahook-testing's convergence check), and
//! deleted through to the end: no cluster, no Docker.

use k8s_openapi::api::apps::v1::Deployment;
use metahook_seeds::{foo, hello, hikawa};
use metahook_testing::{Converge, kubernetes};
use serde_json::{Value, json};

fn condition<'a>(object: &'a Value, type_: &str) -> &'a Value {
    object["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == type_))
        .unwrap_or_else(|| panic!("no {type_} condition in {object}"))
}

#[test]
fn a_hello_settles_once_its_deployment_is_available_and_goes_with_it() {
    let settled = Converge::new(hello::controller())
        .unwrap()
        .parent(json!({
            "apiVersion": "fraim.co.jp/v1", "kind": "Hello",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"replicas": 3},
        }))
        .defaults::<Deployment>(kubernetes::deployment_defaults)
        .moves::<Deployment>(kubernetes::deployment_becomes_available)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    // The finalizer, the Deployment and a first status; the status once
    // the Deployment is available; then nothing.
    assert_eq!(settled.passes(), 3, "{:#?}", settled.history());
    let parent = settled.parent().unwrap();
    assert_eq!(parent["status"]["availableReplicas"], 3);
    assert_eq!(condition(parent, "Ready")["status"], "True");
    let deployment = settled.object::<Deployment>("web").unwrap();
    assert_eq!(deployment["spec"]["replicas"], 3);
    let gone = settled.delete().unwrap_or_else(|e| panic!("{e}"));
    assert!(gone.parent().is_none(), "finalized and gone");
    assert!(gone.objects::<Deployment>().is_empty());
}

#[test]
fn a_hikawa_sings_to_its_kiyoshi_paced_by_its_interval_and_settles() {
    let settled = Converge::new(hikawa::controller())
        .unwrap()
        .parent(json!({
            "apiVersion": "zundokokiyoshi.kaitoy.github.com/v1beta1", "kind": "Hikawa",
            "metadata": {"name": "song", "namespace": "shop", "uid": "uid-song"},
            "spec": {"intervalMillis": 500, "maxZundokos": 200},
        }))
        // Passes follow one another at once; the next word comes when the
        // hook's resync says it is due.
        .tick(std::time::Duration::ZERO)
        .max_passes(1000)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let status = &settled.parent().unwrap()["status"];
    let phase = status["phase"].as_str().unwrap();
    assert!(phase == "Kiyoshied" || phase == "GaveUp", "{status}");
    let said = status["numZundokosSaid"].as_u64().unwrap();
    assert!(said >= 5, "Zun Zun Zun Zun Doko takes five: {status}");
    let zundokos = settled.objects::<hikawa::Zundoko>();
    assert_eq!(zundokos.len() as u64, said);
    // Each word waited its interval after the one before: the song took at
    // least that long on the check's clock.
    let took = settled.now().duration_since(settled.started());
    assert!(
        took >= jiff::SignedDuration::from_millis(500 * said as i64),
        "{said} words in {took}"
    );
    let gone = settled.delete().unwrap_or_else(|e| panic!("{e}"));
    assert!(gone.parent().is_none());
    assert!(gone.objects::<hikawa::Zundoko>().is_empty());
    assert!(gone.objects::<hikawa::Kiyoshi>().is_empty());
}

fn a_foo() -> Value {
    json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
        "metadata": {"name": "example-foo", "namespace": "shop"},
        "spec": {"deploymentName": "example-foo", "replicas": 2},
    })
}

#[test]
fn a_foo_settles_with_its_deployment_available() {
    let settled = Converge::new(foo::controller())
        .unwrap()
        .parent(a_foo())
        .defaults::<Deployment>(kubernetes::deployment_defaults)
        .moves::<Deployment>(kubernetes::deployment_becomes_available)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(settled.passes() <= 3, "{:#?}", settled.history());
    let parent = settled.parent().unwrap();
    assert_eq!(parent["status"]["availableReplicas"], 2);
    assert_eq!(condition(parent, "Ready")["status"], "True");
}

#[test]
fn a_foo_leaves_a_deployment_it_does_not_own_alone_and_settles() {
    let theirs = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "example-foo", "namespace": "shop", "labels": {"owner": "someone"}},
        "spec": {"replicas": 7},
    });
    let settled = Converge::new(foo::controller())
        .unwrap()
        .object(theirs)
        .parent(a_foo())
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let parent = settled.parent().unwrap();
    assert_eq!(
        condition(parent, "Ready")["reason"],
        foo::ERR_RESOURCE_EXISTS
    );
    let deployment = settled.object::<Deployment>("example-foo").unwrap();
    assert_eq!(deployment["spec"]["replicas"], 7, "untouched");
    assert!(
        deployment["metadata"]["ownerReferences"].is_null(),
        "not adopted"
    );
}
