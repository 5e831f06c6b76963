//! What the driver spends on a cluster it has already converged: a new
//! healthy Hello is worth no Warning, and a restarted driver (a new process
//! with empty caches and no memory of its applies, as a new leader after a
//! failover is) lists and watches, reconciles every Hello, and writes
//! nothing. The audit log says so: the restarted driver authenticates as a
//! user of its own. The same for a real leader change: a standby replica
//! that takes the Lease when the leader is killed writes nothing but the
//! Lease.

use crate::support::*;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::events::v1::Event;
use kube::api::Api;
use std::collections::BTreeMap;

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
    let replica = |user: &str, pod: &str| {
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
            "metahook-e2e-failover",
            "--pod-name",
            pod,
        ];
        let mut replica = spawn(&kubeconfig_as(user), &args);
        replica.debug_port = Some(debug_port);
        replica
    };
    let leader = replica("metahook-leader", "leader");
    wait_ready("the first replica to lead", leader.port).await;
    let standby_user = "metahook-standby";
    let standby = replica(standby_user, "standby");
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
