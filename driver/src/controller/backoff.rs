//! Metacontroller's per-key backoff after a failed reconcile (client-go's
//! item exponential rate limiter; docs/metacontroller.md §3.10): 5 ms · 2ⁿ,
//! capped at 1000 s, reset on success. kube's applier does the queueing
//! (coalescing, one key at a time, earliest requeue wins, concurrency;
//! `worker.rs`) and asks the error policy how long to wait, but keeps no
//! count of a key's failures: that count is this.

use crate::controller::queue::ParentKey;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

pub const BACKOFF_BASE: Duration = Duration::from_millis(5);
pub const BACKOFF_CAP: Duration = Duration::from_secs(1000);

/// Failures since the last success, per parent key.
#[derive(Debug, Default)]
pub struct Backoff {
    failures: Mutex<HashMap<ParentKey, u32>>,
}

impl Backoff {
    fn lock(&self) -> MutexGuard<'_, HashMap<ParentKey, u32>> {
        // Every update is one statement: a panic elsewhere cannot leave
        // the map half-updated.
        self.failures.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a failure of `key` and says how long to wait before the next
    /// try: 5 ms after the first failure, doubling after each further one.
    pub fn next(&self, key: &ParentKey) -> Duration {
        let mut failures = self.lock();
        let n = failures.entry(key.clone()).or_insert(0);
        let delay = backoff(*n);
        *n = n.saturating_add(1);
        delay
    }

    /// Resets `key` after a success, or when its parent is gone.
    pub fn forget(&self, key: &ParentKey) {
        self.lock().remove(key);
    }

    /// Failures of `key` since its last success.
    pub fn failures(&self, key: &ParentKey) -> u32 {
        self.lock().get(key).copied().unwrap_or(0)
    }

    /// The longest wait any key is serving (zero when none failed since its
    /// last success).
    pub fn longest(&self) -> Duration {
        self.lock()
            .values()
            .map(|n| backoff(n.saturating_sub(1)))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    /// How many keys are backing off.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// 5 ms · 2ⁿ, capped at 1000 s.
pub fn backoff(failures: u32) -> Duration {
    let factor = 2u32.saturating_pow(failures.min(31));
    BACKOFF_BASE.saturating_mul(factor).min(BACKOFF_CAP)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ParentKey {
        ParentKey::new_with(
            name,
            crate::controller::cache::SharedType::of(
                &crate::test_support::api_type("example.com", "v1", "Thing", true).api,
            ),
        )
    }

    #[test]
    fn the_longest_backoff_grows_with_failures_and_resets_on_success() {
        let b = Backoff::default();
        assert_eq!(b.longest(), Duration::ZERO);
        for _ in 0..3 {
            b.next(&key("a"));
        }
        b.next(&key("b"));
        assert_eq!(b.longest(), backoff(2), "a's third try waits 20 ms");
        b.forget(&key("a"));
        assert_eq!(b.longest(), backoff(0), "only b still backs off");
        b.forget(&key("b"));
        assert_eq!(b.longest(), Duration::ZERO);
    }

    #[test]
    fn backoff_doubles_and_caps() {
        assert_eq!(backoff(0), Duration::from_millis(5));
        assert_eq!(backoff(1), Duration::from_millis(10));
        assert_eq!(backoff(10), Duration::from_millis(5120));
        assert_eq!(backoff(30), BACKOFF_CAP);
        assert_eq!(backoff(u32::MAX), BACKOFF_CAP);
    }

    #[test]
    fn failures_count_until_forgotten() {
        let b = Backoff::default();
        assert_eq!(b.next(&key("a")), Duration::from_millis(5));
        assert_eq!(b.next(&key("a")), Duration::from_millis(10));
        assert_eq!(b.failures(&key("a")), 2);
        b.forget(&key("a"));
        assert_eq!(b.failures(&key("a")), 0);
        assert_eq!(b.len(), 0);
        assert_eq!(b.next(&key("a")), Duration::from_millis(5), "starts over");
    }
}
