//! Rolling updates (docs/metacontroller.md §4.3): when a child type's
//! update strategy is `RollingRecreate` or `RollingInPlace`, the parent's
//! history is kept in ControllerRevisions (Metacontroller's own type, so a
//! cluster moves between the two engines mid-rollout), each revision claims
//! the children it last updated, and children move to the latest revision
//! one at a time, each after the ones already moved pass their checks.
//!
//! Two pure steps around the hook calls: [`revisions`] (`history.rs`)
//! reads the parent's revisions and makes one parent per revision (the
//! latest, then each older one's fields written over it) to call the sync
//! hook with; [`roll`] takes
//! the answers, moves at most one child, and says which ControllerRevisions
//! to write and which single answer the rest of the plan follows: the
//! latest revision's children, except those an older revision still
//! claims, which keep that revision's version; the latest's status with an
//! `Updated` condition saying where the rollout is. A child moves once
//! the ones already moved are well (`checks.rs`).

mod checks;
mod history;

pub use history::{Claims, Revision, claim_revisions, revisions};

use crate::decide::model::Driven;
use crate::decide::plan::error::PlanError;
use crate::decide::plan::finalizer::{has_finalizer, is_deleting};
use crate::decide::plan::op::{Op, RevisionWrite};
use crate::wire::{HookResponse, object_json};
use checks::{ChildKey, Latest, all_well, find, strategy};
use history::write;
use kube::ResourceExt;
use kube::core::DynamicObject;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The condition a rolling parent's status carries.
const UPDATED: &str = "Updated";

/// Whether this pass of `parent` goes through revisions: some child type
/// rolls, and the parent is not going away without our finalizer (then
/// no child is managed, and one hook call gives the status).
pub fn rolls(ctl: &Driven, parent: &DynamicObject) -> bool {
    ctl.rolls() && (!is_deleting(parent) || has_finalizer(parent, &ctl.finalizer()))
}

/// What [`roll`] decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Rolled {
    /// The ControllerRevisions' writes: all of them before any child's.
    pub ops: Vec<Op>,
    /// The one answer the rest of the plan follows.
    pub response: HookResponse,
}

/// Where the rollout of `parent` goes next, given each revision's answer
/// (`responses[i]` for `revisions[i]`) and the observed children.
pub fn roll(
    ctl: &Driven,
    parent: &DynamicObject,
    mut revisions: Vec<Revision>,
    mut responses: Vec<HookResponse>,
    observed: &[Vec<Arc<DynamicObject>>],
) -> Result<Rolled, PlanError> {
    if revisions.is_empty() || revisions.len() != responses.len() {
        return Err(PlanError::Rolling(
            "one hook answer per revision is needed".to_owned(),
        ));
    }
    let desired: Vec<BTreeMap<ChildKey, usize>> = responses
        .iter()
        .map(|r| desired_keys(&r.children))
        .collect();
    let latest = Latest::new(ctl, parent, &responses[0]);
    let rolling = |group: &str, kind: &str| strategy(ctl, group, kind).is_some();

    // Claims of kinds that no longer roll, or of children the latest
    // revision no longer wants (they are deleted now), are dropped; a child
    // claimed twice stays with the first (the latest).
    let mut claimed: BTreeMap<ChildKey, usize> = BTreeMap::new();
    for (i, rev) in revisions.iter_mut().enumerate() {
        for c in &mut rev.children {
            let (group, kind) = (c.api_group.clone(), c.kind.clone());
            let keep = rolling(&group, &kind);
            c.names.retain(|n| {
                let key = (group.clone(), kind.clone(), n.clone());
                keep && desired[0].contains_key(&key) && !claimed.contains_key(&key) && {
                    claimed.insert(key, i);
                    true
                }
            });
        }
        rev.children.retain(|c| !c.names.is_empty());
    }

    // The latest revision takes what no one claims, and what would not
    // change by moving.
    let latest_wants: Vec<ChildKey> = responses[0]
        .children
        .iter()
        .filter_map(child_key)
        .filter(|(group, kind, _)| rolling(group, kind))
        .collect();
    for key in &latest_wants {
        let (group, kind, name) = key;
        match claimed.get(key) {
            None => {
                revisions[0].add(group, kind, name);
                claimed.insert(key.clone(), 0);
            }
            Some(0) => {}
            Some(&owner) => {
                let up_to_date = find(ctl, observed, group, kind, name)
                    .is_some_and(|obs| latest.has(key, obs, &object_json(obs)));
                if up_to_date {
                    revisions[owner].remove(group, kind, name);
                    revisions[0].add(group, kind, name);
                    claimed.insert(key.clone(), 0);
                }
            }
        }
    }

    // At most one child moves, the first (in the hook's order) not on the
    // latest revision, once those on it are all well.
    let mut condition = None;
    for key in &latest_wants {
        let (group, kind, name) = key;
        if claimed.get(key) == Some(&0) {
            continue;
        }
        condition = Some(match all_well(ctl, &revisions[0], &latest, observed) {
            Err(why) => ("False", "RolloutWaiting", why),
            Ok(()) => {
                for rev in &mut revisions[1..] {
                    rev.remove(group, kind, name);
                }
                revisions[0].add(group, kind, name);
                claimed.insert(key.clone(), 0);
                (
                    "False",
                    "RolloutProgressing",
                    format!("updating {kind} {name}"),
                )
            }
        });
        break;
    }
    let (status, reason, message) = condition.unwrap_or_else(|| {
        (
            "True",
            "OnLatestRevision",
            format!("latest ControllerRevision: {}", revisions[0].name),
        )
    });

    // Older revisions that claim nothing are forgotten (no rollback).
    let mut ops = Vec::new();
    let mut kept = Vec::new();
    for (i, rev) in revisions.into_iter().enumerate() {
        if i > 0 && rev.children.is_empty() {
            if let Some(obs) = &rev.observed {
                ops.push(Op::Revision(RevisionWrite::Delete {
                    name: rev.name.clone(),
                    uid: obs.uid().unwrap_or_default(),
                }));
            }
            continue;
        }
        kept.push((i, rev));
    }
    for (_, rev) in &kept {
        ops.extend(write(ctl, parent, rev));
    }

    // The answer: the latest's children, each one an older revision still
    // claims in that revision's version (when it has one).
    let mut children = std::mem::take(&mut responses[0].children);
    for child in &mut children {
        let Some(key) = child_key(child) else {
            continue;
        };
        let Some(&owner) = claimed.get(&key).filter(|&&o| o != 0) else {
            continue;
        };
        if let Some((_, rev)) = kept.iter().find(|(i, _)| *i == owner)
            && rev.claims(&key.0, &key.1, &key.2)
            && let Some(&index) = desired[owner].get(&key)
        {
            *child = responses[owner].children[index].clone();
        }
    }
    let mut status_map = responses[0].status.take().unwrap_or_default();
    set_condition(&mut status_map, UPDATED, status, reason, &message)?;
    let resync_after_seconds = responses
        .iter()
        .map(|r| r.resync_after_seconds)
        .filter(|s| *s > 0.0)
        .reduce(f64::min)
        .unwrap_or(0.0);
    let finalized = responses.iter().all(|r| r.finalized);
    Ok(Rolled {
        ops,
        response: HookResponse {
            status: Some(status_map),
            children,
            resync_after_seconds,
            finalized,
        },
    })
}

/// Sets condition `type_` in the status (replacing one of that type).
fn set_condition(
    status: &mut Map<String, Value>,
    type_: &str,
    state: &str,
    reason: &str,
    message: &str,
) -> Result<(), PlanError> {
    let condition = json!({"type": type_, "status": state, "reason": reason, "message": message});
    let conditions = status
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if conditions.is_null() {
        *conditions = Value::Array(Vec::new());
    }
    let Value::Array(list) = conditions else {
        return Err(PlanError::Rolling(
            "the hook's status.conditions is not a list: no Updated condition can be set"
                .to_owned(),
        ));
    };
    match list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
    {
        Some(c) => *c = condition,
        None => list.push(condition),
    }
    Ok(())
}

/// Each desired child's `(apiGroup, kind, name)` and its index.
fn desired_keys(children: &[Value]) -> BTreeMap<ChildKey, usize> {
    children
        .iter()
        .enumerate()
        .filter_map(|(i, c)| child_key(c).map(|k| (k, i)))
        .collect()
}

fn child_key(child: &Value) -> Option<ChildKey> {
    let api_version = child.get("apiVersion")?.as_str()?;
    let group = api_version.split_once('/').map_or("", |(group, _)| group);
    Some((
        group.to_owned(),
        child.get("kind")?.as_str()?.to_owned(),
        child.pointer("/metadata/name")?.as_str()?.to_owned(),
    ))
}
