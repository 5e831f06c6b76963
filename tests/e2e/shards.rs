//! Two drivers sharing the parents by a label (`--shard-selector`), with no
//! coordinator of their own: each reconciles only its parents (the audit
//! log's users say so), each child carries its parent's shard label, a
//! parent relabelled to the other shard converges there and the old shard
//! stops touching it, and a parent no shard selects is left alone (the
//! failure mode docs/architecture.md names).

use crate::support::*;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

const SHARD: &str = "metahook.dev/shard";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_split_the_parents_and_hand_a_relabelled_one_over() {
    let client = admin().await;
    install_crds(&client).await;
    let ns = namespace(&client, "e2e-shards").await;
    let shard = |name: &'static str| async move {
        let user = format!("metahook-shard-{name}");
        let selector = format!("{SHARD}={name}");
        let process = start(
            &kubeconfig_as(&user),
            &["serve", "--drive", "--shard-selector", &selector],
        )
        .await;
        (user, process)
    };
    let (user_a, _a) = shard("a").await;
    let (user_b, _b) = shard("b").await;
    let hellos = hello_api(&client, &ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    for (name, label) in [
        ("a1", Some("a")),
        ("a2", Some("a")),
        ("b1", Some("b")),
        ("nobody", None),
    ] {
        let labels: Vec<(&str, &str)> = label.map(|l| (SHARD, l)).into_iter().collect();
        create_hello(&hellos, "fraim.co.jp/v1", name, &labels, 1).await;
    }
    let converged = |name: &'static str, shard: &'static str| {
        let (hellos, deployments) = (hellos.clone(), deployments.clone());
        async move {
            wait_for(&format!("{name} converged by shard {shard}"), || async {
                let d = deployments.get_opt(name).await.ok()??;
                let h = hellos.get(name).await.ok()?;
                let labelled =
                    d.metadata.labels.as_ref()?.get(SHARD).map(String::as_str) == Some(shard);
                let observed =
                    h.data.get("status")?["observedGeneration"] == json!(h.metadata.generation);
                (labelled && observed).then_some(())
            })
            .await
        }
    };
    converged("a1", "a").await;
    converged("a2", "a").await;
    converged("b1", "b").await;

    // Each parent, and its child, written by its own shard only.
    let writes = driver_writes(&ns);
    let touched_by = |user: &str| -> std::collections::BTreeSet<String> {
        writes
            .iter()
            .filter(|w| w.user == user && w.resource != "events")
            .map(|w| w.name.clone())
            .collect()
    };
    assert_eq!(touched_by(&user_a), ["a1", "a2"].map(String::from).into());
    assert_eq!(touched_by(&user_b), ["b1"].map(String::from).into());
    // Nobody selects the unlabelled Hello: nobody writes it.
    let nobody = hellos.get("nobody").await.expect("the unlabelled Hello");
    assert!(
        nobody.data.get("status").is_none_or(|s| s.is_null())
            && nobody.metadata.finalizers.is_none()
            && deployments
                .get_opt("nobody")
                .await
                .expect("reading")
                .is_none(),
        "a parent no shard selects is left alone: {nobody:?}"
    );

    // a2 moves to shard b: b takes it (its Deployment relabelled by b).
    hellos
        .patch(
            "a2",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {SHARD: "b"}}})),
        )
        .await
        .expect("relabelling a2");
    converged("a2", "b").await;
    let a_writes_before = a2_writes(&ns, &user_a);
    // A change after the move is shard b's alone.
    hellos
        .patch(
            "a2",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .expect("scaling a2");
    wait_for("a2 scaled by shard b", || async {
        let d = deployments.get_opt("a2").await.ok()??;
        (d.spec?.replicas == Some(2)).then_some(())
    })
    .await;
    converged("a2", "b").await;
    assert_eq!(
        a2_writes(&ns, &user_a),
        a_writes_before,
        "the old shard stopped touching a2"
    );
    assert!(a2_writes(&ns, &user_b) > 0, "the new shard wrote a2");
    drop_namespace(&client, &ns).await;
}

/// How many writes `user` made to a2 and its Deployment.
fn a2_writes(ns: &str, user: &str) -> usize {
    driver_writes(ns)
        .iter()
        .filter(|w| w.user == user && w.name == "a2" && w.resource != "events")
        .count()
}
