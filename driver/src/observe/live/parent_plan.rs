//! What the driver would do to one parent: what a plan hands on.

use crate::controller::cache::CachedObject;
use crate::decide::model::Driven;
use crate::decide::plan::Op;
use crate::hook::wire::object_json;
use crate::observe::records::{FieldChange, Step, changed_fields, patched_fields};
use kube::api::DynamicObject;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// What the driver would do to one parent.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ParentPlan {
    /// The controller.
    pub controller: String,
    /// The parent's kind.
    pub kind: String,
    /// The parent's namespace (none for a cluster-scoped parent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The parent's name.
    pub name: String,
    /// The hook the reconcile calls (`sync` or `finalize`); none when the
    /// parent is not this controller's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook: Option<&'static str>,
    /// Every operation, in order: what a reconcile record lists; a status
    /// write's `changed` holds the status fields it changes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
    /// Why the reconcile would fail (the hook refused, its answer is not
    /// one the driver takes), after `steps`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

impl ParentPlan {
    pub(super) fn of(ctl: &Driven, parent: &CachedObject) -> Self {
        ParentPlan {
            controller: ctl.config.name.clone(),
            kind: ctl.parent.api.kind.clone(),
            namespace: parent.metadata.namespace.clone(),
            name: parent.metadata.name.clone().unwrap_or_default(),
            hook: None,
            steps: Vec::new(),
            failure: None,
        }
    }

    /// Whether any step changes the cluster: all but `verifyParent`, a
    /// read.
    pub fn changes(&self) -> bool {
        self.steps.iter().any(|s| s.op != "verifyParent")
    }
}

/// `op` as a plan prints it: a record's step, with the fields a write of
/// the parent changes, from and to — a status write's, and a decorator's
/// patch of its labels, annotations or status — and a ControllerRevision's
/// namespace, the parent's.
pub(super) fn step(
    op: &Op,
    ctl: &Driven,
    parent: &DynamicObject,
    observed: &[Vec<Arc<DynamicObject>>],
) -> Step {
    let mut step = Step::of(op, ctl, observed);
    match op {
        Op::WriteStatus { status } => {
            let current = parent.data.get("status").unwrap_or(&Value::Null);
            // Named from the object, as an apply's fields are.
            step.changed = changed_fields(status, current)
                .into_iter()
                .map(|field| FieldChange {
                    path: format!("status.{}", field.path),
                    ..field
                })
                .collect();
        }
        Op::PatchObject { patch, .. } => {
            step.changed = patched_fields(&object_json(parent), patch);
            // The fields say it: the record's list of them is not repeated.
            step.detail = None;
        }
        Op::Revision(_) => step.namespace = parent.metadata.namespace.clone(),
        _ => {}
    }
    step
}
