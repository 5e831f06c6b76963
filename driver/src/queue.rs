//! A work queue of parent keys with client-go's semantics
//! (docs/metacontroller.md §3.1): adds of a waiting key coalesce, a key is
//! never handed to two workers at once (an add while it is processed runs it
//! again afterwards), delayed adds keep the earliest time, and failures back
//! off exponentially per key
//! (5 ms · 2ⁿ, capped at 1000 s) until the key is forgotten.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

pub const BACKOFF_BASE: Duration = Duration::from_millis(5);
pub const BACKOFF_CAP: Duration = Duration::from_secs(1000);

#[derive(Default)]
struct State {
    ready: VecDeque<String>,
    queued: HashSet<String>,
    processing: HashSet<String>,
    /// Added while being processed: queued again when done.
    dirty: HashSet<String>,
    failures: HashMap<String, u32>,
    /// Pending delayed adds: the earliest wins.
    scheduled: HashMap<String, Instant>,
    shut_down: bool,
}

#[derive(Default)]
pub struct Queue {
    state: Mutex<State>,
    notify: Notify,
}

impl Queue {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent between statements; a panic elsewhere
        // cannot leave it half-updated.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `key` now.
    pub fn add(&self, key: &str) {
        let mut s = self.lock();
        if s.shut_down || s.queued.contains(key) {
            return;
        }
        if s.processing.contains(key) {
            s.dirty.insert(key.to_owned());
            return;
        }
        s.queued.insert(key.to_owned());
        s.ready.push_back(key.to_owned());
        drop(s);
        self.notify.notify_one();
    }

    /// Queues `key` after `delay`, unless it is already due sooner.
    pub fn add_after(self: &Arc<Self>, key: &str, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let at = Instant::now() + delay;
        {
            let mut s = self.lock();
            if s.shut_down || s.scheduled.get(key).is_some_and(|t| *t <= at) {
                return;
            }
            s.scheduled.insert(key.to_owned(), at);
        }
        let queue = Arc::clone(self);
        let key = key.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep_until(at).await;
            let due = {
                let mut s = queue.lock();
                // A sooner schedule replaced this one and fired already.
                if s.scheduled.get(&key) == Some(&at) {
                    s.scheduled.remove(&key);
                    true
                } else {
                    false
                }
            };
            if due {
                queue.add(&key);
            }
        });
    }

    /// Queues `key` after its next backoff step.
    pub fn add_rate_limited(self: &Arc<Self>, key: &str) {
        let delay = {
            let mut s = self.lock();
            let n = s.failures.entry(key.to_owned()).or_insert(0);
            let delay = backoff(*n);
            *n = n.saturating_add(1);
            delay
        };
        self.add_after(key, delay);
    }

    /// Resets `key`'s backoff after a success.
    pub fn forget(&self, key: &str) {
        self.lock().failures.remove(key);
    }

    /// Whether `key` waits for a delayed add.
    pub fn is_scheduled(&self, key: &str) -> bool {
        self.lock().scheduled.contains_key(key)
    }

    /// The longest backoff any key is waiting out (zero when none failed
    /// since its last success).
    pub fn longest_backoff(&self) -> Duration {
        self.lock()
            .failures
            .values()
            .map(|n| backoff(n.saturating_sub(1)))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    /// Failures since the last success.
    pub fn failures(&self, key: &str) -> u32 {
        self.lock().failures.get(key).copied().unwrap_or(0)
    }

    /// The next key to process, waiting for one; `None` once shut down.
    pub async fn get(&self) -> Option<String> {
        loop {
            // Registered before looking, so an add in between is not missed.
            let notified = self.notify.notified();
            {
                let mut s = self.lock();
                if s.shut_down {
                    return None;
                }
                if let Some(key) = s.ready.pop_front() {
                    s.queued.remove(&key);
                    s.processing.insert(key.clone());
                    // More work: let another worker look too.
                    if !s.ready.is_empty() {
                        self.notify.notify_one();
                    }
                    return Some(key);
                }
            }
            notified.await;
        }
    }

    /// Marks `key` processed; queues it again if it was added meanwhile.
    pub fn done(&self, key: &str) {
        let mut s = self.lock();
        s.processing.remove(key);
        if s.dirty.remove(key) && !s.shut_down && s.queued.insert(key.to_owned()) {
            s.ready.push_back(key.to_owned());
            drop(s);
            self.notify.notify_one();
        }
    }

    /// Keys waiting to be processed.
    pub fn len(&self) -> usize {
        self.lock().ready.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Wakes every waiting worker with `None`.
    pub fn shut_down(&self) {
        self.lock().shut_down = true;
        self.notify.notify_waiters();
        // A worker between its check and `notified.await` sees the flag on
        // its next loop; this permit makes sure one more wakes.
        self.notify.notify_one();
    }
}

/// 5 ms · 2ⁿ, capped at 1000 s.
pub fn backoff(failures: u32) -> Duration {
    let factor = 2u64.saturating_pow(failures.min(40));
    let millis = 5u64.saturating_mul(factor);
    Duration::from_millis(millis).min(BACKOFF_CAP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_backoff_grows_with_failures_and_resets_on_success() {
        let q = Queue::new();
        assert_eq!(q.longest_backoff(), Duration::ZERO);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            for _ in 0..3 {
                q.add_rate_limited("a");
            }
            q.add_rate_limited("b");
        });
        assert_eq!(q.longest_backoff(), backoff(2), "a's third try waits 20 ms");
        q.forget("a");
        assert_eq!(q.longest_backoff(), backoff(0), "only b still backs off");
        q.forget("b");
        assert_eq!(q.longest_backoff(), Duration::ZERO);
    }

    #[test]
    fn backoff_doubles_and_caps() {
        assert_eq!(backoff(0), Duration::from_millis(5));
        assert_eq!(backoff(1), Duration::from_millis(10));
        assert_eq!(backoff(10), Duration::from_millis(5120));
        assert_eq!(backoff(30), BACKOFF_CAP);
        assert_eq!(backoff(u32::MAX), BACKOFF_CAP);
    }

    #[tokio::test]
    async fn adds_coalesce_and_keep_order() {
        let q = Queue::new();
        q.add("a");
        q.add("b");
        q.add("a");
        assert_eq!(q.len(), 2);
        assert_eq!(q.get().await.as_deref(), Some("a"));
        assert_eq!(q.get().await.as_deref(), Some("b"));
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn a_key_in_process_is_not_handed_out_again_until_done() {
        let q = Queue::new();
        q.add("a");
        let key = q.get().await.unwrap();
        q.add("a");
        // Not ready while processing...
        assert!(q.is_empty());
        q.add("b");
        assert_eq!(q.get().await.as_deref(), Some("b"));
        // ...and queued again once done.
        q.done(&key);
        assert_eq!(q.get().await.as_deref(), Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_adds_keep_the_earliest() {
        let q = Queue::new();
        q.add_after("a", Duration::from_secs(60));
        q.add_after("a", Duration::from_secs(5));
        q.add_after("a", Duration::from_secs(30));
        q.add_after("b", Duration::from_secs(10));
        // Paused time advances straight to the next timer.
        assert_eq!(q.get().await.as_deref(), Some("a"));
        q.done("a");
        assert_eq!(q.get().await.as_deref(), Some("b"));
        q.done("b");
        // The later schedules of `a` were dropped: nothing else comes.
        q.add("c");
        assert_eq!(q.get().await.as_deref(), Some("c"));
    }

    #[tokio::test(start_paused = true)]
    async fn failures_back_off_until_forgotten() {
        let q = Queue::new();
        q.add_rate_limited("a");
        q.add_rate_limited("a");
        assert_eq!(q.failures("a"), 2);
        assert_eq!(q.get().await.as_deref(), Some("a"));
        q.forget("a");
        assert_eq!(q.failures("a"), 0);
    }

    #[tokio::test]
    async fn shut_down_releases_waiting_workers() {
        let q = Queue::new();
        let waiting = {
            let q = Arc::clone(&q);
            tokio::spawn(async move { q.get().await })
        };
        tokio::task::yield_now().await;
        q.shut_down();
        assert_eq!(waiting.await.unwrap(), None);
        q.add("late");
        assert_eq!(q.get().await, None);
    }
}
