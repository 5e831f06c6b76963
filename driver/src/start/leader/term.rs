//! The election's decisions, pure: what a replica makes of the Lease it
//! read, and the record it writes to take, renew or give it up.
//!
//! Time is the replica's own monotonic clock only. A standby counts a
//! holder's term from when it *saw* the record change, never from the
//! `renewTime` written in it, so clocks set differently on two nodes do not
//! matter; only how fast they run does (see docs/robustness.md, "Leader
//! election").

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use std::time::Duration;
use tokio::time::Instant;

/// The Lease as a replica last saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    pub spec: LeaseSpec,
    /// What a write must name to be taken only if nobody wrote since.
    pub resource_version: String,
    /// When this replica first saw `spec` as it is.
    pub since: Instant,
}

impl Observed {
    /// `spec` seen at `now`: `since` moves only if the record changed, so
    /// a holder that stopped renewing is not kept alive by being read
    /// again (and any write to it, ours included, restarts its term).
    pub fn seen(
        previous: Option<&Observed>,
        spec: LeaseSpec,
        resource_version: String,
        now: Instant,
    ) -> Self {
        let since = match previous {
            Some(p) if p.spec == spec => p.since,
            _ => now,
        };
        Observed {
            spec,
            resource_version,
            since,
        }
    }

    /// The holder, if the Lease has one (an empty name is none).
    pub fn holder(&self) -> Option<&str> {
        self.spec
            .holder_identity
            .as_deref()
            .filter(|holder| !holder.is_empty())
    }
}

/// What a replica may do with the Lease it saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Free, or its holder's term has run out unrenewed: try to take it.
    Take,
    /// This replica holds it: renew.
    Renew,
    /// Another replica holds it; its term ends at `until` unless renewed.
    Held { holder: String, until: Instant },
}

/// What `me` may do at `now` with the Lease `observed`. A term lasts the
/// holder's own `leaseDurationSeconds`, or `default_term` if it wrote none.
pub fn judge(observed: &Observed, me: &str, default_term: Duration, now: Instant) -> Verdict {
    let Some(holder) = observed.holder() else {
        return Verdict::Take;
    };
    if holder == me {
        return Verdict::Renew;
    }
    let term = observed
        .spec
        .lease_duration_seconds
        .and_then(|s| u64::try_from(s).ok())
        .filter(|&s| s > 0)
        .map_or(default_term, Duration::from_secs);
    let until = observed.since + term;
    if now >= until {
        Verdict::Take
    } else {
        Verdict::Held {
            holder: holder.to_owned(),
            until,
        }
    }
}

/// The record `me` writes to hold the Lease from `now` (wall clock, for
/// people reading it): a renewal keeps the acquisition time and the count
/// of transitions, a take-over starts a new term and counts one.
pub fn held_by(current: &LeaseSpec, me: &str, term: Duration, now: jiff::Timestamp) -> LeaseSpec {
    let renewing = current.holder_identity.as_deref() == Some(me);
    let transitions = current.lease_transitions.unwrap_or(0);
    LeaseSpec {
        holder_identity: Some(me.to_owned()),
        lease_duration_seconds: Some(i32::try_from(term.as_secs()).unwrap_or(i32::MAX)),
        acquire_time: if renewing {
            current.acquire_time.clone()
        } else {
            Some(MicroTime(now))
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(if renewing {
            transitions
        } else {
            transitions.saturating_add(1)
        }),
        ..current.clone()
    }
}

/// The record that gives the Lease up: no holder, so a standby takes it at
/// once instead of waiting out the term.
pub fn released(current: &LeaseSpec, now: jiff::Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: None,
        acquire_time: None,
        renew_time: Some(MicroTime(now)),
        ..current.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TERM: Duration = Duration::from_secs(15);

    fn spec(holder: Option<&str>, seconds: Option<i32>) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(str::to_owned),
            lease_duration_seconds: seconds,
            ..LeaseSpec::default()
        }
    }

    fn wall(seconds: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    #[test]
    fn a_free_lease_is_taken_and_ones_own_renewed() {
        let now = Instant::now();
        for free in [spec(None, Some(15)), spec(Some(""), None)] {
            let seen = Observed::seen(None, free, "1".into(), now);
            assert_eq!(judge(&seen, "a", TERM, now), Verdict::Take);
        }
        let mine = Observed::seen(None, spec(Some("a"), Some(15)), "1".into(), now);
        assert_eq!(judge(&mine, "a", TERM, now), Verdict::Renew);
    }

    #[test]
    fn anothers_term_runs_from_when_it_was_seen_for_its_own_duration() {
        let start = Instant::now();
        let seen = Observed::seen(None, spec(Some("b"), Some(10)), "1".into(), start);
        let later = start + Duration::from_secs(9);
        assert_eq!(
            judge(&seen, "a", TERM, later),
            Verdict::Held {
                holder: "b".into(),
                until: start + Duration::from_secs(10)
            }
        );
        assert_eq!(
            judge(&seen, "a", TERM, start + Duration::from_secs(10)),
            Verdict::Take
        );
        // No duration written: ours.
        let undeclared = Observed::seen(None, spec(Some("b"), None), "1".into(), start);
        assert!(matches!(
            judge(&undeclared, "a", TERM, start + Duration::from_secs(14)),
            Verdict::Held { .. }
        ));
    }

    #[test]
    fn reading_an_unrenewed_lease_again_does_not_extend_its_term() {
        let start = Instant::now();
        let first = Observed::seen(None, spec(Some("b"), Some(15)), "1".into(), start);
        let again = Observed::seen(
            Some(&first),
            spec(Some("b"), Some(15)),
            "1".into(),
            start + Duration::from_secs(14),
        );
        assert_eq!(again.since, start);
        assert_eq!(
            judge(&again, "a", TERM, start + Duration::from_secs(15)),
            Verdict::Take
        );
    }

    #[test]
    fn a_renewal_seen_restarts_the_term() {
        let start = Instant::now();
        let first = Observed::seen(None, spec(Some("b"), Some(15)), "1".into(), start);
        let mut renewed = spec(Some("b"), Some(15));
        renewed.renew_time = Some(MicroTime(wall(12)));
        let seen_at = start + Duration::from_secs(12);
        let again = Observed::seen(Some(&first), renewed, "2".into(), seen_at);
        assert_eq!(again.since, seen_at);
        assert!(matches!(
            judge(&again, "a", TERM, start + Duration::from_secs(20)),
            Verdict::Held { .. }
        ));
    }

    #[test]
    fn taking_counts_a_transition_and_renewing_keeps_the_acquisition() {
        let taken = held_by(&spec(Some("b"), Some(15)), "a", TERM, wall(0));
        assert_eq!(taken.holder_identity.as_deref(), Some("a"));
        assert_eq!(taken.lease_transitions, Some(1));
        assert_eq!(taken.acquire_time, Some(MicroTime(wall(0))));
        assert_eq!(taken.lease_duration_seconds, Some(15));
        let renewed = held_by(&taken, "a", TERM, wall(2));
        assert_eq!(renewed.lease_transitions, Some(1));
        assert_eq!(renewed.acquire_time, Some(MicroTime(wall(0))));
        assert_eq!(renewed.renew_time, Some(MicroTime(wall(2))));
        let free = released(&renewed, wall(3));
        assert_eq!(free.holder_identity, None);
        assert_eq!(free.lease_transitions, Some(1));
        let again = held_by(&free, "c", TERM, wall(4));
        assert_eq!(again.lease_transitions, Some(2));
    }
}
