//! Which waiting parents go first. After a start, a takeover or a resync
//! every parent waits at once; the ones whose state says the cluster is
//! behind them go before the ones only queued to be confirmed, so that a
//! change made while no driver ran waits for the few that need work, not
//! for every parent (docs/driver.md#what-goes-first).

/// How soon a waiting parent's reconcile starts: the least first, and in
/// the order they were queued within one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Urgency {
    /// A watch saw the parent, one of its children or a related object
    /// change.
    Changed,
    /// The parent's own fields say the cluster is behind it: it is being
    /// deleted, or its `metadata.generation` is ahead of its
    /// `status.observedGeneration` (a spec changed, or no reconcile ever
    /// wrote a status).
    Behind,
    /// Nothing says it changed: queued to confirm it.
    Confirm,
}

impl Urgency {
    /// Every urgency, the least (the first served) first.
    pub const ALL: [Urgency; 3] = [Urgency::Changed, Urgency::Behind, Urgency::Confirm];
}

/// What a parent's own fields say of it, read from the cache alone (no
/// child, no hook): being deleted, or a generation the status has not
/// observed, is [`Urgency::Behind`]; the rest [`Urgency::Confirm`]. A type
/// whose objects carry no generation says nothing.
pub fn urgency_of(deleting: bool, generation: Option<i64>, observed: Option<i64>) -> Urgency {
    match (deleting, generation, observed) {
        (true, _, _) => Urgency::Behind,
        (false, Some(generation), Some(observed)) if observed >= generation => Urgency::Confirm,
        (false, Some(_), _) => Urgency::Behind,
        (false, None, _) => Urgency::Confirm,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parent_ahead_of_its_status_or_going_is_behind() {
        // Scaled while no driver ran: generation 3, observed 2.
        assert_eq!(urgency_of(false, Some(3), Some(2)), Urgency::Behind);
        // Created while no driver ran: no status yet.
        assert_eq!(urgency_of(false, Some(1), None), Urgency::Behind);
        // Deleted while no driver ran, whatever its status says.
        assert_eq!(urgency_of(true, Some(2), Some(2)), Urgency::Behind);
    }

    #[test]
    fn a_parent_its_status_has_seen_only_needs_confirming() {
        assert_eq!(urgency_of(false, Some(2), Some(2)), Urgency::Confirm);
        // A status written from a newer read than the cache's.
        assert_eq!(urgency_of(false, Some(2), Some(3)), Urgency::Confirm);
        // No generation: nothing to compare.
        assert_eq!(urgency_of(false, None, None), Urgency::Confirm);
    }

    #[test]
    fn a_change_goes_before_a_parent_behind_which_goes_before_a_confirmation() {
        assert!(Urgency::Changed < Urgency::Behind && Urgency::Behind < Urgency::Confirm);
        let mut sorted = Urgency::ALL;
        sorted.sort();
        assert_eq!(sorted, Urgency::ALL);
    }
}
