//! Failed TLS handshakes on the hook port, made visible: each counted by
//! reason (`metahook_hook_tls_refusals_total{reason}`) and logged with the
//! peer's address and why, at most once per reason every [`LOG_EVERY`]
//! with how many were not logged since, so that a caller retrying with a
//! bad certificate, or a scanner, cannot flood the log.

use crate::AppState;
use actix_web::web;
use metahook_tls::{HandshakeError, Refusal};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// When a reason was last logged, and how many of it were not since.
#[derive(Debug, Default)]
struct Logged {
    at: Option<Instant>,
    suppressed: u64,
}

/// What reports the hook port's failed handshakes.
pub struct TlsRefusals {
    state: web::Data<AppState>,
    logged: Mutex<HashMap<Refusal, Logged>>,
}

impl TlsRefusals {
    pub fn new(state: web::Data<AppState>) -> Self {
        TlsRefusals {
            state,
            logged: Mutex::new(HashMap::new()),
        }
    }

    /// Counts and (perhaps) logs one failed handshake.
    pub fn report(&self, peer: Option<SocketAddr>, err: &HandshakeError) {
        let reason = Refusal::of(err);
        self.state.metrics.tls_refused(reason.label());
        let Some(suppressed) = self.log_now(reason, Instant::now()) else {
            return;
        };
        let peer = peer.map_or_else(|| "unknown".to_owned(), |p| p.to_string());
        tracing::warn!(
            %peer,
            reason = reason.label(),
            error = %Refusal::detail(err),
            suppressed,
            "TLS handshake on the hook port failed (suppressed: others of this reason not logged since the last)"
        );
    }

    /// Whether to log `reason` at `now`, and if so how many were not
    /// logged since the last time.
    fn log_now(&self, reason: Refusal, now: Instant) -> Option<u64> {
        let mut logged = self.logged.lock().unwrap_or_else(|p| p.into_inner());
        let slot = logged.entry(reason).or_default();
        match slot.at {
            Some(at) if now.saturating_duration_since(at) < LOG_EVERY => {
                slot.suppressed += 1;
                None
            }
            _ => {
                slot.at = Some(now);
                Some(std::mem::take(&mut slot.suppressed))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Settings;

    fn refusals() -> TlsRefusals {
        let settings = Settings::new(([127, 0, 0, 1], 0).into());
        TlsRefusals::new(web::Data::new(AppState::new(&[], &settings)))
    }

    #[test]
    fn each_reason_is_logged_at_most_once_per_period_with_what_was_not() {
        let refusals = refusals();
        let start = Instant::now();
        let at = |secs| start + Duration::from_secs(secs);
        assert_eq!(refusals.log_now(Refusal::UnknownCa, at(0)), Some(0));
        assert_eq!(refusals.log_now(Refusal::UnknownCa, at(1)), None);
        assert_eq!(refusals.log_now(Refusal::UnknownCa, at(9)), None);
        // Another reason has its own period.
        assert_eq!(refusals.log_now(Refusal::Expired, at(9)), Some(0));
        assert_eq!(refusals.log_now(Refusal::UnknownCa, at(10)), Some(2));
        assert_eq!(refusals.log_now(Refusal::UnknownCa, at(11)), None);
        assert_eq!(refusals.log_now(Refusal::UnknownCa, at(25)), Some(1));
    }

    #[test]
    fn every_failed_handshake_is_counted_by_reason() {
        let refusals = refusals();
        let timeout = HandshakeError::Timeout;
        refusals.report(None, &timeout);
        refusals.report(Some(([10, 0, 0, 1], 4242).into()), &timeout);
        let text = refusals.state.metrics.encode().unwrap();
        assert!(
            text.contains("metahook_hook_tls_refusals_total{reason=\"timeout\"} 2"),
            "{text}"
        );
    }
}
