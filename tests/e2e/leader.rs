//! Leader election itself, in process: several replicas that see one Lease
//! released at the same moment — as every waiting replica does, since they
//! all watch it — must elect exactly one leader, and each leader must hold
//! the Lease under a field manager of its own. All of them applying it as
//! one manager let two "take" it at once (two leaders of one shard, seen on
//! the real node).

use crate::support::*;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use metahook_driver::leader::{LeaderSettings, Leadership, acquire};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const ROUNDS: usize = 3;
/// Each round's winner leaves the race: the last round still has three.
const REPLICAS: usize = ROUNDS + 2;
/// How long a round watches for a second leader after the first. Losing
/// the race is decided by the API server's answer to an apply, within
/// milliseconds; a longer look only makes a miss less likely.
const LOOK: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_racing_for_a_released_lease_elect_one_leader() {
    let client = admin().await;
    let ns = namespace(&client, "e2e-lease").await;
    let lease_name = "metahook-e2e-race";
    let settings = |identity: String| LeaderSettings {
        lease_name: lease_name.to_string(),
        namespace: ns.clone(),
        identity,
        lease_seconds: 15,
        grace_seconds: 5,
    };
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
            if let Ok(Some(leadership)) = acquire(client, &settings, &stop).await {
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
    let mut owners = Vec::new();
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
        // The race above is won or lost in milliseconds and may not happen
        // in a given round. What keeps it safe always: the holder field is
        // owned by a field manager of the holder's own, so a replica that
        // read the Lease free a moment too late gets a conflict instead of
        // overwriting it. One manager for all would own it round after
        // round.
        let owner = holder_field_owner(&lease);
        assert!(
            !owners.contains(&owner),
            "round {round}: {next} holds the Lease as field manager {owner:?}, \
             which an earlier leader used too ({owners:?})"
        );
        owners.push(owner);
        leadership = next_leadership;
    }
    leadership.release().await;
    stop.cancel();
    for task in tasks.drain(..) {
        let _ = task.await;
    }
    drop_namespace(&client, &ns).await;
}

/// The field manager that owns `spec.holderIdentity`.
fn holder_field_owner(lease: &Lease) -> String {
    let owners: Vec<String> = lease
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| {
            entry
                .fields_v1
                .as_ref()
                .and_then(|fields| fields.0.pointer("/f:spec/f:holderIdentity"))
                .is_some()
        })
        .filter_map(|entry| entry.manager.clone())
        .collect();
    assert_eq!(owners.len(), 1, "holderIdentity's owners: {owners:?}");
    owners.into_iter().next().unwrap_or_default()
}
