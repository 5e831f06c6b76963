//! What one reconcile did, gathered as it goes for its record and report,
//! and when a successful one asks to run again.

use crate::observe::records::{Condition, ParentRef, Step};
use std::time::Duration;

/// When a successful reconcile asks to run again, and why (its record's
/// `requeue`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Again {
    pub after: Duration,
    /// `resyncAfterSeconds` or `statusDeferred`.
    pub reason: &'static str,
}

/// What one reconcile did, for its record: filled in as it goes, so a
/// failure leaves what was done before it.
#[derive(Debug, Default)]
pub(super) struct Trace {
    pub(super) parent: Option<ParentRef>,
    pub(super) steps: Vec<Step>,
    pub(super) hook: Option<Duration>,
    pub(super) desired: Option<usize>,
    /// The revision of the hooks that answered, when one did and it is known.
    pub(super) revision: Option<std::sync::Arc<str>>,
    pub(super) observed: usize,
    pub(super) conditions: Vec<Condition>,
}
