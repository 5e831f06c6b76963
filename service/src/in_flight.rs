//! The bound on hook requests handled at once. Past it the service answers
//! 429 at once rather than queueing without bound; Metacontroller retries
//! after `Retry-After`.

use prometheus_client::metrics::gauge::Gauge;

pub struct InFlight {
    max: i64,
    /// Also the `metahook_hook_requests_in_flight` metric.
    current: Gauge,
}

/// One admitted request; dropping it lets the next one in.
pub struct Permit<'a>(&'a InFlight);

impl InFlight {
    pub fn new(max: usize, current: Gauge) -> Self {
        InFlight {
            max: i64::try_from(max).unwrap_or(i64::MAX),
            current,
        }
    }

    pub fn try_acquire(&self) -> Option<Permit<'_>> {
        if self.current.inc() >= self.max {
            self.current.dec();
            return None;
        }
        Some(Permit(self))
    }

    pub fn current(&self) -> i64 {
        self.current.get()
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.0.current.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_up_to_the_bound_and_frees_on_drop() {
        let limit = InFlight::new(2, Gauge::default());
        let a = limit.try_acquire();
        let b = limit.try_acquire();
        assert!(a.is_some() && b.is_some());
        assert!(limit.try_acquire().is_none());
        assert_eq!(limit.current(), 2);
        drop(a);
        assert!(limit.try_acquire().is_some());
        drop(b);
        assert_eq!(limit.current(), 0);
    }
}
