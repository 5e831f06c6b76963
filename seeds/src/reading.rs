//! What the controllers here read the same way: a parent's spec, checked
//! for every problem at once, and the Deployments among their children.

use crate::deployment::ObservedDeployment;
use metahook_core::admission::{FieldError, Verdict};
use metahook_core::{Objects, SpecError};

/// `spec`, if it could be read and `problems` finds none in it; otherwise
/// every reason it cannot be used: what the status says (in one line,
/// [`one_line`]) and what admission refuses ([`verdict`]), from one check.
pub(crate) fn checked_spec<Spec>(
    spec: &Result<Spec, SpecError>,
    problems: impl FnOnce(&Spec) -> Vec<FieldError>,
) -> Result<&Spec, Vec<FieldError>> {
    let spec = spec
        .as_ref()
        .map_err(|e| vec![FieldError::new(e.path.clone(), e.message.clone())])?;
    let problems = problems(spec);
    if problems.is_empty() {
        Ok(spec)
    } else {
        Err(problems)
    }
}

/// Every problem in one line, for a condition's message.
pub(crate) fn one_line(problems: Vec<FieldError>) -> String {
    problems
        .iter()
        .map(FieldError::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// What a validate hook answers for an object checked by
/// [`checked_spec`]: refused for each problem (a delete, with no object,
/// is allowed).
pub(crate) fn verdict<Spec>(checked: Option<Result<&Spec, Vec<FieldError>>>) -> Verdict {
    match checked {
        Some(Err(problems)) => Verdict::refusing(problems),
        Some(Ok(_)) | None => Verdict::allow(),
    }
}

/// The observed children that are Deployments (there is normally one).
pub(crate) fn deployments(
    children: &Objects<ObservedDeployment>,
) -> impl Iterator<Item = &ObservedDeployment> {
    children.iter().filter(|d| d.is_deployment())
}
