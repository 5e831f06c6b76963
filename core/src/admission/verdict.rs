//! A validate hook's answer: allowed, or refused with a message per field,
//! and warnings either way.

use std::fmt;

/// One thing wrong with an object: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field, as a path from the object's top: `spec.replicas`.
    pub field: String,
    /// What is wrong with it: `greater than 20`.
    pub message: String,
}

impl FieldError {
    /// `field` is wrong: `message` says why.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Whether an object may be stored: allowed unless something is refused.
/// Warnings reach the client either way (`kubectl` prints them).
///
/// ```
/// use metahook_core::admission::Verdict;
///
/// let verdict = Verdict::allow().refuse("spec.replicas", "greater than 20");
/// assert!(!verdict.allowed());
/// assert_eq!(verdict.message(), "spec.replicas: greater than 20");
/// let changed = Verdict::allow().warn("a new deploymentName replaces the Deployment");
/// assert!(changed.allowed());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct Verdict {
    refused: Vec<FieldError>,
    warnings: Vec<String>,
}

impl Verdict {
    /// Allowed, so far.
    pub fn allow() -> Self {
        Verdict::default()
    }

    /// Refused for every error in `errors` (allowed when there is none).
    pub fn refusing(errors: impl IntoIterator<Item = FieldError>) -> Self {
        Verdict {
            refused: errors.into_iter().collect(),
            warnings: Vec::new(),
        }
    }

    /// Refused: `field` is wrong, `message` says why (more than one field
    /// may be refused).
    pub fn refuse(mut self, field: impl Into<String>, message: impl Into<String>) -> Self {
        self.refused.push(FieldError::new(field, message));
        self
    }

    /// A warning for the client, whether allowed or not.
    pub fn warn(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }

    /// Whether nothing was refused.
    pub fn allowed(&self) -> bool {
        self.refused.is_empty()
    }

    /// What was refused, in order.
    pub fn refused(&self) -> &[FieldError] {
        &self.refused
    }

    /// The warnings, in order.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Every refusal in one line, as the client reads it: `spec.replicas:
    /// greater than 20; spec.image: must not be empty`.
    pub fn message(&self) -> String {
        self.refused
            .iter()
            .map(FieldError::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }
}
