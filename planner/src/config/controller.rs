//! What a manifest becomes once checked: a [`ControllerConfig`] and its
//! parts, with Metacontroller's defaults filled in.

use super::webhook::Webhook;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;
use std::time::Duration;

/// Which of Metacontroller's controllers a manifest is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControllerKind {
    /// A CompositeController: parents that own children it claims by
    /// selector, a status it replaces.
    Composite,
    /// A DecoratorController (docs/metacontroller.md §6): existing objects
    /// it adds labels, annotations, a status and attachments to.
    Decorator,
}

/// One CompositeController or DecoratorController, in the supported subset.
/// For a decorator, `parent` is one of its `spec.resources` and `children`
/// its `spec.attachments`; a decorator of several resources is driven as
/// one controller per resource ([`ControllerConfig::per_resource`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerConfig {
    pub kind: ControllerKind,
    pub name: String,
    /// Where it came from, for messages.
    pub source: String,
    pub parent: ParentResource,
    /// A decorator's `spec.resources` after the first (which is `parent`).
    pub more_resources: Vec<ParentResource>,
    pub children: Vec<ChildResource>,
    pub generate_selector: bool,
    /// `resyncPeriodSeconds`, floored at one second as Metacontroller does.
    pub resync_period: Option<Duration>,
    pub hooks: Hooks,
    /// The whole object as read: sent as `controller` in every hook request.
    pub object: Value,
    /// The revision of the hooks it names, as its
    /// [`REVISION_ANNOTATION`] says: for hooks served elsewhere, which
    /// declare none to the driver.
    pub revision: Option<String>,
}

/// The annotation of a CompositeController or DecoratorController that
/// names the revision of the hooks it calls (an image tag, a commit): what
/// the driver's records and `metahook_driver_parents_answered` name when
/// the hooks answer over HTTP. Metacontroller ignores it.
pub const REVISION_ANNOTATION: &str = "metahook.dev/revision";

#[derive(Debug, Clone, PartialEq)]
pub struct ParentResource {
    pub api_version: String,
    pub resource: String,
    pub label_selector: Option<LabelSelector>,
    /// `revisionHistory.fieldPaths` (default `["spec"]`): the parent's
    /// fields a rolling update follows (docs/metacontroller.md §4.3). Read
    /// only when a child type rolls.
    pub revision_field_paths: Vec<String>,
    /// `ignoreStatusChanges`: an update queues the parent only when its
    /// generation, labels or annotations changed, or it is being deleted
    /// (the driver's `controller::ignored_status`).
    pub ignore_status_changes: bool,
    /// A decorator's `annotationSelector`, as a label selector over the
    /// annotations (`matchAnnotations` becomes `matchLabels`), as
    /// Metacontroller reads it.
    pub annotation_selector: Option<LabelSelector>,
}

impl ControllerConfig {
    pub fn is_decorator(&self) -> bool {
        self.kind == ControllerKind::Decorator
    }

    /// One configuration per resource it drives: a composite's parent, or
    /// each of a decorator's `spec.resources`, each with its own cache and
    /// queue (the applier runs over one type).
    pub fn per_resource(mut self) -> Vec<ControllerConfig> {
        let more = std::mem::take(&mut self.more_resources);
        let mut out: Vec<ControllerConfig> = more
            .into_iter()
            .map(|parent| ControllerConfig {
                parent,
                ..self.clone()
            })
            .collect();
        out.insert(0, self);
        out
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChildResource {
    pub api_version: String,
    pub resource: String,
    pub update_strategy: UpdateStrategy,
    /// `updateStrategy.statusChecks.conditions`: what a rolled child must
    /// report before the next one rolls.
    pub status_checks: Vec<ConditionCheck>,
}

/// How an existing child that differs from the desired one is changed
/// (docs/metacontroller.md §4): the declarations' own type, so a controller
/// declared in Rust and one read from a manifest name the same thing.
pub use metahook_core::UpdateStrategy;

/// What the driver asks of an [`UpdateStrategy`] beyond its name.
pub trait UpdateStrategyExt {
    /// Whether children of this type roll one at a time (§4.3).
    fn is_rolling(&self) -> bool;
}

impl UpdateStrategyExt for UpdateStrategy {
    fn is_rolling(&self) -> bool {
        matches!(self, Self::RollingRecreate | Self::RollingInPlace)
    }
}

/// One of `statusChecks.conditions`: the child must have a
/// `status.conditions[]` entry of this type, with this status and reason
/// when they are given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionCheck {
    pub type_: String,
    pub status: Option<String>,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hooks {
    pub sync: Hook,
    pub finalize: Option<Hook>,
    pub customize: Option<Hook>,
}

impl Hooks {
    /// The hook a `sync` or `finalize` pass calls ([`for_pass`]).
    pub fn for_pass(&self, kind: metahook_core::HookKind) -> &Hook {
        for_pass(kind, &self.sync, self.finalize.as_ref())
    }
}

/// Of a controller's `sync` and `finalize` hooks, as configured or once
/// resolved, the one a `sync` or `finalize` pass calls: `finalize` falls
/// back to `sync`.
pub fn for_pass<'a, T>(
    kind: metahook_core::HookKind,
    sync: &'a T,
    finalize: Option<&'a T>,
) -> &'a T {
    match kind {
        metahook_core::HookKind::Finalize => finalize.unwrap_or(sync),
        _ => sync,
    }
}

/// `v1` (the default) or `v2`: how object maps are keyed, how strictly a
/// response is decoded, where related objects may come from
/// (docs/metacontroller.md §1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookVersion {
    V1,
    V2,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    pub version: HookVersion,
    pub webhook: Webhook,
}

impl Hook {
    /// Whether an unknown top-level key in its answer is an error:
    /// `responseUnMarshallMode`, else strict for v2 and loose for v1, as
    /// Metacontroller decodes (docs/metacontroller.md §1.1).
    pub fn strict(&self) -> bool {
        self.webhook
            .strict
            .unwrap_or(self.version == HookVersion::V2)
    }
}
