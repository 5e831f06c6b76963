//! How a replica takes part in the election: the Lease it contends for,
//! its name in it, and the timings, checked to keep one leader.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct LeaderSettings {
    pub lease_name: String,
    pub namespace: String,
    /// This replica's name in the Lease (the pod name).
    pub identity: String,
    /// A holder's term: a standby takes over after seeing the Lease
    /// unrenewed this long (`leaseDurationSeconds`; whole seconds).
    pub lease_duration: Duration,
    /// How long after sending its last successful renewal the leader may
    /// still write; shorter than the term.
    pub renew_deadline: Duration,
    /// How often the leader renews, and a standby retries after an error.
    pub retry_period: Duration,
    /// Whether a standby starts its caches before it leads.
    pub standby: Standby,
}

/// What a replica does while another leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Standby {
    /// Lists and watches as the leader does (the leader's memory on every
    /// replica), so that a takeover waits for the Lease alone and the
    /// parents changed just before it go first (`controller/standby.rs`).
    #[default]
    Warm,
    /// Starts nothing until it leads: a takeover lists every cache first.
    Cold,
}

impl LeaderSettings {
    /// client-go's and controller-runtime's timings: a 15 s term, a 10 s
    /// renew deadline, a renewal every 2 s.
    pub fn new(lease_name: String, namespace: String, identity: String) -> Self {
        LeaderSettings {
            lease_name,
            namespace,
            identity,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            standby: Standby::Warm,
        }
    }

    /// How long a warm standby keeps the changes it sees: two terms, more
    /// than a dead leader can have left unhandled before a takeover (it
    /// renewed within a term of it). `None`: a cold standby.
    pub fn standby_window(&self) -> Option<Duration> {
        match self.standby {
            Standby::Warm => Some(self.lease_duration.saturating_mul(2)),
            Standby::Cold => None,
        }
    }

    /// The timings keep one leader only if retry period < renew deadline <
    /// term, and the term is whole seconds (as the Lease writes it).
    pub fn check(&self) -> Result<(), LeaderError> {
        let whole = self.lease_duration.subsec_nanos() == 0
            && self.lease_duration >= Duration::from_secs(1)
            && i32::try_from(self.lease_duration.as_secs()).is_ok();
        if whole
            && self.retry_period > Duration::ZERO
            && self.retry_period < self.renew_deadline
            && self.renew_deadline < self.lease_duration
        {
            Ok(())
        } else {
            Err(LeaderError::Timings {
                lease_duration: self.lease_duration,
                renew_deadline: self.renew_deadline,
                retry_period: self.retry_period,
            })
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error(
        "leader election needs 0 < retry period ({retry_period:?}) < renew deadline ({renew_deadline:?}) < lease duration ({lease_duration:?}, whole seconds)"
    )]
    Timings {
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    },
}
