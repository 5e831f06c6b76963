//! The parent's status as written after a hook call, and the Events its
//! changed conditions give (docs/metacontroller.md §3.3 step 12).

use super::{EventType, Op};
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

/// An Event for every condition that appeared or changed status or reason.
/// A condition whose status is `False` is a Warning: Kubernetes conditions
/// are written so that `True` is the good state.
pub(super) fn condition_events(old: Option<&Value>, new: &Value) -> Vec<Op> {
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
            if before.is_some_and(|b| text(b, "status") == status && text(b, "reason") == reason) {
                return None;
            }
            let message = text(c, "message");
            Some(Op::Event {
                kind: if status == "False" {
                    EventType::Warning
                } else {
                    EventType::Normal
                },
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
