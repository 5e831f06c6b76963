//! What the controllers here read the same way: a parent's spec, checked
//! for every problem at once, and the Deployments among their children.

use crate::deployment::ObservedDeployment;
use metahook_core::{Objects, SpecError};

/// `spec`, if it could be read and `problems` finds none in it; otherwise
/// every reason it cannot be used, in one line for the status to say.
pub(crate) fn valid_spec<Spec>(
    spec: &Result<Spec, SpecError>,
    problems: impl FnOnce(&Spec) -> Vec<String>,
) -> Result<&Spec, String> {
    let spec = spec.as_ref().map_err(|e| e.to_string())?;
    let problems = problems(spec);
    if problems.is_empty() {
        Ok(spec)
    } else {
        Err(problems.join("; "))
    }
}

/// The observed children that are Deployments (there is normally one).
pub(crate) fn deployments(
    children: &Objects<ObservedDeployment>,
) -> impl Iterator<Item = &ObservedDeployment> {
    children.iter().filter(|d| d.is_deployment())
}
