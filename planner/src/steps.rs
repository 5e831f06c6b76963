//! One operation of a plan as a person reads it: its kind, object and the
//! fields it changes. What a reconcile record (the driver's) and `render
//! --plan` (the preview) print.

use crate::decide::model::Driven;
use crate::decide::plan::{APPLIED, DeleteReason, EventType, Op, RevisionWrite};
use kube::core::DynamicObject;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// What a Secret's changed field shows instead of its values.
pub const REDACTED: &str = "<redacted>";

/// One field an operation changes.
#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct FieldChange {
    /// `spec.replicas`.
    pub path: String,
    /// What the object holds now (`null`: nothing).
    #[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
    pub from: Value,
    #[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
    pub to: Value,
}

/// One operation of the plan.
#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// `addFinalizer`, `removeFinalizer`, `verifyParent`, `adopt`,
    /// `release`, `delete`, `apply`, `writeStatus`, `event`.
    pub op: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// For an apply: the fields whose desired value differs from the
    /// observed object, with both values; for a status write, the status
    /// fields that change.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<FieldChange>,
    /// Why, where it helps: the delete's reason, the event's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Step {
    fn new(op: &'static str) -> Self {
        Step {
            op,
            kind: None,
            namespace: None,
            name: None,
            changed: Vec::new(),
            detail: None,
        }
    }

    /// Describes `op`; `observed` holds the claimed children per type, to
    /// say what an apply changes.
    pub fn of(op: &Op, ctl: &Driven, observed: &[Vec<Arc<DynamicObject>>]) -> Self {
        let kind_of = |type_index: usize| {
            ctl.children
                .get(type_index)
                .map(|c| c.resource.api.kind.clone())
        };
        let revision = |op| Step {
            kind: Some("ControllerRevision".to_owned()),
            ..Step::new(op)
        };
        let target = |op, child: &crate::decide::plan::Target| Step {
            kind: kind_of(child.type_index),
            namespace: child.namespace.clone(),
            name: Some(child.name.clone()),
            ..Step::new(op)
        };
        match op {
            Op::AddFinalizer { .. } => Step::new("addFinalizer"),
            Op::RemoveFinalizer { .. } => Step::new("removeFinalizer"),
            Op::VerifyParent => Step::new("verifyParent"),
            Op::Adopt { child, .. } => target("adopt", child),
            Op::Release { child, .. } => target("release", child),
            Op::DeleteChild { child, reason } => Step {
                detail: Some(
                    match reason {
                        DeleteReason::NotDesired => "not desired",
                        DeleteReason::Recreate => "recreate",
                    }
                    .to_owned(),
                ),
                ..target("delete", child)
            },
            Op::ApplyChild {
                type_index,
                namespace,
                name,
                body,
                ..
            } => {
                let current = observed
                    .get(*type_index)
                    .and_then(|objects| {
                        objects.iter().find(|o| {
                            o.metadata.name.as_deref() == Some(name.as_str())
                                && o.metadata.namespace == *namespace
                        })
                    })
                    .and_then(|o| serde_json::to_value(o.as_ref()).ok());
                let secret = ctl.children.get(*type_index).is_some_and(|c| {
                    c.resource.api.group.is_empty() && c.resource.api.kind == "Secret"
                });
                let changed = current.map(|current| {
                    // The fingerprint annotation is the driver's bookkeeping,
                    // not a change anyone asked for.
                    let mut changed = changed_fields(body, &current);
                    changed
                        .retain(|f| f.path.strip_prefix("metadata.annotations.") != Some(APPLIED));
                    if secret {
                        for field in &mut changed {
                            field.from = Value::from(REDACTED);
                            field.to = Value::from(REDACTED);
                        }
                    }
                    changed
                });
                Step {
                    kind: kind_of(*type_index),
                    namespace: namespace.clone(),
                    name: Some(name.clone()),
                    changed: changed.clone().unwrap_or_default(),
                    detail: match &changed {
                        None => Some("create".to_owned()),
                        Some(fields) if fields.is_empty() => Some("no field changes".to_owned()),
                        Some(_) => None,
                    },
                    ..Step::new("apply")
                }
            }
            Op::Revision(RevisionWrite::Create { body }) => Step {
                name: body
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                ..revision("createRevision")
            },
            Op::Revision(RevisionWrite::Update { name, .. }) => Step {
                name: Some(name.clone()),
                ..revision("updateRevision")
            },
            Op::Revision(RevisionWrite::Delete { name, .. }) => Step {
                name: Some(name.clone()),
                ..revision("deleteRevision")
            },
            Op::Revision(RevisionWrite::SetOwners { name, adopt, .. }) => Step {
                name: Some(name.clone()),
                ..revision(if *adopt {
                    "adoptRevision"
                } else {
                    "releaseRevision"
                })
            },
            Op::WriteStatus { .. } => Step::new("writeStatus"),
            Op::PatchObject { changed, .. } => Step {
                detail: Some(changed.join(", ")),
                ..Step::new("patchObject")
            },
            Op::Event { kind, reason, .. } => Step {
                detail: Some(format!(
                    "{} {reason}",
                    match kind {
                        EventType::Normal => "Normal",
                        EventType::Warning => "Warning",
                    }
                )),
                ..Step::new("event")
            },
        }
    }
}

/// The fields `desired` sets to something other than what `current`
/// holds (a list counts as one field; fields the server added to it do
/// not make it differ). The type and the object's identity
/// are left out: they are what the apply is for.
pub fn changed_fields(desired: &Value, current: &Value) -> Vec<FieldChange> {
    let mut out = Vec::new();
    walk(desired, current, String::new(), &mut out);
    out.retain(|c| {
        !matches!(
            c.path.as_str(),
            "apiVersion" | "kind" | "metadata.name" | "metadata.namespace"
        ) && !c.path.starts_with("metadata.ownerReferences")
    });
    out
}

fn walk(desired: &Value, current: &Value, path: String, out: &mut Vec<FieldChange>) {
    match (desired, current) {
        // A map where there was none: each of its fields is new.
        (Value::Object(want), have @ (Value::Object(_) | Value::Null)) => {
            for (key, value) in want {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                walk(value, have.get(key).unwrap_or(&Value::Null), child, out);
            }
        }
        // A list the object holds with fields the server defaulted is
        // the same list (`plan::contains`, as the planner compares).
        (want, have) if !crate::decide::plan::contains(have, want) => out.push(FieldChange {
            path,
            from: have.clone(),
            to: want.clone(),
        }),
        _ => {}
    }
}

/// The fields a JSON patch of `current` changes (a decorator's edit of its
/// object, `Op::PatchObject`), with both values: an `add` or `replace`
/// sets its path (a map, each field of it that differs), a `remove`
/// clears it, a `test` changes nothing. Paths are named as
/// [`changed_fields`] names them, a label's key whole
/// (`metadata.labels.example.com/tier`).
pub fn patched_fields(current: &Value, patch: &[Value]) -> Vec<FieldChange> {
    let mut out = Vec::new();
    for op in patch {
        let (Some(kind), Some(pointer)) = (
            op.get("op").and_then(Value::as_str),
            op.get("path").and_then(Value::as_str),
        ) else {
            continue;
        };
        let from = current.pointer(pointer).unwrap_or(&Value::Null);
        let path = dotted(pointer);
        match kind {
            "add" | "replace" => {
                let to = op.get("value").unwrap_or(&Value::Null);
                if to.is_object() {
                    out.extend(changed_fields(to, from).into_iter().map(|f| FieldChange {
                        path: format!("{path}.{}", f.path),
                        ..f
                    }));
                } else if from != to {
                    out.push(FieldChange {
                        path,
                        from: from.clone(),
                        to: to.clone(),
                    });
                }
            }
            "remove" => out.push(FieldChange {
                path,
                from: from.clone(),
                to: Value::Null,
            }),
            _ => {}
        }
    }
    out
}

/// A JSON pointer (RFC 6901) as a dotted path, its segments unescaped.
fn dotted(pointer: &str) -> String {
    pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn change(path: &str, from: Value, to: Value) -> FieldChange {
        FieldChange {
            path: path.to_owned(),
            from,
            to,
        }
    }

    #[test]
    fn a_patch_names_each_key_it_sets_or_removes_with_both_values() {
        let current = json!({
            "metadata": {"uid": "u1", "labels": {"tier": "web", "remove-me": "x"}},
            "status": {"ready": false, "seen": 1},
        });
        let patch = [
            json!({"op": "test", "path": "/metadata/uid", "value": "u1"}),
            json!({"op": "add", "path": "/metadata/labels/example.com~1tier", "value": "db"}),
            json!({"op": "add", "path": "/metadata/labels/tier", "value": "web"}),
            json!({"op": "remove", "path": "/metadata/labels/remove-me"}),
            json!({"op": "add", "path": "/status", "value": {"ready": true, "seen": 1}}),
        ];
        assert_eq!(
            patched_fields(&current, &patch),
            [
                change("metadata.labels.example.com/tier", Value::Null, json!("db")),
                change("metadata.labels.remove-me", json!("x"), Value::Null),
                change("status.ready", json!(false), json!(true)),
            ],
            "the UID's test and a key set to what it holds change nothing"
        );
    }

    #[test]
    fn a_map_the_object_lacks_is_each_of_its_keys_new() {
        let patch = [
            json!({"op": "test", "path": "/metadata/annotations", "value": null}),
            json!({"op": "add", "path": "/metadata/annotations", "value": {"a": "1", "b~c": "2"}}),
        ];
        assert_eq!(
            patched_fields(&json!({"metadata": {}}), &patch),
            [
                change("metadata.annotations.a", Value::Null, json!("1")),
                change("metadata.annotations.b~c", Value::Null, json!("2")),
            ]
        );
    }
}
