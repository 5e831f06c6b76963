//! Status conditions following Kubernetes conventions.
//!
//! A hook computes the conditions it wants from what it observed; this module
//! turns them into `metav1.Condition`s, carrying `lastTransitionTime` over from
//! the parent's current status while a condition's status is unchanged, so
//! the same request always yields the same bytes and times mean something.

use crate::objects::ObservedDeployment;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use serde::Deserialize;
use serde::de::Deserializer;

mod list;
mod wanted;

use list::FirstOfEach;
pub use list::{Conditions, MAX_KEPT};
pub use wanted::{
    ConditionStatus, WantedCondition, condition_false, condition_true, condition_unknown,
};

/// Every condition type a hook here writes.
pub const TYPES: [&str; 3] = ["Ready", "SpecValid", "Finished"];

/// What a hook reads of the parent's current status: the conditions, to
/// carry their transition times over. Reading no more means a status it
/// cannot parse costs nothing else.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PreviousStatus {
    /// Only the first condition of each type in [`TYPES`] and status, the
    /// one [`build`] looks up: at most six, however long the list.
    #[serde(deserialize_with = "previous")]
    pub conditions: Vec<Condition>,
}

fn previous<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Condition>, D::Error> {
    d.deserialize_seq(FirstOfEach(|_, c| TYPES.contains(&c.type_.as_str())))
}

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

/// `SpecValid`: true while the spec is valid; otherwise false, reason
/// `InvalidSpec`, saying why the `kind`'s spec is `invalid` (every reason, in
/// one line).
pub fn spec_valid(kind: &str, invalid: Option<&str>) -> WantedCondition {
    match invalid {
        None => condition_true("SpecValid", "Valid").message("the spec is valid"),
        Some(why) => condition_false("SpecValid", "InvalidSpec")
            .message(format!("Invalid {kind} spec: {why}")),
    }
}

/// `Ready` for a controller that runs one Deployment: true once it runs
/// exactly `want` pods, all updated, ready and available. A missing
/// Deployment counts as one with no pods, so creating it does not change the
/// status by itself (no extra reconcile). `subject`, when given, starts the
/// message (`Deployment "web": 2/3 replicas available`).
pub fn deployment_ready(
    observed: Option<&ObservedDeployment>,
    want: i32,
    subject: Option<&str>,
) -> WantedCondition {
    let counts = observed.map(|d| d.status.clone()).unwrap_or_default();
    let prefix = subject.map(|s| format!("{s}: ")).unwrap_or_default();
    if counts.replicas > want {
        return condition_false("Ready", "ScalingDown").message(format!(
            "{prefix}{} replicas running, {want} wanted",
            counts.replicas
        ));
    }
    let available = counts.available_replicas;
    let message = format!("{prefix}{available}/{want} replicas available");
    if available >= want && counts.ready_replicas >= want && counts.updated_replicas >= want {
        condition_true("Ready", "ReplicasAvailable").message(message)
    } else {
        condition_false("Ready", "ReplicasNotAvailable").message(message)
    }
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
    fn spec_valid_names_the_kind_and_says_why() {
        let valid = spec_valid("Foo", None);
        assert_eq!(
            (
                valid.type_,
                valid.status,
                valid.reason,
                valid.message.as_str()
            ),
            (
                "SpecValid",
                ConditionStatus::True,
                "Valid",
                "the spec is valid"
            )
        );
        let invalid = spec_valid("Hikawa", Some("a; b"));
        assert_eq!(
            (
                invalid.type_,
                invalid.status,
                invalid.reason,
                invalid.message.as_str()
            ),
            (
                "SpecValid",
                ConditionStatus::False,
                "InvalidSpec",
                "Invalid Hikawa spec: a; b"
            )
        );
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
