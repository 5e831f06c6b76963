//! Leader election on a `coordination.k8s.io/v1` Lease: of several
//! replicas one drives, the others wait (active/passive, like
//! Metacontroller's `--leader-election`).
//!
//! Our own elector, on kube, because the crates that exist do not do it
//! safely: kube-rs has none, and kube-lease-manager (used before) takes a
//! free Lease by server-side apply, frees an expired one with an
//! unconditional patch, and keeps a leader whose renewals fail leading —
//! two leaders at once under load. This one does what client-go's
//! `tools/leaderelection` does:
//!
//! - **Compare-and-swap.** Taking, renewing and releasing are updates
//!   guarded by the `resourceVersion` read (`elector.rs`): of two replicas
//!   writing on one read, one gets a 409 and stays a standby.
//! - **A standby counts on its own clock** (`term.rs`): a holder's term
//!   runs out only after the standby has seen its record unchanged for the
//!   whole `leaseDurationSeconds`.
//! - **A leader that cannot renew stops before anyone may take over**
//!   ([`fence`]): it writes until its last successful renewal's send time
//!   plus the renew deadline, shorter than the term, and not after —
//!   whatever else the process is doing. The difference (5 s by default)
//!   is the bound on how late a write may reach the API server.
//!
//! A waiting replica watches the Lease as well as reading it: a Lease its
//! leader released on the way out is taken at once, not after the term.

mod elector;
pub mod fence;
mod settings;
mod term;
#[cfg(test)]
mod tests;

use elector::{Elector, Outcome, Renewal};
use fence::Fence;
use futures::{Stream, StreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
pub use settings::{LeaderError, LeaderSettings, Standby};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long giving the Lease up may hold a stopping replica: with the API
/// server unreachable the release cannot land, and the Lease expires at
/// the end of its term anyway.
const RELEASE_WITHIN: Duration = Duration::from_secs(10);

/// A term as leader: renewed in the background until it is lost or
/// released. The fence it was given lets writes through meanwhile.
pub struct Leadership {
    fence: Fence,
    stop_renewing: CancellationToken,
    renewing: JoinHandle<Elector>,
}

/// Waits until this replica holds the Lease, or `stop` is cancelled
/// (`Ok(None)`). Holding it, `fence` lets writes through until the term
/// ends. Errors from the API server are retried every retry period.
pub async fn acquire(
    client: Client,
    settings: &LeaderSettings,
    fence: &Fence,
    stop: &CancellationToken,
) -> Result<Option<Leadership>, LeaderError> {
    settings.check()?;
    let api: Api<Lease> = Api::namespaced(client, &settings.namespace);
    let mut elector = Elector::new(api.clone(), settings.clone());
    let mut changes = std::pin::pin!(changes(api, settings));
    let mut waiting_for: Option<String> = None;
    loop {
        let outcome = tokio::select! {
            biased;
            () = stop.cancelled() => return Ok(None),
            outcome = elector.try_take() => outcome,
        };
        let mut until = match outcome {
            Ok(Outcome::Leading { sent }) => {
                fence.open_until(sent + settings.renew_deadline);
                tracing::info!(lease = %settings.lease_name, identity = %settings.identity, "lease acquired");
                return Ok(Some(Leadership::start(elector, settings, fence)));
            }
            Ok(Outcome::Conflict) => {
                tracing::debug!(lease = %settings.lease_name, "another replica wrote the lease first; reading it again");
                continue;
            }
            Ok(Outcome::Held { holder, until }) => {
                if waiting_for.as_deref() != Some(holder.as_str()) {
                    tracing::info!(lease = %settings.lease_name, identity = %settings.identity, %holder, "waiting for the lease");
                    waiting_for = Some(holder);
                }
                until
            }
            Err(err) => {
                tracing::warn!(lease = %settings.lease_name, error = %crate::api_error_chain(&err), "reading or taking the lease failed; trying again");
                Instant::now() + settings.retry_period
            }
        };
        // Until the holder's term would end, a change to the Lease (seen
        // free: at once), or the stop.
        loop {
            tokio::select! {
                biased;
                () = stop.cancelled() => return Ok(None),
                () = tokio::time::sleep_until(until) => break,
                Some(lease) = changes.next() => {
                    elector.observe(lease, Instant::now());
                    match elector.verdict(Instant::now()) {
                        term::Verdict::Held { until: later, .. } => until = later,
                        term::Verdict::Take | term::Verdict::Renew => {
                            tracing::info!(lease = %settings.lease_name, "the lease is free; trying for it now");
                            break;
                        }
                    }
                }
            }
        }
    }
}

/// The Lease each time a watch of it sees it written. Watch failures are
/// retried with kube's default backoff; the wait for the term's end works
/// without it.
fn changes(api: Api<Lease>, settings: &LeaderSettings) -> impl Stream<Item = Lease> + use<> {
    let config =
        watcher::Config::default().fields(&format!("metadata.name={}", settings.lease_name));
    watcher(api, config)
        .default_backoff()
        .applied_objects()
        .filter_map(|lease| async move { lease.ok() })
}

impl Leadership {
    fn start(elector: Elector, settings: &LeaderSettings, fence: &Fence) -> Self {
        let stop_renewing = CancellationToken::new();
        let renewing = tokio::spawn(renew(
            elector,
            settings.clone(),
            fence.clone(),
            stop_renewing.clone(),
        ));
        Leadership {
            fence: fence.clone(),
            stop_renewing,
            renewing,
        }
    }

    /// Resolves when the term ends: a renewal found another holder, or
    /// none landed before the deadline. The fence is shut by then.
    pub async fn lost(&mut self) {
        self.fence.shut().await;
    }

    /// Gives the Lease up so a standby takes over at once: the fence shut
    /// first, the writes it let through answered, then the Lease freed by
    /// an update guarded as every other. Bounded by `RELEASE_WITHIN` (10 s):
    /// past it, the Lease ends with its term.
    pub async fn release(self) {
        self.fence.close();
        self.stop_renewing.cancel();
        let (fence, renewing) = (self.fence, self.renewing);
        let released = tokio::time::timeout(RELEASE_WITHIN, async move {
            fence.drained().await;
            let mut elector = renewing.await.map_err(|err| err.to_string())?;
            elector
                .release()
                .await
                .map_err(|err| crate::api_error_chain(&err))
        })
        .await;
        match released {
            Ok(Ok(true)) => tracing::info!("lease released"),
            Ok(Ok(false)) => tracing::info!("the lease was no longer ours to release"),
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "releasing the lease failed; it expires at the end of its term")
            }
            Err(_) => tracing::warn!(
                within = ?RELEASE_WITHIN,
                "the lease was not released in time (is the API server reachable?); it expires at the end of its term"
            ),
        }
    }
}

/// Renews every retry period while the term lasts; shuts the fence when a
/// renewal finds the Lease lost, or when none landed by the deadline
/// (each is abandoned at it). Returns the elector to release with.
async fn renew(
    mut elector: Elector,
    settings: LeaderSettings,
    fence: Fence,
    stop: CancellationToken,
) -> Elector {
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => return elector,
            () = tokio::time::sleep(settings.retry_period) => {}
        }
        let fence::Term::Until(deadline) = fence.term() else {
            return elector;
        };
        let renewed = tokio::select! {
            biased;
            () = stop.cancelled() => return elector,
            renewed = tokio::time::timeout_at(deadline, elector.renew()) => renewed,
        };
        match renewed {
            Ok(Ok(Renewal::Renewed { sent })) => {
                fence.extend(sent + settings.renew_deadline);
            }
            Ok(Ok(Renewal::Lost { holder })) => {
                fence.close();
                tracing::warn!(lease = %settings.lease_name, holder = holder.as_deref().unwrap_or(""), "the lease is no longer ours; stopped writing");
                return elector;
            }
            Ok(Err(err)) => {
                tracing::warn!(lease = %settings.lease_name, error = %crate::api_error_chain(&err), "renewing the lease failed; trying again until the renew deadline");
            }
            Err(_) => {
                fence.close();
                tracing::warn!(lease = %settings.lease_name, renew_deadline = ?settings.renew_deadline, "no renewal landed within the renew deadline; stopped writing");
                return elector;
            }
        }
    }
}
