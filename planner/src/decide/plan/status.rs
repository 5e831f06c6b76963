//! The parent's status as written after a hook call, and the Events its
//! changed conditions are worth (docs/metacontroller.md §3.3 step 12; the
//! Events are metahook's own: Metacontroller sends only `SyncError`).

use super::op::{EventType, Op, Written};
use kube::core::DynamicObject;
use serde_json::{Map, Value};

/// The hook's status (or `{}`), with `observedGeneration` set to the
/// generation the hook saw: Metacontroller replaces the whole status.
pub(super) fn with_generation(parent: &DynamicObject, status: Option<Map<String, Value>>) -> Value {
    let mut status = status.unwrap_or_default();
    status.insert(
        "observedGeneration".to_owned(),
        Value::from(parent.metadata.generation.unwrap_or(0)),
    );
    Value::Object(status)
}

/// Summary conditions: `False` while the object catches up with a change
/// (a new object, a scale, a deletion), so their fall is a Warning only when nothing we
/// do explains it (Kubernetes' API conventions name `Ready` the summary;
/// kstatus reads `Reconciling` the same way).
const PROGRESS: [&str; 4] = ["Ready", "Available", "Progressing", "Reconciling"];

/// The reasons of the `Updated` condition while a rolling update goes on.
const ROLLOUT_STEPS: [&str; 2] = ["RolloutProgressing", "RolloutWaiting"];

/// The Events a status change is worth: a Warning when something is wrong
/// (a condition becomes `False`, or changes its reason while `False`), a
/// Normal when it is right again (`False` → `True`); nothing when a
/// condition only rewords its message. A summary condition that becomes
/// `False` while the object catches up (`catching_up`: this pass changes a
/// child — a new object's first, a scale — or the parent is being deleted)
/// is the expected path, worth nothing; its becoming `True` too. A delete
/// alone catches nothing up (a Foo renamed onto a name another object holds
/// deletes its old Deployment and can create no new one). Kubernetes conditions are written so that `True` is
/// the good state.
pub(super) fn condition_events(old: Option<&Value>, new: &Value, catching_up: bool) -> Vec<Op> {
    let conditions = |status: Option<&Value>| -> Vec<Value> {
        status
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let old = conditions(old);
    let text = |c: &Value, key: &str| {
        c.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    conditions(Some(new))
        .iter()
        .filter_map(|c| {
            let type_ = text(c, "type");
            if type_.is_empty() {
                return None;
            }
            let status = text(c, "status");
            let reason = text(c, "reason");
            let before = old.iter().find(|o| text(o, "type") == type_);
            let was = before.map(|b| text(b, "status"));
            if was.as_deref() == Some(status.as_str())
                && before.is_some_and(|b| text(b, "reason") == reason)
            {
                return None;
            }
            let progress = PROGRESS.contains(&type_.as_str());
            let kind = match (was.as_deref(), status.as_str()) {
                // Catching up with what this pass writes.
                (_, "False") if progress && catching_up => return None,
                // A rollout's steps (plan/rolling/): its end is the news.
                (_, "False") if type_ == "Updated" && ROLLOUT_STEPS.contains(&reason.as_str()) => {
                    return None;
                }
                // Worse: a regression, or a problem from the start.
                (_, "False") => EventType::Warning,
                // Right again.
                (Some("False"), "True") if !progress => EventType::Normal,
                _ => return None,
            };
            let message = text(c, "message");
            Some(Op::Event {
                after: Some(Written::Status),
                kind,
                reason: if reason.is_empty() {
                    type_.clone()
                } else {
                    reason
                },
                note: if message.is_empty() {
                    format!("{type_} is {status}")
                } else {
                    format!("{type_} is {status}: {message}")
                },
            })
        })
        .collect()
}
