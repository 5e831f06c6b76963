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
use serde::de::{Deserializer, SeqAccess, Visitor};
use std::fmt;

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

/// Visits a list of conditions, keeping the first of each type and status
/// that the filter admits, given how many are kept already; every
/// condition is still decoded, and so checked.
struct FirstOfEach(fn(usize, &Condition) -> bool);

impl<'de> Visitor<'de> for FirstOfEach {
    type Value = Vec<Condition>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of conditions")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut kept: Vec<Condition> = Vec::new();
        while let Some(c) = seq.next_element::<Condition>()? {
            if (self.0)(kept.len(), &c)
                && !kept
                    .iter()
                    .any(|k| k.type_ == c.type_ && k.status == c.status)
            {
                kept.push(c);
            }
        }
        Ok(kept)
    }
}

/// How many conditions [`firsts`] keeps at most.
pub const MAX_KEPT: usize = 64;

/// Reads a status' `conditions` as [`build`] needs them and no more: the
/// first condition of each type and status, at most [`MAX_KEPT`],
/// however long the list (a status is the user's to write, and a hook's
/// memory must not grow with it). For a status type's `conditions` field:
/// `#[serde(default, deserialize_with = "metahook::conditions::firsts")]`.
pub fn firsts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Condition>, D::Error> {
    d.deserialize_seq(FirstOfEach(|kept, _| kept < MAX_KEPT))
}

/// A condition as a hook decides it, before times are attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// The condition's `type`: `Ready`, `SpecValid`.
    pub type_: &'static str,
    /// Whether it holds: `status` `True` or `False`.
    pub status: bool,
    /// Why, in one CamelCase word for tools: `ReplicasAvailable`.
    pub reason: &'static str,
    /// Why, in a sentence for a person.
    pub message: String,
}

impl Wanted {
    /// A condition of type `type_`, holding or not, and why.
    pub fn new(type_: &'static str, status: bool, reason: &'static str, message: String) -> Self {
        Self {
            type_,
            status,
            reason,
            message,
        }
    }
}

/// Builds the condition list in the order given. `previous` is the parent's
/// current list (possibly empty); `generation` the parent's
/// `metadata.generation`, recorded as each condition's `observedGeneration`.
pub fn build(
    previous: &[Condition],
    wanted: Vec<Wanted>,
    generation: Option<i64>,
    now: Timestamp,
) -> Vec<Condition> {
    wanted
        .into_iter()
        .map(|w| {
            let status = if w.status { "True" } else { "False" };
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
pub fn spec_valid(kind: &str, invalid: Option<&str>) -> Wanted {
    match invalid {
        None => Wanted::new("SpecValid", true, "Valid", "the spec is valid".to_owned()),
        Some(why) => Wanted::new(
            "SpecValid",
            false,
            "InvalidSpec",
            format!("Invalid {kind} spec: {why}"),
        ),
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
) -> Wanted {
    let counts = observed.map(|d| d.status.clone()).unwrap_or_default();
    let prefix = subject.map(|s| format!("{s}: ")).unwrap_or_default();
    if counts.replicas > want {
        return Wanted::new(
            "Ready",
            false,
            "ScalingDown",
            format!(
                "{prefix}{} replicas running, {want} wanted",
                counts.replicas
            ),
        );
    }
    let available = counts.available_replicas;
    let message = format!("{prefix}{available}/{want} replicas available");
    if available >= want && counts.ready_replicas >= want && counts.updated_replicas >= want {
        Wanted::new("Ready", true, "ReplicasAvailable", message)
    } else {
        Wanted::new("Ready", false, "ReplicasNotAvailable", message)
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
            vec![Wanted::new("Ready", false, "A", "a".into())],
            Some(1),
            at("2026-01-01T00:00:00Z"),
        );
        let after = build(
            &before,
            vec![Wanted::new("Ready", false, "B", "b".into())],
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
            ("SpecValid", true, "Valid", "the spec is valid")
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
                false,
                "InvalidSpec",
                "Invalid Hikawa spec: a; b"
            )
        );
    }

    #[test]
    fn stamps_now_when_status_flips() {
        let before = build(
            &[],
            vec![Wanted::new("Ready", false, "A", "a".into())],
            None,
            at("2026-01-01T00:00:00Z"),
        );
        let after = build(
            &before,
            vec![Wanted::new("Ready", true, "A", "a".into())],
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
