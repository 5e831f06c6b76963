//! What the driver last did to each parent, and why: one record per live
//! parent (replaced by each reconcile, dropped with the parent), kept in
//! memory so that a person can ask (`/debug/driver/reconciles`). Built from
//! the plan the reconcile executed, so it says the same as the planner.
//!
//! A record is shown to whoever may view the parent's namespace (the
//! chart aggregates the reconciles reader into `view`, which deliberately
//! excludes Secrets), so a Secret child's changed fields keep their paths
//! and lose their values: [`REDACTED`], here where every plan is described
//! (records, `/debug/driver`, the aggregated API and `metahook render
//! --plan` alike).

use crate::controller::queue::ParentKey;
use crate::decide::model::Driven;
use kube::api::DynamicObject;
use kube::{Resource, ResourceExt};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

pub use metahook_planner::steps::{FieldChange, REDACTED, Step, changed_fields, patched_fields};

/// The last reconcile of one parent.
#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The CompositeController (its metadata.name) that reconciled the
    /// parent.
    pub controller: String,
    /// The parent, as it was when reconciled.
    pub parent: ParentRef,
    /// When the reconcile ended (RFC 3339).
    pub last_run: String,
    /// How it ended: Succeeded (something was written), Unchanged (nothing
    /// needed writing), Failed (retried after the parent's backoff),
    /// RetryLater (the hook asked to be called later), WaitingForCache,
    /// StaleCache or NamespaceTerminating (retried).
    pub outcome: Outcome,
    /// How long the whole reconcile took.
    pub duration_seconds: f64,
    /// How long the hook took to answer, when it was called.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_seconds: Option<f64>,
    /// Every operation the reconcile executed (or was executing when it
    /// failed), in order.
    pub plan: Vec<Step>,
    /// The error and its causes, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When it runs again without a change, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requeue: Option<Requeue>,
    /// Children the hook asked for, and children observed.
    pub children: ChildCount,
    /// The conditions of the status the hook asked for (`status.conditions`),
    /// when it answered with any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The revision of the hooks that last answered for the parent (its
    /// controller's declared revision), when known: a reconcile that did
    /// not reach the hook keeps the one before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The OpenTelemetry trace of this reconcile (32 hex digits), when
    /// traces are exported (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// One condition of the status the hook asked for.
#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Condition {
    /// A status's `conditions`, read the way Kubernetes writes them (a
    /// list of objects with `type` and `status`); anything else, none.
    pub fn read(conditions: Option<&Value>) -> Vec<Condition> {
        let text = |c: &Value, key: &str| c.get(key).and_then(Value::as_str).map(str::to_owned);
        conditions
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| {
                Some(Condition {
                    type_: text(c, "type")?,
                    status: text(c, "status")?,
                    reason: text(c, "reason"),
                    message: text(c, "message"),
                })
            })
            .collect()
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParentRef {
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// The parent's labels.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

impl ParentRef {
    pub fn of(ctl: &Driven, parent: &DynamicObject) -> Self {
        ParentRef {
            api_version: ctl.parent.api.api_version.clone(),
            kind: ctl.parent.api.kind.clone(),
            namespace: parent.meta().namespace.clone(),
            name: parent.name_any(),
            uid: parent.uid().unwrap_or_default(),
            generation: parent.meta().generation,
            labels: parent.labels().clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, JsonSchema)]
pub enum Outcome {
    /// Done, and something was written.
    Succeeded,
    /// Done, and nothing needed writing.
    Unchanged,
    /// Failed; retried after the parent's backoff.
    Failed,
    /// The hook asked to be called again later (429).
    RetryLater,
    /// A cache it needs has not listed yet.
    WaitingForCache,
    /// A write found the cached object out of date; retried.
    StaleCache,
    /// The parent's namespace is being deleted; retried.
    NamespaceTerminating,
    /// The API server does not know the parent's kind yet (for up to 30 s
    /// after its CRD is installed) and refused its children's owner
    /// references; retried at most 2 s apart, quietly, for 30 tries.
    OwnerKindUnknown,
}

#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Requeue {
    pub after_seconds: f64,
    /// `resyncAfterSeconds`, `statusDeferred`, `backoff` or `retryAfter`.
    pub reason: &'static str,
}

impl Requeue {
    pub fn new(after: Duration, reason: &'static str) -> Self {
        Requeue {
            after_seconds: after.as_secs_f64(),
            reason,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq, JsonSchema)]
pub struct ChildCount {
    /// What the hook asked for (absent when it was not called).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desired: Option<usize>,
    /// What the driver's caches held for the parent when it called the hook.
    pub observed: usize,
}

/// The records of one controller, by parent key.
#[derive(Debug, Default)]
pub struct Records {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    /// By namespace and name: listed in that order. Boxed: a tree node
    /// holds eleven entries and is often half full, so a record inline
    /// would leave its size empty beside it as often as not.
    by_key: ByKey,
    /// How many records name each revision.
    answered: BTreeMap<String, usize>,
}

/// Records by namespace and name.
type ByKey = BTreeMap<(Option<String>, String), Box<Record>>;

impl Kept {
    fn count(&mut self, revision: Option<&String>, up: bool) {
        let Some(revision) = revision else { return };
        let n = self.answered.entry(revision.clone()).or_default();
        *n = if up { *n + 1 } else { n.saturating_sub(1) };
        if *n == 0 {
            self.answered.remove(revision);
        }
    }

    fn remove(&mut self, key: &(Option<String>, String)) -> Option<Box<Record>> {
        let gone = self.by_key.remove(key)?;
        self.count(gone.revision.as_ref(), false);
        Some(gone)
    }
}

impl Records {
    fn lock(&self) -> MutexGuard<'_, Kept> {
        // Every update replaces one entry whole.
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the record of `key`. One whose hook did not answer keeps
    /// the revision that last did.
    pub fn put(&self, key: &ParentKey, mut record: Record) {
        let mut kept = self.lock();
        let key = by(key);
        let before = kept.remove(&key);
        if record.revision.is_none() {
            record.revision = before.and_then(|b| b.revision);
        }
        kept.count(record.revision.as_ref(), true);
        kept.by_key.insert(key, Box::new(record));
    }

    /// Updates the record of `key`, if there is one (its revision stays).
    pub fn update(&self, key: &ParentKey, change: impl FnOnce(&mut Record)) {
        if let Some(record) = self.lock().by_key.get_mut(&by(key)) {
            let revision = record.revision.clone();
            change(record);
            record.revision = revision;
        }
    }

    /// Drops the record of a parent that is gone.
    pub fn forget(&self, key: &ParentKey) {
        self.lock().remove(&by(key));
    }

    pub fn get(&self, key: &ParentKey) -> Option<Record> {
        self.lock().by_key.get(&by(key)).map(|r| Record::clone(r))
    }

    /// Every record, or those of parents in `namespace`, by key.
    pub fn list(&self, namespace: Option<&str>) -> Vec<Record> {
        self.lock()
            .by_key
            .values()
            .filter(|r| namespace.is_none_or(|ns| r.parent.namespace.as_deref() == Some(ns)))
            .map(|r| Record::clone(r))
            .collect()
    }

    /// How many parents the hooks of `revision` answered last.
    pub fn answered_by(&self, revision: &str) -> usize {
        self.lock().answered.get(revision).copied().unwrap_or(0)
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().by_key.len()
    }
}

/// A record's place: one controller's parents are all of one type.
fn by(key: &ParentKey) -> (Option<String>, String) {
    (key.namespace.clone(), key.name.clone())
}

#[cfg(test)]
mod tests;
