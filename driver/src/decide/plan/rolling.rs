//! Rolling updates (docs/metacontroller.md §4.3): when a child type's
//! update strategy is `RollingRecreate` or `RollingInPlace`, the parent's
//! history is kept in ControllerRevisions (Metacontroller's own type, so a
//! cluster moves between the two engines mid-rollout), each revision claims
//! the children it last updated, and children move to the latest revision
//! one at a time, each after the ones already moved pass their checks.
//!
//! Two pure steps around the hook calls: [`revisions`] reads the parent's
//! revisions and makes one parent per revision (the latest, then each older
//! one's fields written over it) to call the sync hook with; [`roll`] takes
//! the answers, moves at most one child, and says which ControllerRevisions
//! to write and which single answer the rest of the plan follows: the
//! latest revision's children, except those an older revision still
//! claims, which keep that revision's version; the latest's status with an
//! `Updated` condition saying where the rollout is.

use super::apply::{apply_body, owner_reference, with_fingerprint};
use super::children::as_desired;
use super::claim::{Claim, adopted_owners, child_selector, claim_rule, owners_but};
use super::desired::check_desired;
use super::{Op, PlanError, RevisionWrite, has_finalizer, is_deleting};
use crate::config::{ConditionCheck, UpdateStrategy, UpdateStrategyExt};
use crate::decide::model::Driven;
use crate::decide::revisions::revision_type;
use crate::decide::selector::SelectorExt;
use crate::hook::wire::{HookResponse, object_json};
use kube::ResourceExt;
use kube::core::DynamicObject;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The labels that keep one parent type's revisions apart from another's.
const LABEL_API_GROUP: &str = "metacontroller.k8s.io/apiGroup";
const LABEL_RESOURCE: &str = "metacontroller.k8s.io/resource";

/// The condition a rolling parent's status carries.
const UPDATED: &str = "Updated";

/// Whether this pass of `parent` goes through revisions: some child type
/// rolls, and the parent is not going away without our finalizer (then
/// no child is managed, and one hook call gives the status).
pub fn rolls(ctl: &Driven, parent: &DynamicObject) -> bool {
    ctl.rolls() && (!is_deleting(parent) || has_finalizer(parent, &ctl.finalizer()))
}

/// A ControllerRevision's `children[]`: the names of one child kind it
/// claims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claims {
    pub api_group: String,
    pub kind: String,
    pub names: Vec<String>,
}

/// One revision of a parent.
#[derive(Debug, Clone, PartialEq)]
pub struct Revision {
    /// The parent as this revision had it: the hook is called with it.
    pub parent: DynamicObject,
    /// Its ControllerRevision's name.
    pub name: String,
    /// The ControllerRevision it was read from; `None` for a new one.
    pub observed: Option<Arc<DynamicObject>>,
    /// `parentPatch`: the parent's `fieldPaths` as this revision had them.
    pub patch: Value,
    pub children: Vec<Claims>,
}

impl Revision {
    fn claims(&self, group: &str, kind: &str, name: &str) -> bool {
        self.children
            .iter()
            .any(|c| c.api_group == group && c.kind == kind && c.names.iter().any(|n| n == name))
    }

    fn add(&mut self, group: &str, kind: &str, name: &str) {
        match self
            .children
            .iter_mut()
            .find(|c| c.api_group == group && c.kind == kind)
        {
            Some(c) if c.names.iter().any(|n| n == name) => {}
            Some(c) => c.names.push(name.to_owned()),
            None => self.children.push(Claims {
                api_group: group.to_owned(),
                kind: kind.to_owned(),
                names: vec![name.to_owned()],
            }),
        }
    }

    fn remove(&mut self, group: &str, kind: &str, name: &str) {
        for c in &mut self.children {
            if c.api_group == group && c.kind == kind {
                c.names.retain(|n| n != name);
            }
        }
        self.children.retain(|c| !c.names.is_empty());
    }
}

/// Which of the ControllerRevisions in the parent's namespace (`cached`)
/// are the parent's, by the claim rules children follow
/// (docs/metacontroller.md §3.5, §4.3 step 1), with the parent's selector
/// plus the type labels: those it controls that match; orphans that match,
/// adopted (after one read of the parent, [`Op::VerifyParent`]); those it
/// controls that no longer match are released. The ops go before any
/// other of the pass.
pub fn claim_revisions(
    ctl: &Driven,
    parent: &DynamicObject,
    cached: &[Arc<DynamicObject>],
) -> Result<(Vec<Arc<DynamicObject>>, Vec<Op>), PlanError> {
    let selector = child_selector(ctl, parent)?;
    let uid = parent.uid().unwrap_or_default();
    let deleting = is_deleting(parent);
    let (mut claimed, mut ops) = (Vec::new(), Vec::new());
    for obj in cached {
        if obj.namespace() != parent.namespace() {
            continue;
        }
        let labels = obj.labels();
        let matches = labels.get(LABEL_API_GROUP) == Some(&ctl.parent.api.group)
            && labels.get(LABEL_RESOURCE) == Some(&ctl.parent.api.plural)
            && selector.matches(labels);
        let set_owners = |after, adopt| {
            Op::Revision(RevisionWrite::SetOwners {
                name: obj.name_any(),
                uid: obj.uid().unwrap_or_default(),
                before: obj.metadata.owner_references.clone(),
                after,
                adopt,
            })
        };
        match claim_rule(obj, &uid, matches, deleting) {
            Claim::Claimed => claimed.push(obj.clone()),
            Claim::Release => ops.push(set_owners(owners_but(obj, &uid), false)),
            Claim::Adopt => {
                if !ops.contains(&Op::VerifyParent) {
                    ops.insert(0, Op::VerifyParent);
                }
                ops.push(set_owners(adopted_owners(ctl, parent, obj), true));
                claimed.push(obj.clone());
            }
            Claim::Ignore => {}
        }
    }
    Ok((claimed, ops))
}

/// The parent's revisions, the latest first (a new one when no
/// ControllerRevision holds the parent's current fields), then one per
/// older ControllerRevision with its fields written over the parent.
/// `claimed`: the parent's ControllerRevisions, as [`claim_revisions`]
/// found them.
pub fn revisions(
    ctl: &Driven,
    parent: &DynamicObject,
    claimed: &[Arc<DynamicObject>],
) -> Result<Vec<Revision>, PlanError> {
    let paths = &ctl.config.parent.revision_field_paths;
    let parent_json = object_json(parent);
    let latest_patch = restrict(&parent_json, paths);
    let uid = parent.uid().unwrap_or_default();
    let mut latest = Revision {
        parent: parent.clone(),
        name: revision_name(ctl, &uid, &latest_patch),
        observed: None,
        patch: latest_patch,
        children: Vec::new(),
    };
    let mut older = Vec::new();
    for obj in claimed {
        if is_deleting(obj) {
            continue;
        }
        let name = obj.name_any();
        let bad = |message: String| PlanError::BadRevision {
            name: name.clone(),
            message,
        };
        let patch = obj.data.get("parentPatch").cloned().unwrap_or(json!({}));
        if !patch.is_object() {
            return Err(bad("parentPatch is not an object".to_owned()));
        }
        let children: Vec<Claims> = match obj.data.get("children") {
            None | Some(Value::Null) => Vec::new(),
            Some(c) => serde_json::from_value(c.clone()).map_err(|e| bad(e.to_string()))?,
        };
        if patch == latest.patch {
            latest.name = name;
            latest.observed = Some(obj.clone());
            latest.children = children;
            continue;
        }
        let mut old_parent = parent_json.clone();
        overwrite(&mut old_parent, &patch, paths);
        older.push(Revision {
            parent: serde_json::from_value(old_parent).map_err(|e| bad(e.to_string()))?,
            name,
            observed: Some(obj.clone()),
            patch,
            children,
        });
    }
    // A stable order for the older ones (the cache's is not).
    older.sort_by(|a, b| a.name.cmp(&b.name));
    older.insert(0, latest);
    Ok(older)
}

/// What [`roll`] decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Rolled {
    /// The ControllerRevisions' writes: all of them before any child's.
    pub ops: Vec<Op>,
    /// The one answer the rest of the plan follows.
    pub response: HookResponse,
}

/// A child of a rolling type, as `(apiGroup, kind, name)`.
type ChildKey = (String, String, String);

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

/// A rolling child type's strategy and status checks, by group and kind.
fn strategy<'a>(
    ctl: &'a Driven,
    group: &str,
    kind: &str,
) -> Option<(UpdateStrategy, &'a [ConditionCheck])> {
    ctl.children
        .iter()
        .zip(&ctl.config.children)
        .find(|(t, _)| t.resource.api.group == group && t.resource.api.kind == kind)
        .filter(|(t, _)| t.strategy.is_rolling())
        .map(|(t, c)| (t.strategy, c.status_checks.as_slice()))
}

/// The observed child of this group, kind and name.
fn find<'a>(
    ctl: &Driven,
    observed: &'a [Vec<Arc<DynamicObject>>],
    group: &str,
    kind: &str,
    name: &str,
) -> Option<&'a DynamicObject> {
    ctl.children
        .iter()
        .zip(observed)
        .filter(|(t, _)| t.resource.api.group == group && t.resource.api.kind == kind)
        .flat_map(|(_, objs)| objs.iter())
        .find(|o| o.metadata.name.as_deref() == Some(name))
        .map(Arc::as_ref)
}

/// The latest revision's children as the plan applies them (defaulted)
/// with the fingerprint each apply carries, by child: to tell whether an
/// observed child already is what the latest revision wants.
struct Latest(BTreeMap<ChildKey, (Value, u64)>);

impl Latest {
    fn new(ctl: &Driven, parent: &DynamicObject, answer: &HookResponse) -> Self {
        // An answer the plan refuses leaves nothing to compare: no child is
        // as it wants (and the plan fails later, naming the problem). Keyed
        // by child, not by the answer's index: of two with one name the
        // later counts, so the checked list can be shorter.
        let checked = check_desired(ctl, parent, &answer.children).unwrap_or_default();
        Latest(
            checked
                .into_iter()
                .map(|d| {
                    let api = &ctl.children[d.type_index].resource.api;
                    let (_, fingerprint) = with_fingerprint(apply_body(ctl, parent, &d.object));
                    let key = (api.group.clone(), api.kind.clone(), d.name);
                    (key, (d.object, fingerprint))
                })
                .collect(),
        )
    }

    /// Whether `obs` (`live` as JSON) is what the latest revision wants of
    /// child `key`.
    fn has(&self, key: &ChildKey, obs: &DynamicObject, live: &Value) -> bool {
        self.0
            .get(key)
            .is_some_and(|(object, fingerprint)| as_desired(obs, live, *fingerprint, object))
    }
}

/// Whether every child the latest revision claims is there, as it wants
/// it, has seen its latest spec (`RollingInPlace`, when it says) and
/// passes its status checks; if not, why.
fn all_well(
    ctl: &Driven,
    latest: &Revision,
    wanted: &Latest,
    observed: &[Vec<Arc<DynamicObject>>],
) -> Result<(), String> {
    for claims in &latest.children {
        let (group, kind) = (&claims.api_group, &claims.kind);
        let Some((method, checks)) = strategy(ctl, group, kind) else {
            continue;
        };
        for name in &claims.names {
            let Some(child) = find(ctl, observed, group, kind, name) else {
                return Err(format!("missing child {kind} {name}"));
            };
            let live = object_json(child);
            let key = (group.clone(), kind.clone(), name.clone());
            if !wanted.has(&key, child, &live) {
                return Err(format!("child {kind} {name} is not updated yet"));
            }
            if method == UpdateStrategy::RollingInPlace {
                // Only a child that reports observedGeneration is held to it.
                let seen = live
                    .pointer("/status/observedGeneration")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                if seen > 0 && seen < child.metadata.generation.unwrap_or(0) {
                    return Err(format!(
                        "child {kind} {name} with RollingInPlace update strategy hasn't observed latest spec"
                    ));
                }
            }
            status_checks(checks, &live)
                .map_err(|why| format!("child {kind} {name} failed status check: {why}"))?;
        }
    }
    Ok(())
}

/// `statusChecks.conditions`, each against the child's `status.conditions`.
fn status_checks(checks: &[ConditionCheck], child: &Value) -> Result<(), String> {
    let conditions = child
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for check in checks {
        let field = |c: &Value, key: &str| c.get(key).and_then(Value::as_str).map(str::to_owned);
        let Some(found) = conditions
            .iter()
            .find(|c| field(c, "type").as_deref() == Some(check.type_.as_str()))
        else {
            return Err(format!(
                "required condition type missing: {:?}",
                check.type_
            ));
        };
        for (key, want) in [("status", &check.status), ("reason", &check.reason)] {
            let Some(want) = want else { continue };
            let got = field(found, key).unwrap_or_default();
            if &got != want {
                return Err(format!(
                    "{:?} condition {key} is {got:?} (want {want:?})",
                    check.type_
                ));
            }
        }
    }
    Ok(())
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

/// The write that makes `rev`'s ControllerRevision what it now is: created
/// when new, its `children` replaced when they changed (guarded by the
/// resource version read), nothing otherwise.
fn write(ctl: &Driven, parent: &DynamicObject, rev: &Revision) -> Option<Op> {
    let children = serde_json::to_value(&rev.children).unwrap_or_default();
    let Some(observed) = &rev.observed else {
        let mut labels = revision_labels(ctl, parent);
        labels.insert(LABEL_API_GROUP.to_owned(), ctl.parent.api.group.clone());
        labels.insert(LABEL_RESOURCE.to_owned(), ctl.parent.api.plural.clone());
        let api = revision_type().api;
        return Some(Op::Revision(RevisionWrite::Create {
            body: json!({
                "apiVersion": api.api_version,
                "kind": api.kind,
                "metadata": {
                    "name": rev.name,
                    "namespace": parent.namespace(),
                    "labels": labels,
                    "ownerReferences": [owner_reference(ctl, parent)],
                },
                "parentPatch": rev.patch,
                "children": children,
            }),
        }));
    };
    let before = observed
        .data
        .get("children")
        .cloned()
        .unwrap_or(Value::Null);
    let unchanged = before == children
        || (rev.children.is_empty() && before.as_array().is_none_or(Vec::is_empty));
    (!unchanged).then(|| {
        Op::Revision(RevisionWrite::Update {
            name: rev.name.clone(),
            resource_version: observed.resource_version().unwrap_or_default(),
            children,
        })
    })
}

/// A new ControllerRevision's labels: what the parent's selector selects
/// (`controller-uid` when generated, else the pod-template labels).
fn revision_labels(ctl: &Driven, parent: &DynamicObject) -> BTreeMap<String, String> {
    if ctl.config.generate_selector {
        let uid = parent.uid().unwrap_or_default();
        return BTreeMap::from([(crate::decide::selector::CONTROLLER_UID.to_owned(), uid)]);
    }
    parent
        .data
        .pointer("/spec/template/metadata/labels")
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default()
}

/// `<resource>.<group>-<sha1 of parent UID and patch>`, as Metacontroller
/// names them, so that the same revision gets the same name in both.
fn revision_name(ctl: &Driven, parent_uid: &str, patch: &Value) -> String {
    let group = match ctl.parent.api.group.as_str() {
        "" => "core",
        g => g,
    };
    let mut prefix = format!("{}.{group}", ctl.parent.api.plural);
    // 253 characters at most: 40 for the hash, one for the dash.
    let mut end = prefix.len().min(253 - 41);
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    prefix.truncate(end);
    let mut data = parent_uid.as_bytes().to_vec();
    data.extend(serde_json::to_vec(patch).unwrap_or_default());
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &data);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}-{hex}")
}

/// The object with only `paths` (dotted) kept.
fn restrict(object: &Value, paths: &[String]) -> Value {
    let mut patch = json!({});
    for path in paths {
        if let Some(value) = object.pointer(&pointer(path)) {
            set(&mut patch, path, value.clone());
        }
    }
    patch
}

/// `paths` of `patch` written over `object` (those `patch` has).
fn overwrite(object: &mut Value, patch: &Value, paths: &[String]) {
    for path in paths {
        if let Some(value) = patch.pointer(&pointer(path)) {
            set(object, path, value.clone());
        }
    }
}

fn pointer(path: &str) -> String {
    path.split('.')
        .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// Sets a dotted path, making the maps on the way (a non-map on the way is
/// replaced, as Go's `SetNestedField` does).
fn set(object: &mut Value, path: &str, value: Value) {
    let mut at = object;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if !at.is_object() {
            *at = json!({});
        }
        let Value::Object(map) = at else { return };
        if parts.peek().is_none() {
            map.insert(part.to_owned(), value);
            return;
        }
        at = map.entry(part).or_insert_with(|| json!({}));
    }
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
