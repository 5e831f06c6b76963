//! Leader election, on the real API server.
//!
//! - In process: replicas that see one Lease released at the same moment
//!   — as every waiting replica does, since they all watch it — elect
//!   exactly one leader, round after round.
//! - As processes (`metahook serve --drive` replicas, each behind a proxy
//!   of its own that can slow or cut its link to the API server): through
//!   rounds of release, a cut link (renewals fail), a slow link, the API
//!   server stopped, and a leader killed, while a Hello changes every
//!   quarter second, no replica's write lands outside its own term. The
//!   judge is the API server's audit log (`leader_terms.rs`), not what the
//!   replicas say of themselves.

use crate::fault_proxy::{FaultProxy, Link};
use crate::leader_terms;
use crate::support::*;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use metahook_driver::start::leader::fence::Fence;
use metahook_driver::start::leader::{LeaderSettings, Leadership, acquire};
use serde_json::json;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const ROUNDS: usize = 3;
/// Each round's winner leaves the race: the last round still has three.
const REPLICAS: usize = ROUNDS + 2;
/// How long a round watches for a second leader after the first. Losing
/// the race is decided by the API server's answer to one update, within
/// milliseconds; a longer look only makes a miss less likely.
const LOOK: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_racing_for_a_released_lease_elect_one_leader() {
    let client = admin().await;
    let ns = namespace(&client, "e2e-lease").await;
    let lease_name = "metahook-e2e-race";
    let settings =
        |identity: String| LeaderSettings::new(lease_name.to_string(), ns.clone(), identity);
    let stop = CancellationToken::new();
    let (won, mut wins) = mpsc::unbounded_channel::<(String, Leadership)>();
    let contender = |identity: String| {
        let (client, settings, stop, won) = (
            client.clone(),
            settings(identity.clone()),
            stop.clone(),
            won.clone(),
        );
        tokio::spawn(async move {
            let fence = Fence::closed();
            if let Ok(Some(leadership)) = acquire(client, &settings, &fence, &stop).await {
                assert!(fence.permits(), "{identity} leads behind a shut fence");
                let _ = won.send((identity, leadership));
            }
        })
    };
    // The first leader, alone: the others start while it holds the Lease,
    // and wait.
    contender("first".to_string());
    let (_, mut leadership) = wins.recv().await.expect("a first leader");
    let mut tasks: Vec<_> = (0..REPLICAS)
        .map(|i| contender(format!("replica-{i}")))
        .collect();
    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
    for round in 0..ROUNDS {
        // Every waiting replica sees the release through its watch and
        // tries at once.
        leadership.release().await;
        let (next, next_leadership) = tokio::time::timeout(DEADLINE, wins.recv())
            .await
            .unwrap_or_else(|_| panic!("round {round}: no new leader after the release"))
            .expect("the contenders' channel");
        tokio::time::sleep(LOOK).await;
        let others: Vec<String> = std::iter::from_fn(|| wins.try_recv().ok())
            .map(|(identity, _)| identity)
            .collect();
        assert!(
            others.is_empty(),
            "round {round}: {next} leads, and so do {others:?}"
        );
        let lease = leases.get(lease_name).await.expect("the Lease");
        let holder = lease.spec.as_ref().and_then(|s| s.holder_identity.clone());
        assert_eq!(holder.as_deref(), Some(next.as_str()), "round {round}");
        leadership = next_leadership;
    }
    leadership.release().await;
    stop.cancel();
    for task in tasks.drain(..) {
        let _ = task.await;
    }
    drop_namespace(&client, &ns).await;
}

/// The namespace whose writes the audit log records with their objects
/// (`tests/cluster/components.go`).
const TERMS_NS: &str = "e2e-leader-terms";
/// Replicas running at any time.
const SLOTS: usize = 3;
const HELLOS: usize = 4;
/// Short terms, for a shorter test; the margin between the renew deadline
/// and the term (4 s) is what a late write may take.
const TIMINGS: [&str; 6] = [
    "--leader-election-lease-duration",
    "10s",
    "--leader-election-renew-deadline",
    "6s",
    "--leader-election-retry-period",
    "1s",
];
/// Within the margin: a write sent at the deadline still lands in time.
const SLOW: Duration = Duration::from_secs(2);
/// Longer than a term: long enough for a standby to take over.
const OUTAGE: Duration = Duration::from_secs(13);

#[derive(Debug, Clone, Copy)]
enum Fault {
    /// SIGTERM: the leader releases the Lease on its way out.
    Release,
    /// The leader's link cut: its renewals fail, its writes cannot land.
    Cut,
    /// The leader's link slowed: its renewals land late, then too late.
    Slow,
    /// kube-apiserver stopped: nobody renews, then everybody tries.
    ApiServerDown,
    /// SIGKILL: no release; a standby waits out the term.
    Kill,
}

/// One replica's place: its proxy, and the process in it now (a new
/// identity each time it is started, as a new pod would have).
struct Slot {
    proxy: FaultProxy,
    replica: Option<(String, Metahook)>,
}

struct Replicas {
    run: String,
    lease: String,
    upstream: std::net::SocketAddr,
    slots: Vec<Slot>,
    started: usize,
    identities: BTreeSet<String>,
}

impl Replicas {
    async fn new(run: String) -> Replicas {
        let admin_config = std::fs::read_to_string(kubeconfig()).expect("the admin kubeconfig");
        let upstream = crate::fault_proxy::api_server(&admin_config);
        let mut slots = Vec::new();
        for _ in 0..SLOTS {
            slots.push(Slot {
                proxy: FaultProxy::start(upstream).await,
                replica: None,
            });
        }
        Replicas {
            lease: format!("{run}-lease"),
            run,
            upstream,
            slots,
            started: 0,
            identities: BTreeSet::new(),
        }
    }

    /// Starts a replica in every slot whose process has exited (or never
    /// started), as a kubelet would.
    fn fill(&mut self) {
        for i in 0..self.slots.len() {
            let exited = match &mut self.slots[i].replica {
                None => true,
                Some((_, process)) => matches!(process.child.try_wait(), Ok(Some(_))),
            };
            if exited {
                self.started += 1;
                let identity = format!("{}-r{}", self.run, self.started);
                let config = self.kubeconfig_for(&identity, i);
                let args = self.args(&identity);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let process = spawn(&config, &args);
                self.identities.insert(identity.clone());
                self.slots[i].replica = Some((identity, process));
            }
        }
    }

    fn args(&self, identity: &str) -> Vec<String> {
        let mut args: Vec<String> = [
            "serve",
            "--drive",
            "--leader-election",
            "--leader-election-namespace",
            TERMS_NS,
            "--leader-election-lease",
            &self.lease,
            "--pod-name",
            identity,
            "--shard-selector",
            &format!("{}=yes", self.run),
        ]
        .map(str::to_owned)
        .into();
        args.extend(TIMINGS.map(str::to_owned));
        args
    }

    /// A kubeconfig of the user `identity` (so the audit log names it),
    /// through slot `slot`'s proxy.
    fn kubeconfig_for(&self, identity: &str, slot: usize) -> PathBuf {
        let text = std::fs::read_to_string(kubeconfig_as(identity)).expect("a kubeconfig");
        assert_eq!(crate::fault_proxy::api_server(&text), self.upstream);
        let path = std::env::temp_dir().join(format!("metahook-e2e-{identity}-proxied.kubeconfig"));
        std::fs::write(
            &path,
            crate::fault_proxy::through(&text, self.slots[slot].proxy.addr),
        )
        .expect("writing a kubeconfig");
        path
    }

    fn slot_of(&self, identity: &str) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| s.replica.as_ref().is_some_and(|(name, _)| name == identity))
    }

    /// The holder of the Lease, once it is a replica here that is ready
    /// (leading, its caches synced).
    async fn leader(&self, client: &Client) -> (String, usize) {
        let leases: Api<Lease> = Api::namespaced(client.clone(), TERMS_NS);
        wait_for("a ready leader", || async {
            let holder = leases.get(&self.lease).await.ok()?.spec?.holder_identity?;
            let slot = self.slot_of(&holder)?;
            let (_, process) = self.slots[slot].replica.as_ref()?;
            readyz(process.port).then_some((holder, slot))
        })
        .await
    }
}

/// Patches one Hello after another every 250 ms until `stop`: the leader
/// always has something to write. Errors (the API server stopped) are
/// skipped.
fn churn(
    client: Client,
    hellos: Vec<String>,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<usize> {
    tokio::spawn(async move {
        let api = hello_api(&client, TERMS_NS);
        let mut n = 0usize;
        while !stop.is_cancelled() {
            let name = &hellos[n % hellos.len()];
            let replicas = 1 + (n / hellos.len()) % 3;
            let patch = json!({"spec": {"replicas": replicas}});
            let _ = api
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await;
            n += 1;
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        n
    })
}

/// A fresh `TERMS_NS` (an earlier run's is deleted first).
async fn fresh_terms_namespace(client: &Client) {
    let api: Api<Namespace> = Api::all(client.clone());
    if api.get_opt(TERMS_NS).await.ok().flatten().is_some() {
        let _ = api.delete(TERMS_NS, &DeleteParams::default()).await;
        wait_gone("the last run's namespace", &api, TERMS_NS).await;
    }
    api.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": TERMS_NS}})).expect("a namespace"),
    )
    .await
    .expect("creating the namespace");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_through_faults_never_write_in_anothers_term() {
    let client = admin().await;
    install_crds(&client).await;
    fresh_terms_namespace(&client).await;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis()
        % 1_000_000;
    let run = format!("lt{}-{nanos}", std::process::id());
    let mut replicas = Replicas::new(run.clone()).await;
    replicas.fill();
    // The Hellos of this run only (the shard selector), in the namespace
    // the audit log records in full.
    let hellos = names(&run, HELLOS);
    let api = hello_api(&client, TERMS_NS);
    for name in &hellos {
        create_hello(&api, "fraim.co.jp/v1", name, &[(run.as_str(), "yes")], 1).await;
    }
    let stop_churn = CancellationToken::new();
    let churning = churn(client.clone(), hellos.clone(), stop_churn.clone());
    let faults = [
        Fault::Release,
        Fault::Cut,
        Fault::Slow,
        Fault::ApiServerDown,
        Fault::Kill,
    ];
    let mut leaders = Vec::new();
    for (round, fault) in faults.iter().chain(faults.iter()).enumerate() {
        let (old, slot) = replicas.leader(&client).await;
        leaders.push(old.clone());
        say(&format!("leader terms: round {round}, {fault:?} on {old}"));
        let proxy = &replicas.slots[slot].proxy;
        let process = || {
            &replicas.slots[slot]
                .replica
                .as_ref()
                .expect("the leader's process")
                .1
        };
        match fault {
            Fault::Release => process().signal("TERM"),
            Fault::Kill => process().signal("KILL"),
            Fault::Cut => proxy.set(Link::Cut),
            Fault::Slow => proxy.set(Link::Slow(SLOW)),
            Fault::ApiServerDown => {
                control("/apiserver/stop?grace=0");
                tokio::time::sleep(OUTAGE).await;
                control("/apiserver/start");
            }
        }
        // After the API server's outage, whoever renews first leads on —
        // the old leader too, if it never stopped writing; otherwise a
        // standby takes over.
        if !matches!(fault, Fault::ApiServerDown) {
            let leases: Api<Lease> = Api::namespaced(client.clone(), TERMS_NS);
            wait_for(
                &format!("round {round}: a leader other than {old}"),
                || async {
                    let holder = leases
                        .get(&replicas.lease)
                        .await
                        .ok()?
                        .spec?
                        .holder_identity?;
                    (holder != old).then_some(())
                },
            )
            .await;
        }
        if matches!(fault, Fault::Cut | Fault::Slow) {
            // Healed while the new leader leads: whatever the old one
            // still believes, it can reach the API server again.
            tokio::time::sleep(Duration::from_secs(2)).await;
            replicas.slots[slot].proxy.set(Link::Up);
        }
        // Time for anything the old leader would still write to land.
        tokio::time::sleep(Duration::from_secs(4)).await;
        replicas.fill();
    }
    stop_churn.cancel();
    let changes = churning.await.expect("the churn task");
    // The Hellos go while a leader still runs to finalize them.
    let _ = replicas.leader(&client).await;
    delete_all_hellos(&client, TERMS_NS).await;
    for slot in &mut replicas.slots {
        slot.replica = None;
    }
    let report = leader_terms::check(&audit(), TERMS_NS, &replicas.lease, &replicas.identities);
    say(&format!(
        "leader terms: {changes} Hello changes, {} terms ({}), commits by writer {:?}, writes that changed nothing by writer {:?}",
        report.terms.len(),
        report
            .terms
            .iter()
            .map(|t| format!("{}@{}", t.holder.as_deref().unwrap_or("-"), t.from_revision))
            .collect::<Vec<_>>()
            .join(" "),
        report.committed,
        report.unplaced,
    ));
    assert!(
        report.violations.is_empty(),
        "writes outside their writer's term:\n{}",
        report.violations.join("\n")
    );
    // Not vacuous: the leaders of the rounds wrote.
    let writers: BTreeSet<&String> = report.committed.keys().collect();
    assert!(
        writers.len() >= faults.len(),
        "only {} replicas committed writes ({writers:?}); leaders were {leaders:?}",
        writers.len()
    );
}
