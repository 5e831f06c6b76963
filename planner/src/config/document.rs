//! A controller manifest of either kind, from its envelope to the
//! [`ControllerConfig`]: `apiVersion`, `kind`, `metadata.name` and a
//! `spec` with no key the driver does not know; then the kind's own fields
//! ([`composite`](super::composite), [`decorator`](super::decorator)); then
//! what both kinds share, `resyncPeriodSeconds` and the hooks. In that
//! order, so the first refusal is the same whichever kind it is.

use super::check::{Check, resync_period};
use super::manifest::{self, ControllerSpec};
use super::{ChildResource, ConfigError, ControllerConfig, ControllerKind, ParentResource};
use serde_json::Value;

/// What a kind's own fields make of its spec.
pub(super) struct Shape {
    pub(super) kind: ControllerKind,
    pub(super) parent: ParentResource,
    pub(super) more_resources: Vec<ParentResource>,
    pub(super) children: Vec<ChildResource>,
    pub(super) generate_selector: bool,
}

impl Check<'_> {
    /// A whole manifest whose `kind` must be `kind`; `own` checks that
    /// kind's own fields, taking them from the spec. `object` is the
    /// document as read, sent as `controller` in every hook request.
    pub(super) fn manifest<S: ControllerSpec>(
        &self,
        doc: manifest::Document<S>,
        kind: &str,
        object: Value,
        own: impl FnOnce(&mut S) -> Result<Shape, ConfigError>,
    ) -> Result<ControllerConfig, ConfigError> {
        self.known(&doc.other, "")?;
        let api_version = self.required(doc.api_version, "apiVersion")?;
        if api_version != "metacontroller.k8s.io/v1alpha1" {
            return Err(self.invalid("apiVersion", "must be metacontroller.k8s.io/v1alpha1"));
        }
        if self.required(doc.kind, "kind")? != kind {
            return Err(self.invalid("kind", "must be CompositeController or DecoratorController"));
        }
        let name = self.required(doc.metadata.name, "metadata.name")?;
        let revision = doc
            .metadata
            .annotations
            .and_then(|mut a| a.remove(super::controller::REVISION_ANNOTATION));
        let mut spec = doc
            .spec
            .ok_or_else(|| self.invalid("spec", "must be a mapping"))?;
        self.known(spec.other(), "spec")?;
        let shape = own(&mut spec)?;
        let shared = spec.shared();
        let resync_period = resync_period(shared.resync_period_seconds);
        let hooks = self.hooks_with_endpoints(shared.hooks, shared.endpoint_configs)?;
        Ok(ControllerConfig {
            kind: shape.kind,
            name,
            source: self.source_name.to_owned(),
            parent: shape.parent,
            more_resources: shape.more_resources,
            children: shape.children,
            generate_selector: shape.generate_selector,
            resync_period,
            hooks,
            object,
            revision,
        })
    }
}
