//! Faults the driver survives, on the real control plane: each test breaks
//! something on purpose and asserts, through the API, that nothing was lost.
//! Durations are printed for the table in docs/robustness.md, never asserted.

use crate::scenarios::{Engine, drift_is_put_back};
use crate::support::*;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;
use std::time::{Duration, Instant};

/// What most fault tests start from: the CRDs, `metahook serve --drive` as
/// the admin, and a namespace of its own.
struct Scene {
    client: Client,
    driver: Metahook,
    ns: String,
}

impl Scene {
    async fn driven(prefix: &str) -> Scene {
        let client = admin().await;
        install_crds(&client).await;
        let driver = start_driver(&kubeconfig()).await;
        let ns = namespace(&client, prefix).await;
        Scene { client, driver, ns }
    }
}

/// No child was created twice or deleted: every Deployment the driver wrote
/// in `ns` was created once (one 201) and never deleted by it, but those in
/// `meant_to_go` (their Hello was deleted).
fn assert_no_child_duplicated_or_deleted(ns: &str, meant_to_go: &[&str]) {
    let mut created = std::collections::BTreeMap::<String, usize>::new();
    for write in driver_writes(ns) {
        if write.resource != "deployments" || meant_to_go.contains(&write.name.as_str()) {
            continue;
        }
        assert_ne!(
            write.verb, "delete",
            "the driver deleted Deployment {}",
            write.name
        );
        if write.code == 201 {
            *created.entry(write.name).or_default() += 1;
        }
    }
    for (name, times) in created {
        assert_eq!(times, 1, "Deployment {name} was created {times} times");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_restart_loses_nothing() {
    let Scene { client, driver, ns } = Scene::driven("e2e-restart").await;
    let hellos = names("restart", 20);
    create_hellos(&client, &ns, &hellos, 1).await;

    // While they are being reconciled, the API server goes away.
    control("/apiserver/stop?grace=5");
    wait_for("the driver to say it is not ready", || async {
        (!readyz(driver.port)).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let back = Instant::now();
    control("/apiserver/start");
    wait_ready("the driver to be ready again", driver.port).await;
    wait_for(
        "every Hello's Deployment and status after the restart",
        || async { all_observed(&client, &ns, &hellos).await.then_some(()) },
    )
    .await;
    let driven = back.elapsed();
    wait_converged(
        "every Hello to converge after the restart",
        &client,
        &ns,
        &hellos,
        1,
    )
    .await;
    say(&format!(
        "API server restart: every Hello had its Deployment and an observed status {:.1} s after the server was back, \
         was ready {:.1} s after (the controller-manager's pace; {} cache relists)",
        driven.as_secs_f64(),
        back.elapsed().as_secs_f64(),
        metric(driver.port, "metahook_driver_cache_relists_total")
    ));
    assert!(
        metric(driver.port, "metahook_driver_cache_relists_total") > 0.0,
        "the caches listed again after their watches broke"
    );
    assert_no_child_duplicated_or_deleted(&ns, &[]);
    delete_all_hellos(&client, &ns).await;
    drop_namespace(&client, &ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_history_gone_relists_and_misses_nothing() {
    let Scene { client, driver, ns } = Scene::driven("e2e-gone").await;
    let first = names("before", 5);
    create_hellos(&client, &ns, &first, 1).await;
    wait_converged("the first Hellos to converge", &client, &ns, &first, 1).await;
    let relists_before = metric(driver.port, "metahook_driver_cache_relists_total");

    // The driver is frozen while the API server restarts and the world
    // changes under it; then etcd forgets the history it would resume from.
    driver.signal("STOP");
    control("/apiserver/stop?grace=5");
    control("/apiserver/start");
    let later = names("after", 5);
    create_hellos(&client, &ns, &later, 1).await;
    let hello_api = hello_api(&client, &ns);
    hello_api
        .patch(
            &first[0],
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .expect("scaling a Hello");
    hello_api
        .delete(&first[1], &DeleteParams::default())
        .await
        .expect("deleting a Hello");
    control("/etcd/compact");
    driver.signal("CONT");

    wait_for("the driver to list again", || async {
        (metric(driver.port, "metahook_driver_cache_relists_total") > relists_before).then_some(())
    })
    .await;
    wait_converged(
        "the Hellos made while it was away to converge",
        &client,
        &ns,
        &later,
        1,
    )
    .await;
    wait_for("the scale made while it was away", || async {
        converged(&client, &ns, &first[0], 2).await.then_some(())
    })
    .await;
    wait_gone(
        "the Hello deleted while it was away to be finalized",
        &hello_api,
        &first[1],
    )
    .await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    wait_gone("its Deployment", &deployments, &first[1]).await;
    assert_no_child_duplicated_or_deleted(&ns, &[first[1].as_str()]);
    delete_all_hellos(&client, &ns).await;
    drop_namespace(&client, &ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_is_replaced_and_never_two_write() {
    let client = admin().await;
    install_crds(&client).await;
    let ns = namespace(&client, "e2e-leader").await;
    // Each replica with an identity of its own, so the audit log tells
    // their writes apart.
    let replica = |name: &str| {
        spawn(
            &kubeconfig_as(&format!("metahook-{name}")),
            &[
                "serve",
                "--drive",
                "--leader-election",
                "--leader-election-namespace",
                &ns,
                "--pod-name",
                name,
            ],
        )
    };
    let leader = replica("a");
    wait_ready("replica a to lead", leader.port).await;
    let standby = replica("b");
    let hellos = names("leader", 10);
    create_hellos(&client, &ns, &hellos, 1).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    wait_for("the leader to be at work", || async {
        (!deployments
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .is_empty())
        .then_some(())
    })
    .await;
    assert!(!readyz(standby.port), "a standby is not ready");

    // SIGKILL: the lease is not released; the standby waits it out.
    leader.signal("KILL");
    let killed = Instant::now();
    wait_ready("replica b to take over", standby.port).await;
    let took_over = killed.elapsed();
    wait_converged("replica b to finish the work", &client, &ns, &hellos, 1).await;
    say(&format!(
        "leader change: the standby led {:.1} s after the leader was killed; all converged {:.1} s after",
        took_over.as_secs_f64(),
        killed.elapsed().as_secs_f64()
    ));

    let writes = driver_writes(&ns);
    let by = |user: &str| -> Vec<&Write> { writes.iter().filter(|w| w.user == user).collect() };
    let (a, b) = (by("metahook-a"), by("metahook-b"));
    assert!(
        !a.is_empty() && !b.is_empty(),
        "both replicas wrote: a {}, b {}",
        a.len(),
        b.len()
    );
    let a_last = a
        .iter()
        .map(|w| w.completed.as_str())
        .max()
        .unwrap_or_default();
    let b_first = b
        .iter()
        .map(|w| w.received.as_str())
        .min()
        .unwrap_or_default();
    assert!(
        a_last < b_first,
        "two writers at once: a wrote until {a_last}, b from {b_first}"
    );
    assert_no_child_duplicated_or_deleted(&ns, &[]);
    // The new leader finalizes too.
    delete_all_hellos(&client, &ns).await;
    drop(standby);
    drop_namespace(&client, &ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflicting_writer_is_undone_without_a_hot_loop() {
    let Scene { client, driver, ns } = Scene::driven("e2e-conflict").await;
    drift_is_put_back(
        &client,
        &ns,
        Engine::Driver {
            port: driver.debug_port(),
        },
    )
    .await;
    drop(driver);
    drop_namespace(&client, &ns).await;
}

/// A hook server that takes every request and never answers (until the
/// listener is dropped): a hook slower than its timeout.
struct SilentHook {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SilentHook {
    fn start(port: u16) -> SilentHook {
        use std::sync::atomic::{AtomicBool, Ordering};
        let listener =
            std::net::TcpListener::bind(("127.0.0.1", port)).expect("binding the silent hook");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            // Bounded by the stop flag: the test sets it before it ends.
            while !stopping.load(Ordering::Acquire) {
                match listener.accept() {
                    Ok((conn, _)) => held.push(conn),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        SilentHook {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for SilentHook {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_down_or_slow_changes_nothing_and_backs_off() {
    let (path, client) = cluster_with_crds().await;
    let ns = namespace(&client, "e2e-hookdown").await;
    let port = free_port();
    // The Hello controller, its hooks at a port of ours, with a short
    // timeout.
    let dir = hello_manifest_at(port, Some("1s"), "metahook-e2e-hookdown");
    let driver = start_drive(&path, &dir).await;
    let silent = SilentHook::start(port);
    let name = names("hookdown", 1);
    create_hellos(&client, &ns, &name, 1).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);

    // Slower than its timeout: a Warning says so, nothing is created.
    wait_for("a Warning that the hook timed out", || async {
        warned(
            &client,
            &ns,
            &name[0],
            "SyncError",
            "did not answer within 1s",
        )
        .await
        .then_some(())
    })
    .await;
    // Down: connection refused.
    drop(silent);
    wait_for("a Warning that the hook cannot be reached", || async {
        warned(&client, &ns, &name[0], "SyncError", "Connection refused")
            .await
            .then_some(())
    })
    .await;
    wait_for("the backoff to grow past a second", || async {
        (metric(
            driver.port,
            "metahook_driver_longest_backoff_seconds{controller=\"hello\"}",
        ) > 1.0)
            .then_some(())
    })
    .await;
    assert!(
        deployments
            .get_opt(&name[0])
            .await
            .expect("listing")
            .is_none(),
        "no child is touched while the hook fails"
    );
    let hello = hello_api(&client, &ns)
        .get(&name[0])
        .await
        .expect("the Hello");
    assert!(
        hello.data.get("status").is_none_or(|s| s.is_null()),
        "no status written: {:?}",
        hello.data.get("status")
    );

    // The hook answers again: the Hello converges and the backoff resets.
    let _hooks = start_on(&path, &["serve"], port).await;
    wait_for("the Hello to converge once the hook answers", || async {
        converged(&client, &ns, &name[0], 1).await.then_some(())
    })
    .await;
    wait_for("the backoff to reset", || async {
        (metric(
            driver.port,
            "metahook_driver_longest_backoff_seconds{controller=\"hello\"}",
        ) == 0.0)
            .then_some(())
    })
    .await;
    drop(driver);
    let _ = std::fs::remove_dir_all(&dir);
    drop_namespace(&client, &ns).await;
}

/// Restarts kube-apiserver with `args` (none: as the control plane starts
/// it) and waits until it is ready again.
fn restart_api_server(args: &[&str]) {
    control("/apiserver/stop");
    let query: Vec<String> = args.iter().map(|a| format!("arg={a}")).collect();
    control(&format!("/apiserver/start?{}", query.join("&")));
}

/// Puts the API server back as it was, even when the test fails.
struct RestoreApiServer;

impl Drop for RestoreApiServer {
    fn drop(&mut self) {
        restart_api_server(&[]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttling_api_server_is_retried_and_nothing_is_lost() {
    let client = admin().await;
    install_crds(&client).await;
    // The driver as a user API Priority and Fairness does not exempt
    // (system:masters is exempt), allowed everything by RBAC, and a
    // priority level of one seat that rejects what does not fit (429).
    let user = "metahook-throttled";
    let apply = PatchParams::apply("metahook-e2e").force();
    let objects = [
        (
            "clusterrolebindings",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": user},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}),
        ),
        (
            "prioritylevelconfigurations",
            json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
                   "metadata": {"name": user},
                   "spec": {"type": "Limited", "limited": {
                       "nominalConcurrencyShares": 1, "lendablePercent": 0, "borrowingLimitPercent": 0,
                       "limitResponse": {"type": "Reject"}}}}),
        ),
        (
            "flowschemas",
            json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
                   "metadata": {"name": user},
                   "spec": {"priorityLevelConfiguration": {"name": user}, "matchingPrecedence": 500,
                            "distinguisherMethod": {"type": "ByUser"},
                            "rules": [{"subjects": [{"kind": "User", "user": {"name": user}}],
                                       "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                                          "clusterScope": true, "namespaces": ["*"]}],
                                       "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}}),
        ),
    ];
    for (plural, object) in &objects {
        let (api, name) = cluster_object(&client, plural, object);
        api.patch(&name, &apply, &Patch::Apply(object))
            .await
            .unwrap_or_else(|e| panic!("creating {plural}/{name}: {e}"));
    }
    // Few seats in all, so that one share of them is one seat.
    let _restore = RestoreApiServer;
    restart_api_server(&[
        "--max-requests-inflight=20",
        "--max-mutating-requests-inflight=10",
    ]);

    let text = control(&format!("/kubeconfig?user={user}"));
    let path = std::env::temp_dir().join(format!(
        "metahook-e2e-{user}-{}.kubeconfig",
        std::process::id()
    ));
    std::fs::write(&path, text).expect("writing a kubeconfig");
    let driver = start_driver(&path).await;
    let ns = namespace(&client, "e2e-throttled").await;
    let hellos = names("throttled", 20);
    create_hellos(&client, &ns, &hellos, 1).await;
    wait_converged(
        "every Hello to converge while throttled",
        &client,
        &ns,
        &hellos,
        1,
    )
    .await;
    let throttled = metric(
        driver.port,
        "metahook_driver_api_responses_total{code=\"429\"}",
    );
    say(&format!(
        "throttling API server: every Hello converged; {throttled} answers were 429 and were retried"
    ));
    assert!(throttled > 0.0, "the API server throttled the driver (429)");
    assert_no_child_duplicated_or_deleted(&ns, &[]);

    delete_all_hellos(&client, &ns).await;
    drop(driver);
    drop_namespace(&client, &ns).await;
    for (plural, object) in &objects {
        let (api, name) = cluster_object(&client, plural, object);
        let _ = api.delete(&name, &DeleteParams::default()).await;
    }
}

/// The API of a cluster-scoped `object` (its apiVersion and kind, served
/// as `plural`), and its name.
fn cluster_object(
    client: &Client,
    plural: &str,
    object: &serde_json::Value,
) -> (Api<DynamicObject>, String) {
    let (group, version) = object["apiVersion"]
        .as_str()
        .and_then(|v| v.split_once('/'))
        .expect("a grouped apiVersion");
    let kind = object["kind"].as_str().expect("a kind");
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let api = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    );
    let name = object["metadata"]["name"].as_str().expect("a name");
    (api, name.to_owned())
}
