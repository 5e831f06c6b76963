//! Which parents a change queues (docs/metacontroller.md §3.2, §1.6): pure
//! functions of the change and what the caches hold, as kube's
//! `trigger_owners` is.
//!
//! - a parent's own change queues it, if this controller handles it;
//! - a child's change queues its controller owner, if that is a parent of
//!   this controller with the same UID; an orphan queues every parent whose
//!   child selector matches it (one of them may adopt it);
//! - a related object's change queues the parents whose last customize
//!   answer selects it.
//!
//! `worker.rs` subscribes these to the caches and sends what they return to
//! the queue.

use crate::config::HookVersion;
use crate::controller::cache::{CachedObject, Change, SharedType, TypeCache};
use crate::controller::queue::ParentKey;
use crate::decide::model::{Driven, ResolvedType, controller_of};
use crate::decide::plan;
use crate::decide::related::{self, Scope};
use crate::decide::selector::SelectorExt;
use kube::{Resource, ResourceExt};
use metahook_core::protocol::RelatedResourceRule;
use std::sync::Arc;

/// Where parents are looked up: the parent cache, or a list in tests.
pub trait Parents {
    fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<CachedObject>>;
    /// Every parent, or those in `namespace`.
    fn list(&self, namespace: Option<&str>) -> Vec<Arc<CachedObject>>;
}

impl Parents for TypeCache {
    fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<CachedObject>> {
        TypeCache::get(self, namespace, name)
    }
    fn list(&self, namespace: Option<&str>) -> Vec<Arc<CachedObject>> {
        TypeCache::list(self, namespace)
    }
}

impl Parents for [Arc<CachedObject>] {
    fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<CachedObject>> {
        self.iter()
            .find(|p| p.namespace().as_deref() == namespace && p.name_any() == name)
            .cloned()
    }
    fn list(&self, namespace: Option<&str>) -> Vec<Arc<CachedObject>> {
        self.iter()
            .filter(|p| namespace.is_none_or(|ns| p.namespace().as_deref() == Some(ns)))
            .cloned()
            .collect()
    }
}

/// The key of a parent of `driven`.
pub fn parent_key(driven: &Driven, parent: &impl Resource) -> ParentKey {
    let key = ParentKey::new_with(&parent.name_any(), SharedType::of(&driven.parent.api));
    match &parent.meta().namespace {
        Some(namespace) => key.within(namespace),
        None => key,
    }
}

/// Whether `driven` handles a parent: it matches the controller's label
/// (and a decorator's annotation) filter, or still carries its finalizer (so that finalizing finishes
/// after the labels change).
pub fn handles(driven: &Driven, parent: &CachedObject) -> bool {
    let finalizer = driven.finalizer();
    parent.finalizers().contains(&finalizer)
        || driven.selects(|| parent.labels(), || parent.annotations())
}

/// A parent's own change: the parent, if `driven` handles it.
pub fn parent_changed(driven: &Driven, change: &Change) -> Option<ParentKey> {
    let parent = change.object();
    handles(driven, parent.as_ref()).then(|| parent_key(driven, parent.as_ref()))
}

/// A child's change: its controller owner, or the parents that may adopt
/// an orphan.
pub fn child_changed(
    driven: &Driven,
    change: &Change,
    parents: &(impl Parents + ?Sized),
) -> Vec<ParentKey> {
    let (child, deleted) = match change {
        Change::Applied(o) | Change::Listed(o) => (o, o.metadata.deletion_timestamp.is_some()),
        Change::Deleted(o) => (o, true),
    };
    let namespace = if driven.parent.namespaced {
        child.metadata.namespace.as_deref()
    } else {
        None
    };
    match controller_of(child.as_ref()) {
        Some(owner) => {
            let group = owner.api_version.split_once('/').map_or("", |(g, _)| g);
            if group != driven.parent.api.group || owner.kind != driven.parent.api.kind {
                return Vec::new();
            }
            parents
                .get(namespace, &owner.name)
                // A parent recreated under the same name is another parent.
                .filter(|p| p.metadata.uid.as_deref() == Some(owner.uid.as_str()))
                .filter(|p| handles(driven, p.as_ref()))
                .map(|p| parent_key(driven, p.as_ref()))
                .into_iter()
                .collect()
        }
        // A deleted orphan leaves nothing to adopt; a decorator adopts
        // nothing (Metacontroller's decorators only see what they created).
        None if deleted || driven.is_decorator() => Vec::new(),
        None => {
            // Decoded once for every candidate parent's selector.
            let labels = child.labels();
            parents
                .list(namespace)
                .into_iter()
                .filter(|p| {
                    // The selector is the parent's spec: decoded for this
                    // (an orphan's change; a parent that fails to decode
                    // cannot adopt it now, and its own reconcile reports why).
                    handles(driven, p.as_ref())
                        && p.decode().is_ok_and(|p| {
                            plan::child_selector(driven, &p).is_ok_and(|s| s.matches(&labels))
                        })
                })
                .map(|p| parent_key(driven, p.as_ref()))
                .collect()
        }
    }
}

/// A related object's change: the parents whose customize rules (`answers`,
/// the last per parent) select it. `namespaces` is read only by rules with a
/// `namespaceSelector`.
pub fn related_changed(
    driven: &Driven,
    version: HookVersion,
    resource: &ResolvedType,
    change: &Change,
    answers: &[(ParentKey, Arc<Vec<RelatedResourceRule>>)],
    namespaces: &[Arc<CachedObject>],
) -> Vec<ParentKey> {
    let obj = std::slice::from_ref(change.object());
    answers
        .iter()
        .filter(|(parent, rules)| {
            let scope = Scope {
                version,
                parent_namespace: if driven.parent.namespaced {
                    parent.namespace.as_deref()
                } else {
                    None
                },
                resource_namespaced: resource.namespaced,
            };
            rules.iter().enumerate().any(|(i, rule)| {
                rule.api_version == resource.api.api_version
                    && rule.resource == resource.api.plural
                    && related::select(i, rule, &scope, obj, namespaces)
                        .is_ok_and(|s| !s.is_empty())
            })
        })
        .map(|(parent, _)| parent.clone())
        .collect()
}

#[cfg(test)]
mod tests;
