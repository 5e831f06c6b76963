//! `spec.hooks` of either kind: `sync` (required), `finalize` and
//! `customize`, each a version and a webhook ([`webhook`](super::webhook));
//! with `spec.endpointConfigs` ([`endpoint`](super::endpoint)) given to the
//! webhooks that have no settings of their own.

use super::check::{Check, join};
use super::{ConfigError, Hook, HookVersion, Hooks, endpoint, manifest};

impl Check<'_> {
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
