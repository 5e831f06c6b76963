//! A DecoratorController's own fields (docs/metacontroller.md §6):
//! `spec.resources` (what it decorates, with label and annotation
//! selectors), `spec.attachments` (what it may create for them), and the
//! same hooks, webhooks and `resyncPeriodSeconds` as a CompositeController.

use super::check::{Check, join};
use super::document::Shape;
use super::{
    ChildResource, ConfigError, ControllerKind, ParentResource, UpdateStrategyExt, manifest,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

impl Check<'_> {
    /// A DecoratorController's own fields, taken from its spec.
    pub(super) fn decorator(
        &self,
        spec: &mut manifest::DecoratorSpec,
    ) -> Result<Shape, ConfigError> {
        let mut resources = spec
            .resources
            .take()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, r)| self.resource(r, &format!("spec.resources[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        if resources.is_empty() {
            return Err(self.invalid("spec.resources", "must name at least one resource"));
        }
        let parent = resources.remove(0);
        let children = spec
            .attachments
            .take()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, child)| self.attachment(child, &format!("spec.attachments[{i}]")))
            .collect::<Result<_, _>>()?;
        Ok(Shape {
            kind: ControllerKind::Decorator,
            parent,
            more_resources: resources,
            children,
            generate_selector: false,
        })
    }

    fn resource(
        &self,
        resource: manifest::Resource,
        field: &str,
    ) -> Result<ParentResource, ConfigError> {
        self.known(&resource.other, field)?;
        if let Some(selector) = &resource.label_selector {
            crate::decide::selector::parse(selector)
                .map_err(|e| self.invalid(&join(field, "labelSelector"), e.to_string()))?;
        }
        let annotation_selector = match resource.annotation_selector {
            None => None,
            Some(a) => {
                let path = join(field, "annotationSelector");
                self.known(&a.other, &path)?;
                let selector = LabelSelector {
                    match_labels: a.match_annotations,
                    match_expressions: a.match_expressions,
                };
                crate::decide::selector::parse(&selector)
                    .map_err(|e| self.invalid(&path, e.to_string()))?;
                Some(selector)
            }
        };
        Ok(ParentResource {
            api_version: self.required(resource.api_version, &join(field, "apiVersion"))?,
            resource: self.required(resource.resource, &join(field, "resource"))?,
            label_selector: resource.label_selector,
            ignore_status_changes: resource.ignore_status_changes.unwrap_or(false),
            revision_field_paths: Vec::new(),
            annotation_selector,
        })
    }

    /// One of `spec.attachments`: a child type, with no rolling update (a
    /// decorator keeps no revisions; Metacontroller's treats the rolling
    /// methods as their plain ones, which would mislead).
    fn attachment(
        &self,
        child: manifest::Child,
        field: &str,
    ) -> Result<ChildResource, ConfigError> {
        let child = self.child(child, field)?;
        if child.update_strategy.is_rolling() {
            return Err(self.unsupported(
                &format!("{field}.updateStrategy.method: {:?}", child.update_strategy),
                " (a DecoratorController keeps no revisions; use Recreate or InPlace)",
            ));
        }
        Ok(child)
    }
}
