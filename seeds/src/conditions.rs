//! The conditions the seeds write alike: `SpecValid`, and `Ready` of a
//! controller that runs one Deployment.

use crate::deployment::ObservedDeployment;
use metahook_core::conditions::{WantedCondition, condition_false, condition_true};

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
    use metahook_core::conditions::ConditionStatus;

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
}
