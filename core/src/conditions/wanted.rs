//! A condition as a hook decides it, before its times are attached:
//! `condition_true("Ready", "Written").message("the ConfigMap holds it")`.

/// Whether a condition holds: its `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionStatus {
    /// `True`.
    True,
    /// `False`.
    False,
    /// `Unknown`: the controller cannot tell yet.
    Unknown,
}

impl ConditionStatus {
    /// As a condition's `status` says it.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

impl From<bool> for ConditionStatus {
    fn from(holds: bool) -> Self {
        if holds {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        }
    }
}

/// A condition as a hook decides it; [`crate::Request::conditions`] adds
/// the times and the generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WantedCondition {
    /// The condition's `type`: `Ready`, `SpecValid`.
    pub type_: &'static str,
    /// Whether it holds.
    pub status: ConditionStatus,
    /// Why, in one CamelCase word for tools: `ReplicasAvailable`.
    pub reason: &'static str,
    /// Why, in a sentence for a person (empty unless given).
    pub message: String,
}

impl WantedCondition {
    /// The same condition, saying why in a sentence.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }
}

fn wanted(type_: &'static str, status: ConditionStatus, reason: &'static str) -> WantedCondition {
    WantedCondition {
        type_,
        status,
        reason,
        message: String::new(),
    }
}

/// The condition `type_` holds, because of `reason`.
///
/// ```
/// use metahook_core::conditions::{ConditionStatus, condition_true};
///
/// let ready = condition_true("Ready", "Written").message("the ConfigMap holds the message");
/// assert_eq!(ready.status, ConditionStatus::True);
/// assert_eq!(ready.message, "the ConfigMap holds the message");
/// ```
pub fn condition_true(type_: &'static str, reason: &'static str) -> WantedCondition {
    wanted(type_, ConditionStatus::True, reason)
}

/// The condition `type_` does not hold, because of `reason`.
pub fn condition_false(type_: &'static str, reason: &'static str) -> WantedCondition {
    wanted(type_, ConditionStatus::False, reason)
}

/// Whether the condition `type_` holds is not known yet, because of `reason`.
pub fn condition_unknown(type_: &'static str, reason: &'static str) -> WantedCondition {
    wanted(type_, ConditionStatus::Unknown, reason)
}
