//! Where two objects differ, field by field: what a round trip changed.

use serde_json::Value;
use std::fmt;

/// One field a round trip changed: where, and its value before and after
/// (`None`: absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldChange {
    /// Its path from the object's top: `spec.ports[0].name`.
    pub field: String,
    /// Its value as sent.
    pub before: Option<Value>,
    /// Its value as it came back.
    pub after: Option<Value>,
}

impl fmt::Display for FieldChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: &Option<Value>| v.as_ref().map_or("absent".to_owned(), Value::to_string);
        write!(
            f,
            "{}: {} → {}",
            self.field,
            show(&self.before),
            show(&self.after)
        )
    }
}

/// Where `a` and `b` differ: each field by its path, absent on one side
/// or the other told apart from `null`.
pub(super) fn differences(a: &Value, b: &Value) -> Vec<FieldChange> {
    let mut out = Vec::new();
    diff("", Some(a), Some(b), &mut out);
    out
}

fn diff(path: &str, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<FieldChange>) {
    if a == b {
        return;
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                diff(&join(path, key), x.get(key), y.get(key), out);
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}[{i}]"), Some(p), Some(q), out);
            }
        }
        _ => out.push(FieldChange {
            field: path.to_owned(),
            before: a.cloned(),
            after: b.cloned(),
        }),
    }
}

pub(super) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differences_name_each_field_and_tell_absent_from_null() {
        let a = json!({"spec": {"deployment": {"name": "web", "replicas": 3}, "list": [1, 2], "gone": null}});
        let b = json!({"spec": {"deployment": {"name": "web"}, "list": [1, 3], "gone": null, "new": true}});
        let found: Vec<String> = differences(&a, &b)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            [
                "spec.deployment.replicas: 3 → absent",
                "spec.list[1]: 2 → 3",
                "spec.new: absent → true",
            ]
        );
    }
}
