//! The rules beyond the manifest's types, each refusal naming its field.
//!
//! From [`manifest`] to [`ControllerConfig`], every message naming the field
//! by its path (`spec.childResources[0].updateStrategy.method`). A key the
//! driver does not know is refused rather than ignored, with a hint when it
//! is a Metacontroller feature outside the subset; required fields, defaults
//! and allowed values follow Metacontroller v4.17 (docs/metacontroller.md
//! §2). The webhook's own rules are in [`webhook`](super::webhook) and
//! [`webhook_auth`](super::webhook_auth); settings given per host, in
//! [`endpoint`](super::endpoint).

use super::{
    ChildResource, ConditionCheck, ConfigError, ControllerConfig, ControllerKind, Hook,
    HookVersion, Hooks, ParentResource, UpdateStrategy, endpoint, manifest,
};
use serde_json::Value;
use std::time::Duration;

/// The parent's fields a rolling update follows when `revisionHistory`
/// names none (docs/metacontroller.md §4.3).
pub const DEFAULT_REVISION_FIELD_PATHS: &[&str] = &["spec"];

/// One manifest being checked: `source_name` goes into every error.
pub(super) struct Check<'a> {
    pub(super) source_name: &'a str,
}

impl Check<'_> {
    pub(super) fn invalid(&self, field: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            source_name: self.source_name.to_owned(),
            field: field.to_owned(),
            message: message.into(),
        }
    }

    pub(super) fn unsupported(&self, field: &str, hint: &str) -> ConfigError {
        ConfigError::Unsupported {
            source_name: self.source_name.to_owned(),
            field: field.to_owned(),
            hint: hint.to_owned(),
        }
    }

    /// Refuses the first key the manifest's types do not know; `hints`
    /// explain Metacontroller's features outside the subset.
    pub(super) fn known(&self, other: &manifest::Other, field: &str) -> Result<(), ConfigError> {
        let Some(key) = other.keys().next() else {
            return Ok(());
        };
        let hint = match key.as_str() {
            "preUpdateChild" | "postUpdateChild" => " (Metacontroller ignores these hooks too)",
            _ => "",
        };
        Err(self.unsupported(&join(field, key), hint))
    }

    /// A string that must be there and not be empty.
    pub(super) fn required(
        &self,
        value: Option<String>,
        field: &str,
    ) -> Result<String, ConfigError> {
        value
            .filter(|v| !v.is_empty())
            .ok_or_else(|| self.invalid(field, "is required"))
    }

    /// A whole manifest; `object` is the document as read, kept for the
    /// hook requests.
    pub(super) fn controller(
        &self,
        doc: manifest::Document,
        object: Value,
    ) -> Result<ControllerConfig, ConfigError> {
        self.known(&doc.other, "")?;
        let api_version = self.required(doc.api_version, "apiVersion")?;
        if api_version != "metacontroller.k8s.io/v1alpha1" {
            return Err(self.invalid("apiVersion", "must be metacontroller.k8s.io/v1alpha1"));
        }
        let kind = self.required(doc.kind, "kind")?;
        if kind != "CompositeController" {
            return Err(self.invalid("kind", "must be CompositeController or DecoratorController"));
        }
        let name = self.required(doc.metadata.name, "metadata.name")?;
        let spec = doc
            .spec
            .ok_or_else(|| self.invalid("spec", "must be a mapping"))?;
        self.known(&spec.other, "spec")?;
        let parent = self.parent(
            spec.parent_resource
                .ok_or_else(|| self.invalid("spec.parentResource", "must be a mapping"))?,
        )?;
        let children = spec
            .child_resources
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, child)| self.child(child, &format!("spec.childResources[{i}]")))
            .collect::<Result<_, _>>()?;
        let resync_period = resync_period(spec.resync_period_seconds);
        let hooks = self.hooks_with_endpoints(spec.hooks, spec.endpoint_configs)?;
        Ok(ControllerConfig {
            kind: ControllerKind::Composite,
            name,
            source: self.source_name.to_owned(),
            parent,
            more_resources: Vec::new(),
            children,
            generate_selector: spec.generate_selector.unwrap_or(false),
            resync_period,
            hooks,
            object,
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

    /// `spec.hooks` (required), with `spec.endpointConfigs` given to the
    /// webhooks that have no settings of their own.
    pub(super) fn hooks_with_endpoints(
        &self,
        hooks: Option<manifest::Hooks>,
        endpoints: Option<Vec<manifest::EndpointConfig>>,
    ) -> Result<Hooks, ConfigError> {
        let mut hooks = self.hooks(
            hooks.ok_or_else(|| self.invalid("spec.hooks", "is required (no hooks defined)"))?,
        )?;
        let endpoints = self.endpoint_configs(endpoints.unwrap_or_default())?;
        endpoint::apply(&mut hooks, &endpoints);
        Ok(hooks)
    }

    pub(super) fn hooks(&self, hooks: manifest::Hooks) -> Result<Hooks, ConfigError> {
        let field = "spec.hooks";
        self.known(&hooks.other, field)?;
        let hook = |hook: Option<manifest::Hook>, key: &str| {
            hook.map(|h| self.hook(h, &join(field, key))).transpose()
        };
        let sync = hook(hooks.sync, "sync")?.ok_or_else(|| {
            self.invalid(
                "spec.hooks.sync",
                "is required: the driver calls it for every parent",
            )
        })?;
        Ok(Hooks {
            sync,
            finalize: hook(hooks.finalize, "finalize")?,
            customize: hook(hooks.customize, "customize")?,
        })
    }

    fn hook(&self, hook: manifest::Hook, field: &str) -> Result<Hook, ConfigError> {
        self.known(&hook.other, field)?;
        let version = match hook.version.as_deref() {
            None | Some("v1") => HookVersion::V1,
            Some("v2") => HookVersion::V2,
            Some(_) => return Err(self.invalid(&join(field, "version"), "must be v1 or v2")),
        };
        let field = join(field, "webhook");
        let webhook = hook
            .webhook
            .ok_or_else(|| self.invalid(&field, "must be a mapping"))?;
        Ok(Hook {
            version,
            webhook: self.webhook(webhook, &field)?,
        })
    }
}

/// `resyncPeriodSeconds`: Metacontroller floors the period at one second.
pub(super) fn resync_period(seconds: Option<i64>) -> Option<Duration> {
    seconds.map(|n| Duration::from_secs(n.max(1).unsigned_abs()))
}

/// `field.key`, or `key` at the top.
pub(super) fn join(field: &str, key: &str) -> String {
    if field.is_empty() {
        key.to_owned()
    } else {
        format!("{field}.{key}")
    }
}

/// `value` unless absent or empty.
pub(super) fn or_default(value: Option<String>, default: &str) -> String {
    value
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_owned())
}
