//! A CompositeController's own fields (docs/metacontroller.md §2):
//! `spec.parentResource`, `spec.childResources` and `generateSelector`. A
//! child type's rules serve a DecoratorController's attachments too.

use super::check::{Check, join};
use super::document::Shape;
use super::{
    ChildResource, ConditionCheck, ConfigError, ControllerKind, ParentResource, UpdateStrategy,
    manifest,
};

/// The parent's fields a rolling update follows when `revisionHistory`
/// names none (docs/metacontroller.md §4.3).
pub const DEFAULT_REVISION_FIELD_PATHS: &[&str] = &["spec"];

impl Check<'_> {
    /// A CompositeController's own fields, taken from its spec.
    pub(super) fn composite(&self, spec: &mut manifest::Spec) -> Result<Shape, ConfigError> {
        let parent = self.parent(
            spec.parent_resource
                .take()
                .ok_or_else(|| self.invalid("spec.parentResource", "must be a mapping"))?,
        )?;
        let children = spec
            .child_resources
            .take()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, child)| self.child(child, &format!("spec.childResources[{i}]")))
            .collect::<Result<_, _>>()?;
        Ok(Shape {
            kind: ControllerKind::Composite,
            parent,
            more_resources: Vec::new(),
            children,
            generate_selector: spec.generate_selector.unwrap_or(false),
        })
    }

    fn parent(&self, parent: manifest::Parent) -> Result<ParentResource, ConfigError> {
        let field = "spec.parentResource";
        self.known(&parent.other, field)?;
        if let Some(selector) = &parent.label_selector {
            crate::decide::selector::parse(selector)
                .map_err(|e| self.invalid(&join(field, "labelSelector"), e.to_string()))?;
        }
        let revision_field_paths = match parent.revision_history {
            None => None,
            Some(history) => {
                let path = join(field, "revisionHistory");
                self.known(&history.other, &path)?;
                let paths = history.field_paths.unwrap_or_default();
                if let Some(i) = paths
                    .iter()
                    .position(|p| p.is_empty() || p.split('.').any(str::is_empty))
                {
                    return Err(self.invalid(
                        &format!("{path}.fieldPaths[{i}]"),
                        "must be a dotted path such as spec.template",
                    ));
                }
                Some(paths).filter(|p| !p.is_empty())
            }
        };
        Ok(ParentResource {
            api_version: self.required(parent.api_version, &join(field, "apiVersion"))?,
            resource: self.required(parent.resource, &join(field, "resource"))?,
            label_selector: parent.label_selector,
            ignore_status_changes: parent.ignore_status_changes.unwrap_or(false),
            revision_field_paths: revision_field_paths.unwrap_or_else(|| {
                DEFAULT_REVISION_FIELD_PATHS
                    .iter()
                    .map(|&p| p.to_owned())
                    .collect()
            }),
            annotation_selector: None,
        })
    }

    pub(super) fn child(
        &self,
        child: manifest::Child,
        field: &str,
    ) -> Result<ChildResource, ConfigError> {
        self.known(&child.other, field)?;
        let (update_strategy, status_checks) = match child.update_strategy {
            None => (UpdateStrategy::OnDelete, Vec::new()),
            Some(strategy) => {
                let path = join(field, "updateStrategy");
                self.known(&strategy.other, &path)?;
                let method = match strategy.method.as_deref() {
                    None | Some("" | "OnDelete") => UpdateStrategy::OnDelete,
                    Some("Recreate") => UpdateStrategy::Recreate,
                    Some("InPlace") => UpdateStrategy::InPlace,
                    Some("RollingRecreate") => UpdateStrategy::RollingRecreate,
                    Some("RollingInPlace") => UpdateStrategy::RollingInPlace,
                    Some(_) => {
                        return Err(self.invalid(
                            &join(&path, "method"),
                            "must be OnDelete, Recreate, InPlace, RollingRecreate or RollingInPlace",
                        ));
                    }
                };
                let checks = match strategy.status_checks {
                    None => Vec::new(),
                    Some(checks) => self.status_checks(checks, &join(&path, "statusChecks"))?,
                };
                (method, checks)
            }
        };
        Ok(ChildResource {
            api_version: self.required(child.api_version, &join(field, "apiVersion"))?,
            resource: self.required(child.resource, &join(field, "resource"))?,
            update_strategy,
            status_checks,
        })
    }

    /// `statusChecks`: read for any method, as Metacontroller does, and
    /// used only by the rolling ones.
    fn status_checks(
        &self,
        checks: manifest::StatusChecks,
        field: &str,
    ) -> Result<Vec<ConditionCheck>, ConfigError> {
        self.known(&checks.other, field)?;
        checks
            .conditions
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let path = format!("{field}.conditions[{i}]");
                self.known(&c.other, &path)?;
                Ok(ConditionCheck {
                    type_: self.required(c.type_, &join(&path, "type"))?,
                    status: c.status,
                    reason: c.reason,
                })
            })
            .collect()
    }
}
