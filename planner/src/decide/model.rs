//! A controller as the driver runs it: its validated configuration plus what
//! discovery said about its parent and child types.

use crate::config::{ControllerConfig, ControllerKind, UpdateStrategy, UpdateStrategyExt};
use crate::decide::selector::{self, SelectorExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Resource, ResourceExt};
use std::collections::BTreeMap;

/// A type resolved to its API resource: group, version, kind, plural, and
/// whether it is namespaced, as the API server's discovery says (the
/// driver) or a declaration does (`render --plan`, the tests). What a
/// declaration names, before that, is core's `TypeRef`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedType {
    pub api: ApiResource,
    pub namespaced: bool,
}

impl ResolvedType {
    pub fn new(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        ResolvedType {
            api: ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk(group, version, kind),
                plural,
            ),
            namespaced,
        }
    }

    /// `Kind.group/version`, or `Kind.version` for the core group: the outer
    /// key of a hook request's object maps (docs/metacontroller.md §1.2).
    pub fn map_key(&self) -> String {
        if self.api.group.is_empty() {
            format!("{}.{}", self.api.kind, self.api.version)
        } else {
            format!("{}.{}/{}", self.api.kind, self.api.group, self.api.version)
        }
    }
}

/// A child type of a [`Driven`] controller and how its objects are
/// updated (a declaration's is core's `ChildType`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrivenChild {
    pub resource: ResolvedType,
    pub strategy: UpdateStrategy,
}

/// One CompositeController (or one resource of a DecoratorController),
/// ready to drive.
#[derive(Debug, Clone)]
pub struct Driven {
    pub config: ControllerConfig,
    pub parent: ResolvedType,
    pub children: Vec<DrivenChild>,
    /// The label keys `--shard-selector` names: a child carries its
    /// parent's values of them, so that the shard's filtered child watch
    /// sees it (docs/architecture.md, "Shards").
    pub shard_labels: Vec<String>,
    /// Whether the parent type has a status subresource (discovery says):
    /// a composite's must; a decorator writes a status through it only
    /// when it has one, with the object otherwise, as Metacontroller does.
    pub status_subresource: bool,
}

impl Driven {
    /// The same finalizer as Metacontroller's, so a cluster can move between
    /// the two.
    pub fn finalizer(&self) -> String {
        match self.config.kind {
            ControllerKind::Composite => {
                format!("metacontroller.io/compositecontroller-{}", self.config.name)
            }
            ControllerKind::Decorator => {
                format!("metacontroller.io/decoratorcontroller-{}", self.config.name)
            }
        }
    }

    /// Whether some child type rolls (docs/metacontroller.md §4.3): its
    /// parents keep ControllerRevisions.
    pub fn rolls(&self) -> bool {
        self.children.iter().any(|c| c.strategy.is_rolling())
    }

    pub fn is_decorator(&self) -> bool {
        self.config.kind == ControllerKind::Decorator
    }

    /// Whether the controller's parent filter selects a parent with these
    /// labels and annotations (each read only when a selector needs it): the
    /// `labelSelector` and, for a decorator, the `annotationSelector` (an
    /// absent one selects everything). A selector that does not parse
    /// selects nothing (the manifest check refuses those before start).
    pub fn selects(
        &self,
        labels: impl FnOnce() -> BTreeMap<String, String>,
        annotations: impl FnOnce() -> BTreeMap<String, String>,
    ) -> bool {
        let parent_filter = &self.config.parent;
        matches(parent_filter.label_selector.as_ref(), labels)
            && matches(parent_filter.annotation_selector.as_ref(), annotations)
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }
}

/// Whether `selector` (none: everything) selects these labels or
/// annotations, read only when there is a selector to match.
fn matches(
    selector: Option<&LabelSelector>,
    values: impl FnOnce() -> BTreeMap<String, String>,
) -> bool {
    selector.is_none_or(|s| selector::parse(s).is_ok_and(|s| s.matches(&values())))
}

/// `namespace/name`, or `name` for cluster-scoped objects: how messages and
/// hook requests name an object (queues use kube's `ObjectRef`).
pub fn namespaced_name(obj: &impl Resource) -> String {
    key_of(
        obj.meta().namespace.as_deref(),
        obj.meta().name.as_deref().unwrap_or_default(),
    )
}

pub fn key_of(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_owned(),
    }
}

/// The owner reference marked `controller: true`, if any: the one object
/// that controls `obj` (Kubernetes allows at most one).
pub fn controller_of(obj: &impl Resource) -> Option<&OwnerReference> {
    obj.owner_references()
        .iter()
        .find(|r| r.controller == Some(true))
}
