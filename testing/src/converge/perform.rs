//! A planned operation performed on the in-memory cluster, as the API
//! server would perform the driver's request, and described for a
//! [`NotSettled`](crate::NotSettled).

use crate::store::{Key, Store, differences};
use metahook_planner::decide::model::DrivenChild;
use metahook_planner::decide::plan::{self, Op};
use serde_json::Value;

/// Performs one planned operation on `store`, whose parent is
/// `parent_key`; records it in `writes` if it is a write, with the
/// fields it changed (or failed to change).
pub(super) fn perform(
    store: &mut Store,
    children: &[DrivenChild],
    parent_key: &Key,
    now: &str,
    op: Op,
    writes: &mut Vec<String>,
) {
    let parent_name = parent_key.describe();
    match op {
        Op::AddFinalizer { after, .. } => {
            store.edit(parent_key, |p| {
                p["metadata"]["finalizers"] = serde_json::json!(after);
            });
            writes.push(format!("finalizer added to {parent_name}"));
        }
        Op::RemoveFinalizer { after, .. } => {
            store.edit(parent_key, |p| {
                p["metadata"]["finalizers"] = serde_json::json!(after);
            });
            store.collect_if_released(parent_key, now);
            writes.push(format!("finalizer removed from {parent_name}"));
        }
        Op::VerifyParent | Op::Event { .. } | Op::PatchObject { .. } | Op::Revision(_) => {}
        Op::Adopt { child, after, .. } | Op::Release { child, after, .. } => {
            let key = target_key(children, &child);
            store.edit(&key, |c| {
                c["metadata"]["ownerReferences"] = serde_json::json!(after);
            });
            writes.push(format!("owner references of {} set", key.describe()));
        }
        Op::DeleteChild { child, .. } => {
            let key = target_key(children, &child);
            store.delete(&key, now);
            writes.push(format!("{} deleted", key.describe()));
        }
        Op::ApplyChild {
            namespace, body, ..
        } => {
            let mut body = body;
            if let Some(ns) = namespace {
                body["metadata"]["namespace"] = Value::String(ns);
            }
            let key = Key::of(&body);
            let before = store.get(&key).cloned();
            store.apply(&body, now);
            let after = store.get(&key).cloned().unwrap_or(Value::Null);
            let why = match &before {
                None => vec!["created".to_owned()],
                Some(before) => {
                    let changed = differences(before, &after, 8);
                    if changed.is_empty() {
                        // Applied, and nothing changed: the driver saw a
                        // field it sends that the object does not hold.
                        unheld("", &body, &after)
                    } else {
                        changed
                    }
                }
            };
            writes.push(format!("apply {}: {}", key.describe(), why.join("; ")));
        }
        Op::WriteStatus { status } => {
            let old = store
                .get(parent_key)
                .map(|p| p["status"].clone())
                .unwrap_or(Value::Null);
            let mut changed = differences(&old, &status, 8);
            for c in &mut changed {
                *c = format!("status.{c}");
            }
            store.edit(parent_key, |p| p["status"] = status);
            writes.push(format!("status of {parent_name}: {}", changed.join("; ")));
        }
    }
}

fn target_key(children: &[DrivenChild], target: &plan::Target) -> Key {
    Key {
        group_key: children
            .get(target.type_index)
            .map(|c| c.resource.map_key())
            .unwrap_or_default(),
        namespace: target.namespace.clone().unwrap_or_default(),
        name: target.name.clone(),
    }
}

/// The fields of `body` that `stored` does not hold as sent.
fn unheld(path: &str, body: &Value, stored: &Value) -> Vec<String> {
    match (body, stored) {
        (Value::Object(b), Value::Object(s)) => b
            .iter()
            .flat_map(|(k, v)| {
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                unheld(&sub, v, s.get(k).unwrap_or(&Value::Null))
            })
            .collect(),
        _ if body == stored => Vec::new(),
        _ => vec![format!(
            "{path}: sent {body}, the server keeps {stored} (a default or a normalization the answer does not match)"
        )],
    }
}
