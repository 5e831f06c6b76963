//! The hook's desired children, checked against the controller's contract
//! and defaulted (namespace, controller-uid label) before anything is
//! written (docs/metacontroller.md §3.3 step 10): one bad child fails the
//! whole reconcile, as in Metacontroller.

use super::claim::child_selector;
use super::error::PlanError;
use crate::decide::model::{Driven, DrivenChild};
use crate::decide::selector::{CONTROLLER_UID, SelectorExt};
use kube::ResourceExt;
use kube::core::DynamicObject;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Metacontroller's mark on every attachment, naming the decorator: only
/// objects with it (and the object as controller owner) are attachments.
pub const DECORATOR_ANNOTATION: &str = "metacontroller.k8s.io/decorator-controller";

/// A desired child, checked and normalised.
pub(super) struct Desired {
    pub(super) type_index: usize,
    pub(super) namespace: Option<String>,
    pub(super) name: String,
    /// The object as the hook gave it after defaulting (namespace,
    /// controller-uid): what the `Recreate` comparison uses.
    pub(super) object: Value,
}

pub(super) fn check_desired(
    ctl: &Driven,
    parent: &DynamicObject,
    children: &[Value],
) -> Result<Vec<Desired>, PlanError> {
    // A decorator's attachments have no selector to match; they carry the
    // decorator's name instead (what tells them apart from other
    // decorators' objects owned by the same parent).
    let selector = if ctl.is_decorator() {
        None
    } else {
        Some(child_selector(ctl, parent)?)
    };
    let parent_ns = parent.namespace().filter(|ns| !ns.is_empty());
    let parent_uid = parent.uid().unwrap_or_default();
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
        let namespace =
            child_namespace(ctl, &ctl.children[type_index], &parent_ns, given_ns).map_err(bad)?;
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
        if let Some(selector) = &selector
            && !selector.matches(&child_labels)
        {
            return Err(PlanError::SelectorMismatch { kind, name });
        }
        if ctl.is_decorator() {
            let annotations = metadata
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            if annotations.is_null() {
                *annotations = Value::Object(Map::new());
            }
            annotations
                .as_object_mut()
                .ok_or_else(|| bad("metadata.annotations is not a map"))?
                .insert(
                    DECORATOR_ANNOTATION.to_owned(),
                    Value::String(ctl.name().to_owned()),
                );
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

/// Where a desired child goes: nowhere for a cluster-scoped type, the
/// parent's namespace for a namespaced parent, the one the child names for
/// a cluster-scoped parent. The error is the reason the child is refused.
fn child_namespace(
    ctl: &Driven,
    child_type: &DrivenChild,
    parent_ns: &Option<String>,
    given_ns: Option<String>,
) -> Result<Option<String>, &'static str> {
    let namespace = match (child_type.resource.namespaced, parent_ns) {
        (false, _) => {
            if given_ns.is_some() {
                return Err("a cluster-scoped object cannot have metadata.namespace");
            }
            None
        }
        (true, Some(parent_ns)) => match given_ns {
            None => Some(parent_ns.clone()),
            Some(ns) if ns == *parent_ns => Some(ns),
            Some(_) => {
                return Err("a namespaced parent can only own children in its own namespace");
            }
        },
        (true, None) => {
            Some(given_ns.ok_or("metadata.namespace is required: the parent is cluster-scoped")?)
        }
    };
    if !child_type.resource.namespaced && ctl.parent.namespaced {
        return Err("a namespaced parent cannot own a cluster-scoped child");
    }
    Ok(namespace)
}
