//! What the driver can check before it connects: the CompositeController
//! manifests read and every hook resolved to where it is answered — a
//! registry handler in this binary (`serve --drive`) or a webhook URL
//! (`drive`). A bad file or a missing hook fails here, before anything
//! listens or connects.

use crate::config::{self, ConfigError, ControllerConfig, Hook};
use crate::controller::context::HookTargets;
use crate::hook::call::etag::EtagCache;
use crate::hook::call::{Endpoint, HookCaller, HookTarget};
use crate::observe::metrics::DriverMetrics;
use metahook_core::{Controller, HookKind, Shape};
use std::path::Path;
use std::sync::Arc;

/// How hooks are called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookMode {
    /// Through the registry, in this process (`serve --drive`).
    InProcess,
    /// Over HTTP at the CompositeController's webhook (`drive`).
    Http,
}

impl HookMode {
    /// The hook caller of this mode. Over HTTP, a webhook's credentials
    /// (Secrets, ConfigMaps) are read through `client`.
    pub fn caller(
        self,
        client: &kube::Client,
        metrics: Arc<DriverMetrics>,
    ) -> std::io::Result<HookCaller> {
        Ok(match self {
            HookMode::InProcess => HookCaller::in_process(jiff::Timestamp::now, metrics),
            HookMode::Http => HookCaller::with_http(jiff::Timestamp::now, metrics)?
                .reading_credentials_with(client.clone()),
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("the controller manifests are invalid")]
    Config(#[from] ConfigError),
    #[error(
        "controller {controller}: the {hook} hook at {path} is not built into this binary (metahook serves /{{controller}}/{{hook}} for: {known}); use `metahook drive` to call it over HTTP"
    )]
    NotInProcess {
        controller: String,
        hook: HookKind,
        path: String,
        known: String,
    },
    #[error("no controller to drive: {0}")]
    NothingToDrive(String),
}

/// A controller whose hooks are resolved: ready to connect.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub config: ControllerConfig,
    pub hooks: HookTargets,
}

impl Prepared {
    /// As it is driven (and planned): a DecoratorController of several
    /// resources as one controller per resource, anything else as itself.
    pub fn per_resource(self) -> impl Iterator<Item = Prepared> {
        let hooks = self.hooks;
        self.config
            .per_resource()
            .into_iter()
            .map(move |config| Prepared {
                config,
                hooks: hooks.clone(),
            })
    }
}

/// Reads the manifests and resolves every hook, before any cluster
/// connection: a bad file fails before anything connects.
/// `controllers`: a directory of `*.yaml`, or `None` for the ones built in.
/// `table`: the controllers built into this binary, whose hooks are
/// called in-process and whose declarations are the manifests when there
/// is no directory.
pub fn prepare(
    controllers: Option<&Path>,
    mode: HookMode,
    table: &[Controller],
) -> Result<Vec<Prepared>, PrepareError> {
    let configs = match controllers {
        Some(dir) => config::from_dir(dir)?,
        None => config::from_controllers(table)?,
    };
    resolve_hooks(configs, mode, controllers.is_none(), table)
}

/// Resolves every hook of every controller, before any cluster connection.
/// In-process, a hook is found by its webhook path (`/{controller}/{hook}`,
/// the route metahook's own service would answer). Controllers whose hooks
/// this binary lacks are skipped when `skip_missing` (the embedded
/// manifests), an error otherwise (`--controllers DIR`).
pub fn resolve_hooks(
    configs: Vec<ControllerConfig>,
    mode: HookMode,
    skip_missing: bool,
    table: &[Controller],
) -> Result<Vec<Prepared>, PrepareError> {
    let mut prepared = Vec::new();
    for config in configs {
        let resolve = |kind: HookKind, hook: &Hook| -> Result<HookTarget, PrepareError> {
            // Over HTTP, what the manifest says of the hooks it names.
            let mut revision = config.revision.as_deref().map(Arc::from);
            let endpoint = match mode {
                HookMode::Http => Endpoint::Http {
                    url: hook.webhook.url.clone(),
                    timeout: hook.webhook.timeout,
                    auth: Arc::new(hook.webhook.auth.clone()),
                    etag: hook
                        .webhook
                        .etag
                        .map(|e| Arc::new(EtagCache::new(e.timeout, e.cleanup))),
                },
                HookMode::InProcess => {
                    let (handler, declared) =
                        in_process(table, config.is_decorator(), kind, &hook.webhook.path)
                            .ok_or_else(|| PrepareError::NotInProcess {
                                controller: config.name.clone(),
                                hook: kind,
                                path: hook.webhook.path.clone(),
                                known: known_hooks(table),
                            })?;
                    // The binary's own declaration, else the manifest's.
                    revision = declared.map(Arc::from).or(revision);
                    Endpoint::InProcess(handler)
                }
            };
            Ok(HookTarget {
                kind,
                version: hook.version,
                strict: hook.strict(),
                endpoint,
                revision,
            })
        };
        let hooks = (|| {
            Ok::<_, PrepareError>(HookTargets {
                sync: resolve(HookKind::Sync, &config.hooks.sync)?,
                finalize: config
                    .hooks
                    .finalize
                    .as_ref()
                    .map(|h| resolve(HookKind::Finalize, h))
                    .transpose()?,
                customize: config
                    .hooks
                    .customize
                    .as_ref()
                    .map(|h| resolve(HookKind::Customize, h))
                    .transpose()?,
            })
        })();
        match hooks {
            Ok(hooks) => prepared.push(Prepared { config, hooks }),
            Err(err @ PrepareError::NotInProcess { .. }) if skip_missing => {
                tracing::warn!(controller = %config.name, reason = %err, "not driving this controller");
            }
            Err(err) => return Err(err),
        }
    }
    if prepared.is_empty() {
        return Err(PrepareError::NothingToDrive(
            "every controller's hooks are missing from this binary".to_owned(),
        ));
    }
    Ok(prepared)
}

/// The hook of `table` a path `/{controller}/{hook}` names, if it is `kind`
/// of a controller of the same shape (a DecoratorController's hooks answer
/// a decorator's requests, a CompositeController's a composite's), and the
/// revision that controller declares.
fn in_process<'t>(
    table: &'t [Controller],
    decorator: bool,
    kind: HookKind,
    path: &str,
) -> Option<(metahook_core::Handler, Option<&'t str>)> {
    let mut parts = path.trim_start_matches('/').split('/');
    let (Some(controller), Some(hook), None) = (parts.next(), parts.next(), parts.next()) else {
        return None;
    };
    if HookKind::parse(hook) != Some(kind) {
        return None;
    }
    let found = table.iter().find(|c| c.name() == controller)?;
    let shape_matches = matches!(found.shape(), Shape::Decorator { .. }) == decorator;
    let handler = shape_matches.then(|| found.hook(kind)).flatten()?;
    Some((handler, found.revision()))
}

fn known_hooks(table: &[Controller]) -> String {
    table
        .iter()
        .flat_map(|c| c.hook_kinds().map(move |k| format!("/{}/{}", c.name(), k)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
