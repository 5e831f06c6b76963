//! What the driver spends on a cluster it has already converged: a new
//! healthy Hello is worth no Warning, and a restarted driver (a new process
//! with empty caches and no memory of its applies, as a new leader after a
//! failover is) lists and watches, reconciles every Hello, and writes
//! nothing. The audit log says so: the restarted driver authenticates as a
//! user of its own. The same for a real leader change: a standby replica
//! that takes the Lease when the leader is killed writes nothing but the
//! Lease. A warm standby (the default) lists and watches before it leads,
//! and applies a change made while none led without listing again.

use crate::support::*;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::events::v1::Event;
use kube::api::Api;
use std::collections::{BTreeMap, BTreeSet};

const HELLOS: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_driver_writes_nothing_on_a_converged_cluster() {
    let client = admin().await;
    install_crds(&client).await;
    let ns = namespace(&client, "e2e-restart").await;
    let first = start_driver(&kubeconfig()).await;
    let hellos = names("hello", HELLOS);
    create_hellos(&client, &ns, &hellos, 1).await;
    // Converged and ready: each status observed its generation, its
    // Deployment's replica is ready.
    wait_converged("every Hello ready", &client, &ns, &hellos, 1).await;
    // The expected path of a new object is worth no Warning (it used to
    // be a "Ready is False" Warning on every new Hello).
    let events: Api<Event> = Api::namespaced(client.clone(), &ns);
    let warnings: Vec<String> = events
        .list(&Default::default())
        .await
        .expect("listing Events")
        .items
        .into_iter()
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .map(|e| format!("{:?}: {:?}", e.reason, e.note))
        .collect();
    assert!(
        warnings.is_empty(),
        "Warnings about healthy Hellos: {warnings:?}"
    );
    drop(first);

    // The restart: a new process, its own user in the audit log.
    let user = "metahook-restarted";
    let restarted = start_driver(&kubeconfig_as(user)).await;
    every_hello_unchanged(&restarted, &ns, "the restarted driver").await;
    let by_verb = requests_by(user);
    // In this test's namespace or cluster-wide: the restarted driver
    // drives the whole cluster, and an earlier test's namespace may still
    // be going (seen: a Hikawa of the previous test, mid-song, written to
    // while the namespace controller emptied its namespace).
    let ours: Vec<String> = audit()
        .iter()
        .filter(|e| e["user"]["username"] == user && !e["objectRef"].is_null())
        .filter(|e| {
            let namespace = &e["objectRef"]["namespace"];
            namespace.is_null() || namespace == ns.as_str()
        })
        .filter(|e| !matches!(e["verb"].as_str(), Some("list" | "watch")))
        .map(|e| format!("{} {}", e["verb"], e["requestURI"]))
        .collect();
    // Lists and watches only: no write, and no GET of any object either.
    assert!(
        ours.is_empty(),
        "the restarted driver wrote or read beyond lists and watches: {ours:?} (all its requests: {by_verb:?})"
    );
    eprintln!("requests of a restarted driver on a converged cluster, by verb: {by_verb:?}");
    drop(restarted);
    drop_namespace(&client, &ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_taking_over_a_converged_cluster_writes_only_the_lease() {
    let client = admin().await;
    install_crds(&client).await;
    let ns = namespace(&client, "e2e-failover").await;
    let lease = "metahook-e2e-failover";
    let leader = replica("metahook-leader", "leader", lease);
    wait_ready("the first replica to lead", leader.port).await;
    let standby_user = "metahook-standby";
    let standby = replica(standby_user, "standby", lease);
    let hellos = names("hello", HELLOS);
    create_hellos(&client, &ns, &hellos, 1).await;
    wait_converged("every Hello ready", &client, &ns, &hellos, 1).await;
    assert!(!readyz(standby.port), "the standby waits for the Lease");
    // Killed, not stopped: no release of the Lease; the standby takes it
    // once it expires.
    leader.signal("KILL");
    drop(leader);
    every_hello_unchanged(&standby, &ns, "the standby, leading").await;
    // In this test's namespace: the standby drives the whole cluster, and
    // an earlier test's namespace may still be going (its Hellos
    // finalized by whoever leads).
    let writes: Vec<String> = audit()
        .iter()
        .filter(|e| e["user"]["username"] == standby_user)
        .filter(|e| e["objectRef"]["namespace"] == ns.as_str())
        .filter(|e| !matches!(e["verb"].as_str(), Some("get" | "list" | "watch")))
        .filter(|e| e["objectRef"]["resource"] != "leases")
        .map(|e| format!("{} {}", e["verb"], e["requestURI"]))
        .collect();
    assert!(writes.is_empty(), "the new leader wrote: {writes:?}");
    eprintln!(
        "requests of a new leader on a converged cluster, by verb: {:?}",
        requests_by(standby_user)
    );
    drop(standby);
    drop_namespace(&client, &ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_leader_hands_its_lease_to_the_standby_within_its_term() {
    let client = admin().await;
    // A replica leads once its caches sync, which needs its types.
    install_crds(&client).await;
    let replica = |pod: &str| {
        spawn(
            &kubeconfig(),
            &[
                "serve",
                "--drive",
                "--leader-election",
                "--leader-election-namespace",
                "default",
                "--leader-election-lease",
                "metahook-e2e-handover",
                "--pod-name",
                pod,
                // Long enough that the standby leads well before it ends.
                "--shutdown-delay-seconds",
                "15",
            ],
        )
    };
    let mut leader = replica("first");
    wait_ready("the first replica to lead", leader.port).await;
    let standby = replica("second");
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let lease = |name| {
        let leases = leases.clone();
        async move {
            leases
                .get(name)
                .await
                .expect("the Lease")
                .spec
                .unwrap_or_default()
        }
    };
    // Its term as last renewed: without the release, the standby would
    // wait until it ends.
    let held = lease("metahook-e2e-handover").await;
    let term_end = held.renew_time.expect("renewed").0
        + jiff::SignedDuration::from_secs(held.lease_duration_seconds.expect("a duration").into());
    assert_eq!(held.holder_identity.as_deref(), Some("first"));
    // SIGTERM: the leader stops its work and releases the Lease at once,
    // not after its shutdown delay.
    leader.signal("TERM");
    wait_ready("the standby to lead", standby.port).await;
    let taken = lease("metahook-e2e-handover").await;
    assert_eq!(taken.holder_identity.as_deref(), Some("second"));
    let acquired = taken.acquire_time.expect("acquired").0;
    assert!(
        acquired < term_end,
        "the standby took the Lease at {acquired}, after the released term ended ({term_end})"
    );
    // Meanwhile the old leader still serves, not ready, until its delay
    // ends; then it drains and exits cleanly.
    let host = format!("127.0.0.1:{}", leader.port);
    assert!(
        leader.child.try_wait().expect("its state").is_none(),
        "the old leader exited before its shutdown delay ended"
    );
    assert_eq!(http("GET", &host, "/healthz").map(|r| r.0), Some(200));
    assert_eq!(http("GET", &host, "/readyz").map(|r| r.0), Some(503));
    let started = std::time::Instant::now();
    let exited = loop {
        if let Some(status) = leader.child.try_wait().expect("its state") {
            break status;
        }
        assert!(started.elapsed() < DEADLINE, "the old leader never exited");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert!(exited.success(), "the old leader exited with {exited}");
    drop(standby);
    drop(leader);
}

/// A warm standby (the default) lists and watches before it leads: when
/// the leader is killed and a Hello scaled while none leads, the standby
/// takes the Lease and applies the change with caches it had already
/// filled. The audit log shows its lists came before its Lease, and none
/// after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_standby_lists_before_it_leads_and_applies_a_change_made_while_none_led() {
    let client = admin().await;
    install_crds(&client).await;
    let ns = namespace(&client, "e2e-warm").await;
    let lease = "metahook-e2e-warm";
    let leader = replica("metahook-leader", "warm-leader", lease);
    wait_ready("the first replica to lead", leader.port).await;
    let hellos = names("hello", HELLOS);
    create_hellos(&client, &ns, &hellos, 1).await;
    wait_converged("every Hello ready", &client, &ns, &hellos, 1).await;
    let standby_user = "metahook-warm-standby";
    let standby = replica(standby_user, "warm-standby", lease);
    // Standing by with its caches synced: not leading, not ready.
    let host = format!("127.0.0.1:{}", standby.port);
    wait_for("the standby's caches to sync", || async {
        let (_, text) = http("GET", &host, "/metrics")?;
        let synced: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("metahook_driver_cache_synced{"))
            .collect();
        (synced.len() >= 2 && synced.iter().all(|l| l.ends_with(" 1"))).then_some(())
    })
    .await;
    let (_, text) = http("GET", &host, "/metrics").expect("the standby's /metrics");
    assert!(
        text.lines().any(|l| l == "metahook_driver_leader 0"),
        "the standby leads already:\n{text}"
    );
    assert!(!readyz(standby.port), "the standby waits for the Lease");

    leader.signal("KILL");
    drop(leader);
    let changed = hellos[1].clone();
    hello_api(&client, &ns)
        .patch(
            &changed,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"replicas": 2}})),
        )
        .await
        .expect("scaling a Hello");
    wait_converged(
        "the standby to apply the change",
        &client,
        &ns,
        std::slice::from_ref(&changed),
        2,
    )
    .await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let held = leases
        .get(lease)
        .await
        .expect("the Lease")
        .spec
        .unwrap_or_default();
    assert_eq!(held.holder_identity.as_deref(), Some("warm-standby"));
    // Both written from this machine's clock: the Lease by the replica,
    // the audit log by the API server.
    let acquired = held
        .acquire_time
        .expect("acquired")
        .0
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    // A listing: a list, or a watch that streams the objects first
    // (`sendInitialEvents`, what the driver asks for where served).
    let lists: Vec<(String, String)> = audit()
        .iter()
        // Any stage: a watch still open has none complete.
        .filter(|e| e["user"]["username"] == standby_user)
        .filter(|e| {
            e["verb"] == "list"
                || (e["verb"] == "watch"
                    && e["requestURI"]
                        .as_str()
                        .is_some_and(|uri| uri.contains("sendInitialEvents=true")))
        })
        .filter(|e| {
            matches!(
                e["objectRef"]["resource"].as_str(),
                Some("helloes" | "deployments")
            )
        })
        .map(|e| {
            let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
            (
                text(&e["objectRef"]["resource"]),
                text(&e["requestReceivedTimestamp"]),
            )
        })
        .collect();
    let listed: BTreeSet<&str> = lists.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        listed.into_iter().collect::<Vec<_>>(),
        ["deployments", "helloes"],
        "the standby listed {lists:?}"
    );
    let late: Vec<_> = lists.iter().filter(|(_, at)| *at >= acquired).collect();
    assert!(
        late.is_empty(),
        "the standby listed after it took the Lease at {acquired}: {late:?}"
    );
    drop(standby);
    drop_namespace(&client, &ns).await;
}

/// `metahook serve --drive` as `user`, a replica named `pod` contending
/// for `lease`, its `/debug/driver` served.
fn replica(user: &str, pod: &str, lease: &str) -> Metahook {
    let debug_port = free_port();
    let debug = format!("127.0.0.1:{debug_port}");
    let args = [
        "serve",
        "--drive",
        "--debug-driver-listen",
        &debug,
        "--leader-election",
        "--leader-election-namespace",
        "default",
        "--leader-election-lease",
        lease,
        "--pod-name",
        pod,
    ];
    let mut replica = spawn(&kubeconfig_as(user), &args);
    replica.debug_port = Some(debug_port);
    replica
}

/// Waits until `driver` has reconciled every Hello in `ns`, and checks
/// that none needed anything (their records, from `/debug/driver`).
async fn every_hello_unchanged(driver: &Metahook, ns: &str, who: &str) {
    let records_path = format!("/debug/driver/reconciles?namespace={ns}");
    let records = wait_for(&format!("{who} to reconcile every Hello"), || async {
        let records = debug_json(driver.debug_port(), &records_path);
        let records = records.as_array()?.clone();
        (records.len() == HELLOS).then_some(records)
    })
    .await;
    for r in &records {
        assert_eq!(
            r["outcome"], "Unchanged",
            "a converged Hello needs nothing from {who}: {r}"
        );
    }
}

/// The resource requests of `user` in the audit log, counted by verb
/// (discovery's non-resource GETs aside).
fn requests_by(user: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for e in audit() {
        if e["user"]["username"] != user || e["objectRef"].is_null() {
            continue;
        }
        let verb = e["verb"].as_str().unwrap_or_default().to_owned();
        *counts.entry(verb).or_insert(0) += 1;
    }
    counts
}
