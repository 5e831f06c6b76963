//! What a plan adds up to: parents unchanged, changed, failed; operations
//! counted by kind of operation and object, and the fields they change;
//! and the exit code a CI gate reads (`terraform plan -detailed-exitcode`'s:
//! 0 nothing to do, 2 changes planned, 1 an error).

use metahook_driver::observe::live::ParentPlan;
use serde::Serialize;
use std::collections::BTreeMap;

/// The plan of every parent, added up.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Parents planned.
    pub parents: usize,
    /// Parents the driver would leave as they are.
    pub unchanged: usize,
    /// Parents the driver would change.
    pub changed: usize,
    /// Parents whose reconcile would fail: the hook refused or failed, or
    /// its answer is not one the driver takes.
    pub failed: usize,
    /// Every operation planned, by operation and kind of object.
    pub operations: Vec<Operation>,
    /// Controllers not planned, each with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

/// One kind of operation on one kind of object, counted.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Operation {
    /// `apply`, `delete`, `writeStatus`, `addFinalizer`, …
    pub op: String,
    /// The object's kind (the parent's for its status and finalizer).
    pub kind: String,
    /// How many.
    pub count: usize,
    /// How many of them change each field, by path.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, usize>,
}

/// What `plan --live` found, as an exit code says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing would change: exit 0.
    NoChanges,
    /// This many parents would change: exit 2.
    Changes(usize),
    /// This many parents could not be planned: exit 1.
    Failures(usize),
}

/// Adds parents' plans up, one at a time: what it keeps grows with the
/// kinds of operation and fields, not with the parents.
#[derive(Debug, Default)]
pub struct Tally {
    summary: Summary,
    /// (op, kind) → (count, field → count).
    operations: BTreeMap<(String, String), (usize, BTreeMap<String, usize>)>,
}

impl Tally {
    /// Counts `plan`.
    pub fn add(&mut self, plan: &ParentPlan) {
        self.summary.parents += 1;
        if plan.failure.is_some() {
            self.summary.failed += 1;
        } else if plan.changes() {
            self.summary.changed += 1;
        } else {
            self.summary.unchanged += 1;
        }
        for step in plan.steps.iter().filter(|s| s.op != "verifyParent") {
            let kind = step.kind.clone().unwrap_or_else(|| plan.kind.clone());
            let (count, fields) = self
                .operations
                .entry((step.op.to_owned(), kind))
                .or_default();
            *count += 1;
            for field in &step.changed {
                *fields.entry(field.path.clone()).or_default() += 1;
            }
        }
    }

    /// The sum, with the controllers not planned.
    pub fn finish(self, skipped: &[String]) -> Summary {
        Summary {
            operations: self
                .operations
                .into_iter()
                .map(|((op, kind), (count, fields))| Operation {
                    op,
                    kind,
                    count,
                    fields,
                })
                .collect(),
            skipped: skipped.to_vec(),
            ..self.summary
        }
    }
}

impl Summary {
    /// What the exit code says: a failure outweighs a change.
    pub fn verdict(&self) -> Verdict {
        if self.failed > 0 {
            Verdict::Failures(self.failed)
        } else if self.changed > 0 {
            Verdict::Changes(self.changed)
        } else {
            Verdict::NoChanges
        }
    }
}
