//! Which objects are the parent's: the parent's label filter, the children's
//! selector, and the claim that adopts and releases (docs/metacontroller.md
//! §3.5, §3.6).

use super::apply::owner_reference;
use super::error::PlanError;
use super::finalizer::is_deleting;
use super::op::{Op, target};
use crate::decide::model::{Driven, controller_of};
use crate::decide::selector::{self, Selector, SelectorExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::ResourceExt;
use kube::core::DynamicObject;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

/// Whether the controller's `parentResource.labelSelector` (if any), and a
/// decorator's `annotationSelector`, select `parent`.
pub(super) fn parent_matches_label_filter(
    ctl: &Driven,
    parent: &DynamicObject,
) -> Result<bool, PlanError> {
    let matches = |sel: &Option<LabelSelector>, values| match sel {
        None => Ok(true),
        Some(sel) => Ok(selector::parse(sel)
            .map_err(PlanError::BadSelector)?
            .matches(values)),
    };
    Ok(matches(&ctl.config.parent.label_selector, parent.labels())?
        && matches(&ctl.config.parent.annotation_selector, parent.annotations())?)
}

/// The selector children must match (docs/metacontroller.md §3.6).
pub fn child_selector(ctl: &Driven, parent: &DynamicObject) -> Result<Selector, PlanError> {
    if ctl.config.generate_selector {
        return Ok(selector::controller_uid(&parent.uid().unwrap_or_default()));
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

/// The claimed children per type; adopt and release operations appended to
/// `ops`.
pub(super) fn claim(
    ctl: &Driven,
    parent: &DynamicObject,
    candidates: &[Vec<Arc<DynamicObject>>],
    selector: &Selector,
    ops: &mut Vec<Op>,
) -> Vec<Vec<Arc<DynamicObject>>> {
    let parent_uid = parent.uid().unwrap_or_default();
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
            match claim_rule(obj, &parent_uid, matches, deleting) {
                Claim::Claimed => claimed.push(obj.clone()),
                Claim::Release => ops.push(Op::Release {
                    child: target(type_index, obj),
                    before: obj.metadata.owner_references.clone(),
                    after: owners_but(obj, &parent_uid),
                }),
                Claim::Adopt => {
                    if !verified {
                        ops.push(Op::VerifyParent);
                        verified = true;
                    }
                    ops.push(Op::Adopt {
                        child: target(type_index, obj),
                        before: obj.metadata.owner_references.clone(),
                        after: adopted_owners(ctl, parent, obj),
                    });
                    // The hook sees the cached copy, as with Metacontroller.
                    claimed.push(obj.clone());
                }
                Claim::Ignore => {}
            }
        }
        observed.push(claimed);
    }
    // A child type the caller had no candidates for is present and empty.
    observed.resize_with(ctl.children.len(), Vec::new);
    observed
}

/// What the claim rules (docs/metacontroller.md §3.5) do with one
/// candidate, given whether it `matches` the parent's selector: children
/// and ControllerRevisions alike.
pub(super) enum Claim {
    /// The parent controls it and it matches.
    Claimed,
    /// An orphan that matches, while neither is being deleted.
    Adopt,
    /// The parent controls it and it no longer matches (not while the
    /// parent is being deleted).
    Release,
    /// Another controller's, or nothing to do.
    Ignore,
}

pub(super) fn claim_rule(
    obj: &DynamicObject,
    parent_uid: &str,
    matches: bool,
    parent_deleting: bool,
) -> Claim {
    match controller_of(obj) {
        Some(owner) if owner.uid == parent_uid => match (matches, parent_deleting) {
            (true, _) => Claim::Claimed,
            (false, false) => Claim::Release,
            (false, true) => Claim::Ignore,
        },
        // Another controller's: never touched.
        Some(_) => Claim::Ignore,
        None if matches && !parent_deleting && !is_deleting(obj) => Claim::Adopt,
        None => Claim::Ignore,
    }
}

/// `obj`'s owner references once adopted: the parent's as controller, any
/// other kept.
pub(super) fn adopted_owners(
    ctl: &Driven,
    parent: &DynamicObject,
    obj: &DynamicObject,
) -> Vec<OwnerReference> {
    let mut after = owners_but(obj, &parent.uid().unwrap_or_default());
    after.push(owner_reference(ctl, parent));
    after
}

/// `obj`'s owner references without any to the object with UID `uid`.
pub(super) fn owners_but(obj: &DynamicObject, uid: &str) -> Vec<OwnerReference> {
    obj.owner_references()
        .iter()
        .filter(|r| r.uid != uid)
        .cloned()
        .collect()
}
