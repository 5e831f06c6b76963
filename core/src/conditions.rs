//! Status conditions following Kubernetes conventions.
//!
//! A hook computes the conditions it wants from what it observed; this module
//! turns them into `metav1.Condition`s, carrying `lastTransitionTime` over from
//! the parent's current status while a condition's status is unchanged, so
//! the same request always yields the same bytes and times mean something.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

mod list;
mod wanted;

pub use list::{Conditions, MAX_KEPT};
pub use wanted::{
    ConditionStatus, WantedCondition, condition_false, condition_true, condition_unknown,
};

/// Builds the condition list in the order given. `previous` is the parent's
/// current list (possibly empty); `generation` the parent's
/// `metadata.generation`, recorded as each condition's `observedGeneration`.
pub fn build(
    previous: &[Condition],
    wanted: Vec<WantedCondition>,
    generation: Option<i64>,
    now: Timestamp,
) -> Vec<Condition> {
    wanted
        .into_iter()
        .map(|w| {
            let status = w.status.as_str();
            let last_transition_time = previous
                .iter()
                .find(|p| p.type_ == w.type_ && p.status == status)
                .map(|p| p.last_transition_time.clone())
                .unwrap_or(Time(now));
            Condition {
                type_: w.type_.to_owned(),
                status: status.to_owned(),
                reason: w.reason.to_owned(),
                message: w.message,
                last_transition_time,
                observed_generation: generation,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn keeps_transition_time_while_status_is_unchanged() {
        let before = build(
            &[],
            vec![condition_false("Ready", "A").message("a")],
            Some(1),
            at("2026-01-01T00:00:00Z"),
        );
        let after = build(
            &before,
            vec![condition_false("Ready", "B").message("b")],
            Some(2),
            at("2026-01-02T00:00:00Z"),
        );
        assert_eq!(
            after[0].last_transition_time,
            Time(at("2026-01-01T00:00:00Z"))
        );
        assert_eq!(after[0].reason, "B");
        assert_eq!(after[0].observed_generation, Some(2));
    }

    #[test]
    fn stamps_now_when_status_flips() {
        let before = build(
            &[],
            vec![condition_false("Ready", "A").message("a")],
            None,
            at("2026-01-01T00:00:00Z"),
        );
        let after = build(
            &before,
            vec![condition_true("Ready", "A").message("a")],
            None,
            at("2026-01-02T00:00:00Z"),
        );
        assert_eq!(
            after[0].last_transition_time,
            Time(at("2026-01-02T00:00:00Z"))
        );
        assert_eq!(after[0].status, "True");
    }
}
