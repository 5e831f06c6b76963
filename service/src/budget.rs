//! The memory budget for hook request bodies across the whole process
//! (`--max-buffered-bytes`). A body is reserved here before its bytes are
//! held, as they arrive: step by step for a declared `Content-Length`,
//! buffer by buffer as a chunked body grows (`body.rs`). A reservation that would take the total over the
//! budget fails at once; the caller answers 429 with `Retry-After` rather
//! than buffering without bound. Dropping a reservation gives its bytes back,
//! whatever ended the request (an answer, an error, a timeout, a disconnect).
//!
//! tokio's `Semaphore` with one permit per byte does the counting:
//! `try_acquire_many` takes many permits at once, all or none, without a
//! lock. It takes at most `u32::MAX` per call, so larger reservations are
//! taken in steps and merged.

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{Semaphore, SemaphorePermit};

pub struct MemoryBudget {
    /// One permit per byte not held.
    free: Semaphore,
    max: usize,
    /// `metahook_hook_request_bytes_buffered`: the bytes reservations hold.
    buffered: Gauge,
}

/// A reservation would take the bytes held over the budget.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{wanted} more bytes would take the request bodies held over the budget of {max} bytes")]
pub struct Exhausted {
    pub wanted: usize,
    pub max: usize,
}

/// Bytes held for one request; dropping it gives them back.
#[derive(Debug)]
pub struct Reservation<'a> {
    budget: &'a MemoryBudget,
    /// `None` while nothing is held (a permit of zero bytes is still a
    /// permit; `None` keeps the empty case trivially correct).
    permit: Option<SemaphorePermit<'a>>,
}

impl std::fmt::Debug for MemoryBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBudget")
            .field("max", &self.max)
            .field("held", &self.held())
            .finish()
    }
}

impl MemoryBudget {
    /// A budget of `max` bytes (at most `Semaphore::MAX_PERMITS`, about 2^61,
    /// beyond which the semaphore would panic).
    pub fn new(max: usize, buffered: Gauge) -> Self {
        let max = max.min(Semaphore::MAX_PERMITS);
        MemoryBudget {
            free: Semaphore::new(max),
            max,
            buffered,
        }
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Bytes not reserved now.
    pub fn free(&self) -> usize {
        self.free.available_permits()
    }

    /// Bytes reserved now.
    pub fn held(&self) -> usize {
        self.max.saturating_sub(self.free.available_permits())
    }

    /// A reservation of nothing, to grow as bytes arrive.
    pub fn empty(&self) -> Reservation<'_> {
        Reservation {
            budget: self,
            permit: None,
        }
    }

    /// `bytes` at once, or nothing.
    pub fn reserve(&self, bytes: usize) -> Result<Reservation<'_>, Exhausted> {
        let mut reservation = self.empty();
        reservation.grow(bytes)?;
        Ok(reservation)
    }
}

impl Reservation<'_> {
    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.permit.as_ref().map_or(0, SemaphorePermit::num_permits)
    }

    /// Holds `more` bytes besides those held, all or none: on failure what
    /// was held before is still held, and nothing more.
    pub fn grow(&mut self, more: usize) -> Result<(), Exhausted> {
        let exhausted = Exhausted {
            wanted: more,
            max: self.budget.max,
        };
        let mut taken: Option<SemaphorePermit<'_>> = None;
        let mut left = more;
        // At most more / u32::MAX + 1 steps; a failed step drops `taken`,
        // which gives back the steps before it.
        while left > 0 {
            let step = u32::try_from(left).unwrap_or(u32::MAX);
            let permit = self
                .budget
                .free
                .try_acquire_many(step)
                .map_err(|_| exhausted.clone())?;
            match taken.as_mut() {
                Some(taken) => taken.merge(permit),
                None => taken = Some(permit),
            }
            left -= step as usize;
        }
        if let Some(taken) = taken {
            match self.permit.as_mut() {
                Some(held) => held.merge(taken),
                None => self.permit = Some(taken),
            }
            self.budget.buffered.inc_by(as_gauge(more));
        }
        Ok(())
    }

    /// Holds at least `total` bytes in all.
    pub fn grow_to(&mut self, total: usize) -> Result<(), Exhausted> {
        self.grow(total.saturating_sub(self.bytes()))
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let bytes = self.bytes();
        // Permits first, gauge second: once the gauge reads 0 the bytes are
        // free for the next request (tests wait on the gauge).
        drop(self.permit.take());
        if bytes > 0 {
            self.budget.buffered.dec_by(as_gauge(bytes));
        }
    }
}

/// A byte count as the gauge's i64; budgets are capped far below i64::MAX.
fn as_gauge(bytes: usize) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(max: usize) -> MemoryBudget {
        MemoryBudget::new(max, Gauge::default())
    }

    #[test]
    fn reserves_up_to_the_budget_and_not_a_byte_more() {
        let budget = budget(1000);
        let a = budget.reserve(600).expect("600 of 1000");
        assert_eq!(
            budget.reserve(401).map(|r| r.bytes()),
            Err(Exhausted {
                wanted: 401,
                max: 1000
            })
        );
        let b = budget.reserve(400).expect("the last 400");
        assert_eq!((a.bytes(), b.bytes(), budget.held()), (600, 400, 1000));
        assert!(budget.reserve(1).is_err());
        // Nothing is ever needed for nothing.
        assert_eq!(budget.reserve(0).map(|r| r.bytes()), Ok(0));
    }

    #[test]
    fn dropping_a_reservation_gives_its_bytes_back() {
        let budget = budget(1000);
        let a = budget.reserve(700).expect("700");
        assert!(budget.reserve(700).is_err());
        drop(a);
        assert_eq!(budget.held(), 0);
        let b = budget.reserve(1000).expect("all of it, once free");
        assert_eq!(budget.held(), 1000);
        drop(b);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn growing_is_all_or_nothing_and_keeps_what_was_held() {
        let budget = budget(1000);
        let other = budget.reserve(300).expect("300");
        let mut growing = budget.empty();
        growing.grow(500).expect("500 of the 700 left");
        assert_eq!(
            growing.grow(201),
            Err(Exhausted {
                wanted: 201,
                max: 1000
            })
        );
        assert_eq!((growing.bytes(), budget.held()), (500, 800));
        growing.grow_to(700).expect("up to 700 in all");
        assert_eq!((growing.bytes(), budget.held()), (700, 1000));
        // Already holding 700: growing to less takes nothing.
        growing.grow_to(10).expect("nothing to take");
        assert_eq!(growing.bytes(), 700);
        drop(other);
        drop(growing);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn the_gauge_follows_what_is_held() {
        let gauge = Gauge::default();
        let budget = MemoryBudget::new(1 << 20, gauge.clone());
        let mut a = budget.reserve(1000).expect("1000");
        a.grow(24).expect("24 more");
        let b = budget.reserve(2048).expect("2048");
        assert_eq!(gauge.get(), 3072);
        assert!(budget.reserve(1 << 20).is_err());
        assert_eq!(gauge.get(), 3072, "a refusal holds nothing");
        drop(a);
        assert_eq!(gauge.get(), 2048);
        drop(b);
        assert_eq!(gauge.get(), 0);
    }

    #[test]
    fn more_than_a_u32_of_bytes_is_taken_in_steps() {
        // Permits are counted, not allocated: a budget of 10 GiB costs
        // nothing here.
        let big = 10usize << 30;
        let budget = budget(big);
        let mut r = budget.reserve(big - 1).expect("10 GiB less a byte");
        assert_eq!(r.bytes(), big - 1);
        assert!(r.grow(2).is_err());
        assert_eq!(
            r.bytes(),
            big - 1,
            "the failed step gave back nothing it held"
        );
        r.grow(1).expect("the last byte");
        assert_eq!(budget.held(), big);
        drop(r);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn a_budget_past_the_semaphore_limit_is_capped_not_a_panic() {
        let budget = budget(usize::MAX);
        assert_eq!(budget.max(), Semaphore::MAX_PERMITS);
    }

    #[test]
    fn concurrent_reservations_never_exceed_the_budget() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        // What the reservations granted, summed outside the budget: it must
        // never pass the budget, whatever the interleaving.
        let budget = std::sync::Arc::new(budget(10_000));
        let granted = std::sync::Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let (budget, granted) = (budget.clone(), granted.clone());
                std::thread::spawn(move || {
                    let (mut peak, mut admitted) = (0, 0);
                    for i in 0..2_000 {
                        let wanted = 1 + (i * 7 + t * 13) % 4_000;
                        if let Ok(r) = budget.reserve(wanted) {
                            let now = granted.fetch_add(wanted, Ordering::SeqCst) + wanted;
                            peak = peak.max(now);
                            admitted += 1;
                            granted.fetch_sub(wanted, Ordering::SeqCst);
                            drop(r);
                        }
                    }
                    (peak, admitted)
                })
            })
            .collect();
        let mut admitted = 0;
        for t in threads {
            let (peak, n) = t.join().expect("thread");
            assert!(peak <= 10_000, "granted {peak} of 10,000");
            admitted += n;
        }
        assert!(admitted > 0);
        assert_eq!(budget.held(), 0);
    }
}
