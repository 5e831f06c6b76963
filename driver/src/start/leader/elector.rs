//! The Lease's reads and writes: every write that takes, renews or gives
//! it up is an update guarded by the `resourceVersion` last read, so of two
//! replicas writing on the same read one gets a 409 Conflict and knows
//! someone else got there first.

use super::settings::LeaderSettings;
use super::term::{self, Observed, Verdict};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use tokio::time::Instant;

/// The field manager of every write to the Lease.
const FIELD_MANAGER: &str = "metahook-leader-election";

/// What an attempt to take the Lease came to.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Held by this replica from a write sent at `sent`.
    Leading { sent: Instant },
    /// Another replica holds it until `until`, unless renewed.
    Held { holder: String, until: Instant },
    /// Someone wrote it between our read and our write.
    Conflict,
}

/// What renewing came to.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Renewal {
    /// Renewed by a write sent at `sent`.
    Renewed { sent: Instant },
    /// Someone else holds it now, or nobody does.
    Lost { holder: Option<String> },
}

pub(super) struct Elector {
    api: Api<Lease>,
    settings: LeaderSettings,
    /// The Lease as last read or written (its metadata is written back).
    lease: Option<Lease>,
    observed: Option<Observed>,
}

/// Why a renewal did not land (the term goes on until its deadline).
#[derive(Debug, thiserror::Error)]
pub(super) enum RenewError {
    #[error("the API server did not take the renewal")]
    Api(#[from] kube::Error),
    #[error("the Lease kept changing under the renewal")]
    KeptChanging,
}

fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 409)
}

impl Elector {
    pub(super) fn new(api: Api<Lease>, settings: LeaderSettings) -> Self {
        Elector {
            api,
            settings,
            lease: None,
            observed: None,
        }
    }

    fn me(&self) -> &str {
        &self.settings.identity
    }

    /// Takes in the Lease as read, written or watched at `now`.
    pub(super) fn observe(&mut self, lease: Lease, now: Instant) {
        let resource_version = lease.metadata.resource_version.clone().unwrap_or_default();
        let spec = lease.spec.clone().unwrap_or_default();
        self.observed = Some(Observed::seen(
            self.observed.as_ref(),
            spec,
            resource_version,
            now,
        ));
        self.lease = Some(lease);
    }

    /// What this replica may do with the Lease as last seen, at `now`.
    pub(super) fn verdict(&self, now: Instant) -> Verdict {
        match &self.observed {
            Some(observed) => term::judge(observed, self.me(), self.settings.lease_duration, now),
            None => Verdict::Take,
        }
    }

    /// Reads the Lease; `false` if there is none.
    async fn read(&mut self) -> Result<bool, kube::Error> {
        match self.api.get_opt(&self.settings.lease_name).await? {
            Some(lease) => {
                self.observe(lease, Instant::now());
                Ok(true)
            }
            None => {
                self.lease = None;
                self.observed = None;
                Ok(false)
            }
        }
    }

    /// Reads the Lease and takes it if it is free, ours, or its holder's
    /// term ran out unrenewed.
    pub(super) async fn try_take(&mut self) -> Result<Outcome, kube::Error> {
        if !self.read().await? {
            return self.create().await;
        }
        match self.verdict(Instant::now()) {
            Verdict::Held { holder, until } => Ok(Outcome::Held { holder, until }),
            Verdict::Take | Verdict::Renew => self.write_held().await,
        }
    }

    /// Renews a Lease this replica holds: first on its own last write (no
    /// read), and if that was not the last write, on a fresh read — unless
    /// the read shows that it is no longer ours.
    pub(super) async fn renew(&mut self) -> Result<Renewal, RenewError> {
        for _ in 0..3 {
            if let Outcome::Leading { sent } = self.write_held().await? {
                return Ok(Renewal::Renewed { sent });
            }
            if !self.read().await? {
                return Ok(Renewal::Lost { holder: None });
            }
            // Anything but ours (free too: someone cleared it, and a
            // standby may be taking it now) ends the term.
            if self.verdict(Instant::now()) != Verdict::Renew {
                let holder = self
                    .observed
                    .as_ref()
                    .and_then(|o| o.holder().map(str::to_owned));
                return Ok(Renewal::Lost { holder });
            }
        }
        // Still ours but written by others three times in a row (its
        // labels edited?): the term goes on until its deadline; the next
        // renewal tries again.
        Err(RenewError::KeptChanging)
    }

    /// Gives the Lease up if this replica still holds it: `true` if it did.
    pub(super) async fn release(&mut self) -> Result<bool, kube::Error> {
        for _ in 0..3 {
            let Some(observed) = &self.observed else {
                return Ok(false);
            };
            if observed.holder() != Some(self.me()) {
                return Ok(false);
            }
            let spec = term::released(&observed.spec, jiff::Timestamp::now());
            match self.replace(spec).await {
                Ok(_) => return Ok(true),
                Err(err) if is_conflict(&err) => {
                    self.read().await?;
                }
                Err(err) => return Err(err),
            }
        }
        Ok(false)
    }

    /// Writes this replica in as the holder, guarded by the last read.
    async fn write_held(&mut self) -> Result<Outcome, kube::Error> {
        let current = self
            .observed
            .as_ref()
            .map(|o| o.spec.clone())
            .unwrap_or_default();
        let spec = term::held_by(
            &current,
            self.me(),
            self.settings.lease_duration,
            jiff::Timestamp::now(),
        );
        let sent = Instant::now();
        match self.replace(spec).await {
            Ok(()) => Ok(Outcome::Leading { sent }),
            Err(err) if is_conflict(&err) => Ok(Outcome::Conflict),
            Err(err) => Err(err),
        }
    }

    /// An update of the Lease last seen to `spec`: 409 if anyone wrote it
    /// since.
    async fn replace(&mut self, spec: LeaseSpec) -> Result<(), kube::Error> {
        let mut lease = self.lease.clone().unwrap_or_default();
        lease.metadata.managed_fields = None;
        lease.metadata.resource_version =
            self.observed.as_ref().map(|o| o.resource_version.clone());
        lease.spec = Some(spec);
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        let written = self
            .api
            .replace(&self.settings.lease_name, &params, &lease)
            .await?;
        self.observe(written, Instant::now());
        Ok(())
    }

    /// Creates the Lease held by this replica; someone else creating it
    /// first is a conflict.
    async fn create(&mut self) -> Result<Outcome, kube::Error> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.settings.lease_name.clone()),
                namespace: Some(self.settings.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(term::held_by(
                &LeaseSpec::default(),
                self.me(),
                self.settings.lease_duration,
                jiff::Timestamp::now(),
            )),
        };
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        let sent = Instant::now();
        match self.api.create(&params, &lease).await {
            Ok(created) => {
                self.observe(created, Instant::now());
                Ok(Outcome::Leading { sent })
            }
            Err(err) if is_conflict(&err) => Ok(Outcome::Conflict),
            Err(err) => Err(err),
        }
    }
}
