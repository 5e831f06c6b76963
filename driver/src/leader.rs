//! Leader election on a `coordination.k8s.io/v1` Lease, with the
//! `kube-lease-manager` crate (maintained, kube 5 / k8s-openapi 0.29, small:
//! tokio, rand, tracing). kube-rs itself has no leader election, and
//! `kube-leader-election` still targets kube 4. Active/passive, like
//! Metacontroller's `--leader-election`: one replica drives, the others wait.
//!
//! A waiting replica also watches the Lease: kube-lease-manager sleeps
//! until the holder's term would expire, so a Lease its leader released on
//! the way out (a rollout, a deleted pod) would stay free that long and go
//! to whoever wakes first — often the replacement pod rather than the
//! standby. Seeing it released, the standby starts over at once.

use futures::{Stream, StreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder, LeaseManagerError};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long giving the Lease up may hold a stopping replica: with the API
/// server unreachable the release cannot land, and the Lease expires at
/// the end of its term anyway.
const RELEASE_WITHIN: Duration = Duration::from_secs(10);

type ManagerTask = JoinHandle<Result<LeaseManager, LeaseManagerError>>;

#[derive(Debug, Clone)]
pub struct LeaderSettings {
    pub lease_name: String,
    pub namespace: String,
    /// This replica's name in the Lease (the pod name).
    pub identity: String,
    pub lease_seconds: u64,
    pub grace_seconds: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("setting up the Lease {namespace}/{name} failed")]
    Setup {
        namespace: String,
        name: String,
        #[source]
        source: LeaseManagerError,
    },
    #[error("the lease manager stopped")]
    Stopped,
}

/// A held lease; dropping [`Leadership::lost`]'s receiver releases it.
pub struct Leadership {
    state: watch::Receiver<bool>,
    task: ManagerTask,
}

/// Waits until this replica holds the lease, or `stop` is cancelled
/// (`Ok(None)`).
pub async fn acquire(
    client: Client,
    settings: &LeaderSettings,
    stop: &CancellationToken,
) -> Result<Option<Leadership>, LeaderError> {
    let mut released = std::pin::pin!(released(client.clone(), settings));
    loop {
        // A fresh manager reads the Lease anew: one that has slept through
        // a release would still think it held.
        let (mut state, task) = manager(client.clone(), settings).await?.watch().await;
        tracing::info!(lease = %settings.lease_name, identity = %settings.identity, "waiting for the lease");
        loop {
            if *state.borrow_and_update() {
                tracing::info!(lease = %settings.lease_name, "lease acquired");
                return Ok(Some(Leadership { state, task }));
            }
            tokio::select! {
                // A lease won and its release seen at once: the win counts.
                biased;
                _ = stop.cancelled() => {
                    drop(state);
                    let _ = ended(task).await;
                    return Ok(None);
                }
                changed = state.changed() => {
                    if changed.is_err() {
                        return Err(LeaderError::Stopped);
                    }
                }
                Some(()) = released.next() => {
                    tracing::info!(lease = %settings.lease_name, "the lease was released; trying for it now");
                    // Not the holder: dropping the receiver releases nothing.
                    drop(state);
                    let _ = ended(task).await;
                    break;
                }
            }
        }
    }
}

fn manager(
    client: Client,
    settings: &LeaderSettings,
) -> impl Future<Output = Result<LeaseManager, LeaderError>> {
    let build = LeaseManagerBuilder::new(client, settings.lease_name.clone())
        .with_namespace(settings.namespace.clone())
        .with_identity(settings.identity.clone())
        .with_duration(settings.lease_seconds)
        .with_grace(settings.grace_seconds)
        // One field manager per replica, as kube-lease-manager requires: the
        // Lease is taken by server-side apply, and two replicas applying as
        // the same manager never conflict — both "took" a released Lease
        // at once (seen on the real node: two leaders of one shard).
        .with_field_manager(format!("metahook-{}", settings.identity))
        .build();
    let (namespace, name) = (settings.namespace.clone(), settings.lease_name.clone());
    async move {
        build.await.map_err(|source| LeaderError::Setup {
            namespace,
            name,
            source,
        })
    }
}

/// One item each time the Lease is seen with no holder (released, or not
/// taken yet), from a watch of that one Lease. Watch failures are retried
/// with kube's default backoff; the wait for the term's end still works
/// without it.
fn released(client: Client, settings: &LeaderSettings) -> impl Stream<Item = ()> + use<> {
    let api: Api<Lease> = Api::namespaced(client, &settings.namespace);
    let config =
        watcher::Config::default().fields(&format!("metadata.name={}", settings.lease_name));
    watcher(api, config)
        .default_backoff()
        .applied_objects()
        .filter_map(|lease| async move {
            let holder = lease.ok()?.spec?.holder_identity;
            holder.is_none_or(|h| h.is_empty()).then_some(())
        })
}

impl Leadership {
    /// Resolves when the lease is lost (or its manager stopped).
    pub async fn lost(&mut self) {
        loop {
            if !*self.state.borrow_and_update() {
                return;
            }
            if self.state.changed().await.is_err() {
                return;
            }
        }
    }

    /// Gives the lease up so a standby takes over at once.
    pub async fn release(self) {
        drop(self.state);
        match ended(self.task).await {
            Some(Ok(Ok(_))) => tracing::info!("lease released"),
            Some(Ok(Err(err))) => tracing::warn!(error = %err, "releasing the lease failed"),
            Some(Err(err)) => tracing::warn!(error = %err, "the lease task failed"),
            None => tracing::warn!(
                within = ?RELEASE_WITHIN,
                "the lease was not released in time (is the API server reachable?); it expires at the end of its term"
            ),
        }
    }
}

/// The manager's task once its receivers are dropped (it releases the
/// Lease if held, then ends), or `None`, the task aborted, if that takes
/// longer than [`RELEASE_WITHIN`].
async fn ended(
    mut task: ManagerTask,
) -> Option<Result<Result<LeaseManager, LeaseManagerError>, tokio::task::JoinError>> {
    match tokio::time::timeout(RELEASE_WITHIN, &mut task).await {
        Ok(result) => Some(result),
        Err(_) => {
            task.abort();
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The manager's release hangs as on an API server that takes the
    /// connection and never answers: the stopping replica goes on anyway.
    #[tokio::test(start_paused = true)]
    async fn a_release_the_api_server_never_answers_does_not_hold_the_shutdown() {
        let (sender, state) = watch::channel(true);
        let task: ManagerTask = tokio::spawn(async move {
            sender.closed().await;
            std::future::pending().await
        });
        let leadership = Leadership { state, task };
        let began = tokio::time::Instant::now();
        tokio::time::timeout(Duration::from_secs(600), leadership.release())
            .await
            .expect("release() returned");
        assert_eq!(began.elapsed(), RELEASE_WITHIN);
    }
}
