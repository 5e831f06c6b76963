//! A DecoratorController's pass (docs/metacontroller.md §6): which objects
//! are its attachments, and what follows from its hook's answer.
//!
//! As Metacontroller v4.17 does it: the status is replaced only when the
//! hook gives one and it differs (through the status subresource when the
//! type has one, with the object otherwise, and with no
//! `observedGeneration` added); labels and annotations are edited key by
//! key, `null` removing one; `finalized` removes the finalizer (after
//! them, in a patch of its own); then the attachments are managed as a
//! composite's children —
//! deleted when not desired, applied with the object as their controller
//! owner — unless the object is going and no finalizer of ours holds it.

use super::applied::AppliedMemory;
use super::children::manage_children;
use super::desired::{self, DECORATOR_ANNOTATION};
use super::error::PlanError;
use super::existing::Existing;
use super::finalizer::{finalized, gc_holds, has_finalizer, is_deleting};
use super::op::{Op, Plan};
use super::status::condition_events;
use crate::decide::model::{Driven, controller_of};
use crate::wire::decorator::DecoratorAnswer;
use kube::ResourceExt;
use kube::core::DynamicObject;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The attachments of `parent` among `candidates`, per type: controlled by
/// it (same UID) and marked with this decorator's name. Nothing is adopted
/// or released.
pub(super) fn attachments(
    ctl: &Driven,
    parent: &DynamicObject,
    candidates: &[Vec<Arc<DynamicObject>>],
) -> Vec<Vec<Arc<DynamicObject>>> {
    let uid = parent.uid().unwrap_or_default();
    candidates
        .iter()
        .map(|objects| {
            objects
                .iter()
                .filter(|o| controller_of(o.as_ref()).is_some_and(|r| r.uid == uid))
                .filter(|o| {
                    o.annotations()
                        .get(DECORATOR_ANNOTATION)
                        .map(String::as_str)
                        == Some(ctl.name())
                })
                .cloned()
                .collect()
        })
        .collect()
}

/// Plans what follows from a decorator hook's `answer`. `observed` are the
/// attachments the hook saw; `existing` finds any cached object of an
/// attachment type by name (a desired name another object holds is left
/// alone).
pub fn decorate(
    ctl: &Driven,
    parent: &DynamicObject,
    observed: &[Vec<Arc<DynamicObject>>],
    existing: &(impl Existing + ?Sized),
    answer: DecoratorAnswer,
    memory: &dyn AppliedMemory,
) -> Result<Plan, PlanError> {
    let resync_after = answer
        .resync_after_seconds
        .filter(|s| *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok());
    // Checked before anything is written: one bad attachment fails the
    // pass, as in Metacontroller.
    let desired = desired::check_desired(ctl, parent, &answer.attachments)?;
    let mut ops = Vec::new();
    let uid = parent.metadata.uid.as_deref().unwrap_or_default();
    let read_at = parent
        .metadata
        .resource_version
        .as_deref()
        .unwrap_or_default();
    // Our own last writes, if the cache has not caught up with them yet.
    let written = memory.written_status(uid, read_at);
    let old_status = written.as_ref().or_else(|| parent.data.get("status"));
    let new_status = answer.status.map(Value::Object);
    let status_change = new_status.filter(|s| old_status != Some(s));
    let written_metadata = memory.written_metadata(uid, read_at);
    let (labels, annotations) = match &written_metadata {
        Some(w) => (w.labels.as_ref(), w.annotations.as_ref()),
        None => (
            parent.metadata.labels.as_ref(),
            parent.metadata.annotations.as_ref(),
        ),
    };
    let mut changed = Vec::new();
    let mut patch = vec![json!({"op": "test", "path": "/metadata/uid", "value": uid})];
    edit("labels", labels, &answer.labels, &mut patch, &mut changed);
    edit(
        "annotations",
        annotations,
        &answer.annotations,
        &mut patch,
        &mut changed,
    );
    let mut events = Vec::new();
    if let Some(status) = status_change {
        let catching_up = is_deleting(parent);
        events.extend(condition_events(old_status, &status, catching_up));
        if ctl.status_subresource {
            ops.push(Op::WriteStatus { status });
        } else {
            patch.push(json!({"op": "add", "path": "/status", "value": status}));
            changed.push("status".to_owned());
        }
    }
    if !changed.is_empty() {
        ops.push(Op::PatchObject { patch, changed });
    }
    let finalizer = ctl.finalizer();
    let has = has_finalizer(parent, &finalizer);
    if answer.finalized == Some(true) && has {
        let [remove, event] = finalized(parent, &finalizer);
        ops.push(remove);
        events.push(event);
    }
    // As Metacontroller: judged on the object the hook saw, so the
    // attachments a finalize hook still wants are applied even as the
    // finalizer goes.
    let finalizer_holds = has && ctl.config.hooks.finalize.is_some() && !gc_holds(parent);
    if !is_deleting(parent) || finalizer_holds {
        manage_children(ctl, parent, observed, existing, &desired, memory, &mut ops);
    }
    ops.extend(events);
    // Events go last: they never hold up the writes that matter.
    ops.sort_by_key(|op| matches!(op, Op::Event { .. }));
    Ok(Plan {
        ops,
        deferred_status: None,
        resync_after,
        failure: None,
    })
}

/// The JSON patch operations for one of the object's string maps (`labels`
/// or `annotations`) after the hook's edits, if they change it. Key by key:
/// `add` sets a key (replacing its value), `remove` removes one (and fails,
/// a stale cache, if it is gone already), so keys others wrote meanwhile
/// are kept and an edit already made is harmless. A map the object does
/// not have is added whole, after a `test` that it still has none.
fn edit(
    key: &str,
    current: Option<&BTreeMap<String, String>>,
    edits: &BTreeMap<String, Option<String>>,
    patch: &mut Vec<Value>,
    changed: &mut Vec<String>,
) {
    let path = format!("/metadata/{key}");
    let mut ops = Vec::new();
    let mut created = Map::new();
    for (k, v) in edits {
        let now = current.and_then(|m| m.get(k));
        let member = format!("{path}/{}", pointer_escape(k));
        match v {
            Some(v) if now != Some(v) => {
                created.insert(k.clone(), Value::String(v.clone()));
                ops.push(json!({"op": "add", "path": member, "value": v}));
            }
            None if now.is_some() => ops.push(json!({"op": "remove", "path": member})),
            _ => continue,
        }
        changed.push(format!("metadata.{key}.{k}"));
    }
    if ops.is_empty() {
        return;
    }
    if current.is_none() {
        // Nothing to remove from a map that is not there: only additions.
        patch.push(json!({"op": "test", "path": path, "value": null}));
        patch.push(json!({"op": "add", "path": path, "value": created}));
    } else {
        patch.extend(ops);
    }
}

/// A map key as a JSON pointer segment (RFC 6901): label keys hold `/`.
fn pointer_escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
