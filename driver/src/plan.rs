//! The planner: every decision of one reconcile
//! (docs/metacontroller.md §3.3), as pure functions of what was observed and
//! what the hook answered. The executor performs the operations and decides
//! nothing.
//!
//! A reconcile is planned in two halves around the hook call, because the
//! hook must see the parent after the finalizer is added and the children
//! after the claim:
//! - [`prelude`]: ignore filter, finalizer add/remove, claim (adopt,
//!   release), which hook to call;
//! - [`after_hook`]: finalizer removal on `finalized`, desired-child checks,
//!   deletes, applies per update strategy, status, events, requeue.

use super::config::UpdateStrategy;
use super::model::Driven;
use super::selector::{self, CONTROLLER_UID, Selector, SelectorError, SelectorExt};
use super::wire::HookResponse;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::ResourceExt;
use kube::core::DynamicObject;
use metahook_hooks::HookKind;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

/// Metacontroller's own annotation from its client-side apply; never sent
/// with a server-side apply.
pub const LAST_APPLIED: &str = "metacontroller.k8s.io/last-applied-configuration";

/// Finalizers with which the garbage collector is working on a parent:
/// children are left to it.
const GC_FINALIZERS: &[&str] = &["foregroundDeletion", "orphan"];

/// An object the plan touches, named precisely enough for a precondition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub type_index: usize,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteReason {
    /// Observed, owned, not in the hook's desired set.
    NotDesired,
    /// Differs from desired under the `Recreate` strategy: deleted now,
    /// created again once it is gone.
    Recreate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

/// One API operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Set the parent's finalizers from `before` (a precondition) to `after`.
    AddFinalizer {
        before: Option<Vec<String>>,
        after: Vec<String>,
    },
    RemoveFinalizer {
        before: Option<Vec<String>>,
        after: Vec<String>,
    },
    /// Read the parent from the API server (not the cache) and stop unless it
    /// exists with the same UID and is not being deleted: done once before
    /// adopting anything.
    VerifyParent,
    /// Set a child's owner references from `before` (a precondition) to
    /// `after`: adopting adds the parent as controller.
    Adopt {
        child: Target,
        before: Option<Vec<OwnerReference>>,
        after: Vec<OwnerReference>,
    },
    /// Remove the parent's owner reference from a child that no longer
    /// matches the selector.
    Release {
        child: Target,
        before: Option<Vec<OwnerReference>>,
        after: Vec<OwnerReference>,
    },
    /// Delete with a UID precondition and background propagation.
    DeleteChild { child: Target, reason: DeleteReason },
    /// Server-side apply (field manager `metahook`, forced).
    ApplyChild {
        type_index: usize,
        namespace: Option<String>,
        name: String,
        body: Value,
        fingerprint: u64,
    },
    /// Replace `.status` through the status subresource.
    WriteStatus { status: Value },
    /// A Kubernetes Event on the parent.
    Event {
        kind: EventType,
        reason: String,
        note: String,
    },
}

/// What a prelude leads to.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Nothing more this time (the parent is not this controller's).
    Stop,
    /// Call `hook` with the claimed children, one list per child type.
    CallHook {
        hook: HookKind,
        observed: Vec<Vec<Arc<DynamicObject>>>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Prelude {
    pub ops: Vec<Op>,
    pub next: Next,
}

/// The rest of a reconcile, once the hook has answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub ops: Vec<Op>,
    /// `resyncAfterSeconds`, when positive.
    pub resync_after: Option<Duration>,
    /// The reconcile fails once `ops` are done. Only when `finalized` meets
    /// desired children that break the rules: Metacontroller removes the
    /// finalizer (docs/metacontroller.md §3.3 step 9) before it checks them
    /// (step 10).
    pub failure: Option<PlanError>,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum PlanError {
    #[error(".spec.selector must have either matchLabels, matchExpressions, or both")]
    NoSelector,
    #[error(".spec.selector is invalid")]
    BadSelector(#[source] SelectorError),
    #[error("desired child {index}: {message}")]
    BadChild { index: usize, message: String },
    #[error(
        "labels on desired child {kind} {name} don't match the parent's selector (nothing was applied)"
    )]
    SelectorMismatch { kind: String, name: String },
    #[error(
        "desired child {index} is a {api_version} {kind}, which is not one of the controller's childResources"
    )]
    UndeclaredChild {
        index: usize,
        api_version: String,
        kind: String,
    },
}

/// What the executor remembers of its last apply of a child; see
/// [`after_hook`] for how it avoids repeating an apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub fingerprint: u64,
    pub uid: String,
    pub generation: i64,
    pub resource_version: String,
}

/// Looks up [`Applied`] by (child type, namespace, name).
pub trait AppliedMemory {
    fn applied(&self, type_index: usize, namespace: Option<&str>, name: &str) -> Option<Applied>;
}

/// Remembers nothing: every desired child is applied.
pub struct NoMemory;

impl AppliedMemory for NoMemory {
    fn applied(&self, _: usize, _: Option<&str>, _: &str) -> Option<Applied> {
        None
    }
}

fn is_deleting(obj: &DynamicObject) -> bool {
    obj.metadata.deletion_timestamp.is_some()
}

fn has_finalizer(obj: &DynamicObject, name: &str) -> bool {
    obj.metadata.finalizers.iter().flatten().any(|f| f == name)
}

fn controller_ref(obj: &DynamicObject) -> Option<&OwnerReference> {
    obj.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

fn parent_matches_label_filter(ctl: &Driven, parent: &DynamicObject) -> Result<bool, PlanError> {
    match &ctl.config.parent.label_selector {
        None => Ok(true),
        Some(sel) => Ok(selector::parse(sel)
            .map_err(PlanError::BadSelector)?
            .matches(parent.labels())),
    }
}

/// The selector children must match (docs/metacontroller.md §3.6).
pub fn child_selector(ctl: &Driven, parent: &DynamicObject) -> Result<Selector, PlanError> {
    if ctl.config.generate_selector {
        return Ok(selector::controller_uid(
            parent.metadata.uid.as_deref().unwrap_or_default(),
        ));
    }
    let raw = parent
        .data
        .get("spec")
        .and_then(|s| s.get("selector"))
        .cloned()
        .unwrap_or(Value::Null);
    let selector: LabelSelector = serde_json::from_value(raw).map_err(|_| PlanError::NoSelector)?;
    let selector = selector::parse(&selector).map_err(PlanError::BadSelector)?;
    if selector.selects_all() {
        return Err(PlanError::NoSelector);
    }
    Ok(selector)
}

/// The controller owner reference a child of `parent` carries.
pub fn owner_reference(ctl: &Driven, parent: &DynamicObject) -> OwnerReference {
    OwnerReference {
        api_version: ctl.parent.api.api_version.clone(),
        kind: ctl.parent.api.kind.clone(),
        name: parent.metadata.name.clone().unwrap_or_default(),
        uid: parent.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn target(type_index: usize, obj: &DynamicObject) -> Target {
    Target {
        type_index,
        namespace: obj.metadata.namespace.clone(),
        name: obj.metadata.name.clone().unwrap_or_default(),
        uid: obj.metadata.uid.clone().unwrap_or_default(),
    }
}

/// Steps 1–4 and the choice of hook in step 6 of docs/metacontroller.md §3.3.
/// `candidates` holds, per child type, the cached objects the parent could
/// own (the caller may pass every object of the type: the scope filter is
/// applied here).
pub fn prelude(
    ctl: &Driven,
    parent: &DynamicObject,
    candidates: &[Vec<Arc<DynamicObject>>],
) -> Result<Prelude, PlanError> {
    let finalizer = ctl.finalizer();
    let has = has_finalizer(parent, &finalizer);
    let deleting = is_deleting(parent);
    let label_match = parent_matches_label_filter(ctl, parent)?;
    // Step 2: not ours.
    if !has && !label_match {
        return Ok(Prelude {
            ops: Vec::new(),
            next: Next::Stop,
        });
    }
    let mut ops = Vec::new();
    let before = parent.metadata.finalizers.clone();
    let current: Vec<String> = before.clone().unwrap_or_default();
    let finalize_hook = ctl.config.hooks.finalize.is_some();
    let mut has_after = has;
    if finalize_hook && !has && !deleting {
        // Added before anything else, never to a terminating object.
        let mut after = current.clone();
        after.push(finalizer.clone());
        ops.push(Op::AddFinalizer { before, after });
        has_after = true;
    } else if !finalize_hook && has {
        let after = current
            .iter()
            .filter(|f| **f != finalizer)
            .cloned()
            .collect();
        ops.push(Op::RemoveFinalizer { before, after });
        has_after = false;
        // Step 2 again, on the parent without the finalizer.
        if !label_match {
            return Ok(Prelude {
                ops,
                next: Next::Stop,
            });
        }
    }
    let selector = child_selector(ctl, parent)?;
    let observed = claim(ctl, parent, candidates, &selector, &mut ops);
    let hook = if finalize_hook && (deleting || (has_after && !label_match)) {
        HookKind::Finalize
    } else {
        HookKind::Sync
    };
    Ok(Prelude {
        ops,
        next: Next::CallHook { hook, observed },
    })
}

/// docs/metacontroller.md §3.5: claimed children per type; adopt and release
/// operations appended.
fn claim(
    ctl: &Driven,
    parent: &DynamicObject,
    candidates: &[Vec<Arc<DynamicObject>>],
    selector: &Selector,
    ops: &mut Vec<Op>,
) -> Vec<Vec<Arc<DynamicObject>>> {
    let parent_uid = parent.metadata.uid.as_deref().unwrap_or_default();
    let parent_ns = parent.metadata.namespace.as_deref();
    let deleting = is_deleting(parent);
    let mut verified = false;
    let mut observed = Vec::with_capacity(ctl.children.len());
    for (type_index, objects) in candidates.iter().enumerate().take(ctl.children.len()) {
        let mut seen = HashSet::new();
        let mut claimed = Vec::new();
        for obj in objects {
            // A namespaced parent owns children in its own namespace only.
            if ctl.parent.namespaced && obj.metadata.namespace.as_deref() != parent_ns {
                continue;
            }
            let uid = obj.metadata.uid.as_deref().unwrap_or_default();
            if !seen.insert(uid.to_owned()) {
                continue;
            }
            let matches = selector.matches(obj.labels());
            match controller_ref(obj) {
                Some(owner) if owner.uid == parent_uid => {
                    if matches {
                        claimed.push(obj.clone());
                    } else if !deleting {
                        let before = obj.metadata.owner_references.clone();
                        let after = before
                            .iter()
                            .flatten()
                            .filter(|r| r.uid != parent_uid)
                            .cloned()
                            .collect();
                        ops.push(Op::Release {
                            child: target(type_index, obj),
                            before,
                            after,
                        });
                    }
                }
                // Another controller's: never touched.
                Some(_) => {}
                None => {
                    if matches && !deleting && !is_deleting(obj) {
                        if !verified {
                            ops.push(Op::VerifyParent);
                            verified = true;
                        }
                        let before = obj.metadata.owner_references.clone();
                        let mut after: Vec<OwnerReference> = before
                            .iter()
                            .flatten()
                            .filter(|r| r.uid != parent_uid)
                            .cloned()
                            .collect();
                        after.push(owner_reference(ctl, parent));
                        ops.push(Op::Adopt {
                            child: target(type_index, obj),
                            before,
                            after,
                        });
                        // The hook sees the cached copy, as with Metacontroller.
                        claimed.push(obj.clone());
                    }
                }
            }
        }
        observed.push(claimed);
    }
    // A child type the caller had no candidates for is present and empty.
    observed.resize_with(ctl.children.len(), Vec::new);
    observed
}

/// A desired child, checked and normalised.
struct Desired {
    type_index: usize,
    namespace: Option<String>,
    name: String,
    /// The object as the hook gave it after defaulting (namespace,
    /// controller-uid): what the `Recreate` comparison uses.
    object: Value,
}

/// Steps 7–12 of docs/metacontroller.md §3.3 for one hook response. `parent`
/// is the parent the hook was called with; `observed` the claimed children it
/// saw; `existing` every cached object of each child type in scope (claimed
/// or not), so that a desired child whose name is taken by an object this
/// parent does not own is left alone, as Metacontroller's create meets
/// `AlreadyExists`.
pub fn after_hook(
    ctl: &Driven,
    parent: &DynamicObject,
    observed: &[Vec<Arc<DynamicObject>>],
    existing: &[Vec<Arc<DynamicObject>>],
    response: HookResponse,
    memory: &dyn AppliedMemory,
) -> Result<Plan, PlanError> {
    let resync_after = (response.resync_after_seconds > 0.0)
        .then(|| Duration::try_from_secs_f64(response.resync_after_seconds).ok())
        .flatten();
    let mut ops = Vec::new();
    let finalizer = ctl.finalizer();
    let mut has = has_finalizer(parent, &finalizer);
    if response.finalized && has {
        let before = parent.metadata.finalizers.clone();
        let after = before
            .iter()
            .flatten()
            .filter(|f| **f != finalizer)
            .cloned()
            .collect();
        ops.push(Op::RemoveFinalizer { before, after });
        has = false;
    }
    let desired = match check_desired(ctl, parent, &response.children) {
        Ok(desired) => desired,
        Err(err) if !ops.is_empty() => {
            return Ok(Plan {
                ops,
                resync_after,
                failure: Some(err),
            });
        }
        Err(err) => return Err(err),
    };
    let gc_finalizer = parent
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| GC_FINALIZERS.contains(&f.as_str()));
    // Children are managed unless the parent is going and this controller's
    // finalizer no longer holds it (or the garbage collector has it).
    if !is_deleting(parent) || (has && !gc_finalizer) {
        manage_children(ctl, parent, observed, existing, &desired, memory, &mut ops);
    }
    let status = status_with_generation(parent, response.status);
    let old_status = parent.data.get("status");
    if old_status != Some(&status) {
        ops.extend(condition_events(old_status, &status));
        ops.push(Op::WriteStatus { status });
    }
    // Events go last: they never hold up the writes that matter.
    ops.sort_by_key(|op| matches!(op, Op::Event { .. }));
    Ok(Plan {
        ops,
        resync_after,
        failure: None,
    })
}

fn check_desired(
    ctl: &Driven,
    parent: &DynamicObject,
    children: &[Value],
) -> Result<Vec<Desired>, PlanError> {
    let selector = child_selector(ctl, parent)?;
    let parent_ns = parent
        .metadata
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty());
    let parent_uid = parent.metadata.uid.clone().unwrap_or_default();
    let mut out: Vec<Desired> = Vec::new();
    for (index, child) in children.iter().enumerate() {
        let bad = |message: &str| PlanError::BadChild {
            index,
            message: message.to_owned(),
        };
        let mut object = child.clone();
        let map = object.as_object_mut().ok_or_else(|| bad("not an object"))?;
        let api_version = map
            .get("apiVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("apiVersion is missing"))?
            .to_owned();
        let kind = map
            .get("kind")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("kind is missing"))?
            .to_owned();
        let type_index = ctl
            .children
            .iter()
            .position(|t| t.resource.api.api_version == api_version && t.resource.api.kind == kind)
            .ok_or_else(|| PlanError::UndeclaredChild {
                index,
                api_version: api_version.clone(),
                kind: kind.clone(),
            })?;
        let child_type = &ctl.children[type_index];
        let metadata = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .ok_or_else(|| bad("metadata is not an object"))?;
        let name = metadata
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| bad("metadata.name is missing"))?
            .to_owned();
        let given_ns = metadata
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty())
            .map(str::to_owned);
        let namespace = match (child_type.resource.namespaced, &parent_ns) {
            (false, _) => {
                if given_ns.is_some() {
                    return Err(bad(
                        "a cluster-scoped object cannot have metadata.namespace",
                    ));
                }
                None
            }
            (true, Some(parent_ns)) => match given_ns {
                None => Some(parent_ns.clone()),
                Some(ns) if ns == *parent_ns => Some(ns),
                Some(_) => {
                    return Err(bad(
                        "a namespaced parent can only own children in its own namespace",
                    ));
                }
            },
            (true, None) => Some(given_ns.ok_or_else(|| {
                bad("metadata.namespace is required: the parent is cluster-scoped")
            })?),
        };
        if !child_type.resource.namespaced && ctl.parent.namespaced {
            return Err(bad("a namespaced parent cannot own a cluster-scoped child"));
        }
        if let Some(ns) = &namespace {
            metadata.insert("namespace".to_owned(), Value::String(ns.clone()));
        }
        let mut child_labels = BTreeMap::new();
        match metadata.get("labels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(l)) => {
                for (k, v) in l {
                    let v = v
                        .as_str()
                        .ok_or_else(|| bad(&format!("label {k:?} is not a string")))?;
                    child_labels.insert(k.clone(), v.to_owned());
                }
            }
            Some(_) => return Err(bad("metadata.labels is not a map")),
        }
        if ctl.config.generate_selector && !child_labels.contains_key(CONTROLLER_UID) {
            child_labels.insert(CONTROLLER_UID.to_owned(), parent_uid.clone());
            let labels = metadata
                .entry("labels")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(l) = labels.as_object_mut() {
                l.insert(CONTROLLER_UID.to_owned(), Value::String(parent_uid.clone()));
            } else {
                *labels = serde_json::json!({ CONTROLLER_UID: parent_uid });
            }
        }
        if !selector.matches(&child_labels) {
            return Err(PlanError::SelectorMismatch { kind, name });
        }
        let desired = Desired {
            type_index,
            namespace,
            name,
            object,
        };
        // A later duplicate replaces an earlier one, as in Metacontroller's
        // index of desired children.
        match out.iter_mut().find(|d| {
            d.type_index == desired.type_index
                && d.namespace == desired.namespace
                && d.name == desired.name
        }) {
            Some(existing) => *existing = desired,
            None => out.push(desired),
        }
    }
    Ok(out)
}

fn manage_children(
    ctl: &Driven,
    parent: &DynamicObject,
    observed: &[Vec<Arc<DynamicObject>>],
    existing: &[Vec<Arc<DynamicObject>>],
    desired: &[Desired],
    memory: &dyn AppliedMemory,
    ops: &mut Vec<Op>,
) {
    let same = |d: &Desired, type_index: usize, obj: &DynamicObject| {
        d.type_index == type_index
            && d.namespace.as_deref()
                == obj
                    .metadata
                    .namespace
                    .as_deref()
                    .filter(|ns| !ns.is_empty())
            && Some(d.name.as_str()) == obj.metadata.name.as_deref()
    };
    // Deletes first, then applies, as Metacontroller orders them.
    for (type_index, objects) in observed.iter().enumerate() {
        for obj in objects {
            if is_deleting(obj) {
                continue;
            }
            if !desired.iter().any(|d| same(d, type_index, obj)) {
                ops.push(Op::DeleteChild {
                    child: target(type_index, obj),
                    reason: DeleteReason::NotDesired,
                });
            }
        }
    }
    for d in desired {
        let found = observed
            .get(d.type_index)
            .and_then(|objs| objs.iter().find(|o| same(d, d.type_index, o)));
        let body = apply_body(ctl, parent, &d.object);
        let fingerprint = fingerprint(&body);
        let apply = Op::ApplyChild {
            type_index: d.type_index,
            namespace: d.namespace.clone(),
            name: d.name.clone(),
            body,
            fingerprint,
        };
        let Some(obs) = found else {
            // An apply would take over an object that is not ours.
            let taken = existing
                .get(d.type_index)
                .is_some_and(|objs| objs.iter().any(|o| same(d, d.type_index, o)));
            if !taken {
                ops.push(apply);
            }
            continue;
        };
        if is_deleting(obs) {
            continue;
        }
        let unchanged = memory
            .applied(d.type_index, d.namespace.as_deref(), &d.name)
            .is_some_and(|a| still_as_applied(&a, fingerprint, obs));
        if unchanged {
            continue;
        }
        match ctl.children[d.type_index].strategy {
            UpdateStrategy::OnDelete => {}
            UpdateStrategy::InPlace => ops.push(apply),
            UpdateStrategy::Recreate => {
                if !contains(&super::wire::object_json(obs), &d.object) {
                    ops.push(Op::DeleteChild {
                        child: target(d.type_index, obs),
                        reason: DeleteReason::Recreate,
                    });
                }
            }
        }
    }
}

/// Whether the observed child is still what the last apply of this same
/// body produced: same object (UID), and not changed since (generation, or
/// resourceVersion for types without a generation).
fn still_as_applied(applied: &Applied, fingerprint: u64, obs: &DynamicObject) -> bool {
    if applied.fingerprint != fingerprint
        || Some(applied.uid.as_str()) != obs.metadata.uid.as_deref()
    {
        return false;
    }
    match obs.metadata.generation {
        Some(g) if g > 0 => g == applied.generation,
        _ => obs.metadata.resource_version.as_deref() == Some(applied.resource_version.as_str()),
    }
}

/// Whether every field of `desired` is in `observed` with the same value:
/// maps by key, lists item by item (same length), so fields the server
/// defaulted do not count as a difference.
pub fn contains(observed: &Value, desired: &Value) -> bool {
    match (observed, desired) {
        (Value::Object(o), Value::Object(d)) => d.iter().all(|(k, dv)| {
            o.get(k).is_some_and(|ov| contains(ov, dv)) || (dv.is_null() && !o.contains_key(k))
        }),
        (Value::Array(o), Value::Array(d)) => {
            o.len() == d.len() && o.iter().zip(d).all(|(ov, dv)| contains(ov, dv))
        }
        _ => observed == desired,
    }
}

/// The server-side apply body: the desired object with the controller owner
/// reference, without status, server-populated metadata or Metacontroller's
/// last-applied annotation.
fn apply_body(ctl: &Driven, parent: &DynamicObject, desired: &Value) -> Value {
    let mut body = desired.clone();
    if let Some(map) = body.as_object_mut() {
        map.remove("status");
        if let Some(Value::Object(meta)) = map.get_mut("metadata") {
            for key in [
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "managedFields",
                "selfLink",
            ] {
                meta.remove(key);
            }
            if let Some(Value::Object(annotations)) = meta.get_mut("annotations") {
                annotations.remove(LAST_APPLIED);
            }
            let owner = owner_reference(ctl, parent);
            let refs = meta
                .entry("ownerReferences")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(refs) = refs {
                let present = refs
                    .iter()
                    .any(|r| r.get("uid").and_then(Value::as_str) == Some(owner.uid.as_str()));
                if !present {
                    refs.push(serde_json::to_value(&owner).unwrap_or(Value::Null));
                }
            }
        }
    }
    body
}

/// A stable hash of a body within this process.
fn fingerprint(body: &Value) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    body.to_string().hash(&mut hasher);
    hasher.finish()
}

/// The hook's status (or `{}`), with `observedGeneration` set to the
/// generation the hook saw: Metacontroller replaces the whole status.
fn status_with_generation(parent: &DynamicObject, status: Option<Map<String, Value>>) -> Value {
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
fn condition_events(old: Option<&Value>, new: &Value) -> Vec<Op> {
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
