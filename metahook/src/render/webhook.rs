//! `metahook render --controllers DIR`: a controller read from manifests
//! and its hook asked over HTTP, exactly as `metahook drive` asks it (the
//! same resolution in `prepare`, the same caller: URL, timeout, TLS,
//! credentials, `etag`). Secrets and ConfigMaps a webhook's credentials name
//! are read through the kubeconfig, and only then.

use metahook_core::HookKind;
use metahook_driver::config::ControllerConfig;
use metahook_driver::hook::call::{HookCallError, HookCaller};
use metahook_driver::observe::metrics::DriverMetrics;
use metahook_driver::start::prepare::{self, HookMode, PrepareError, Prepared};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("the manifests in {dir} could not be used")]
    Manifests {
        dir: PathBuf,
        #[source]
        source: Box<PrepareError>,
    },
    #[error("no controller in {dir} is named {name}; it has: {known}")]
    UnknownController {
        dir: PathBuf,
        name: String,
        known: String,
    },
    #[error("controller {controller} has no {hook} hook")]
    NoHook { controller: String, hook: HookKind },
    #[error("starting the HTTP client failed")]
    Client(#[source] std::io::Error),
    #[error("connecting to Kubernetes to read the webhook's credentials failed")]
    Kube(#[source] kube::Error),
    #[error("asking controller {controller}'s {hook} hook failed")]
    Call {
        controller: String,
        hook: HookKind,
        #[source]
        source: Box<HookCallError>,
    },
}

/// `name`'s manifest and hooks, from the `*.yaml` in `dir`.
pub fn find(dir: &Path, name: &str) -> Result<Prepared, WebhookError> {
    let all = prepare::prepare(Some(dir), HookMode::Http, &[]).map_err(|source| {
        WebhookError::Manifests {
            dir: dir.to_owned(),
            source: Box::new(source),
        }
    })?;
    let known = all
        .iter()
        .map(|p| p.config.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    all.into_iter()
        .find(|p| p.config.name == name)
        .ok_or_else(|| WebhookError::UnknownController {
            dir: dir.to_owned(),
            name: name.to_owned(),
            known,
        })
}

/// Sends `request` to `controller`'s `hook` and returns its answer.
pub fn ask(controller: &Prepared, hook: HookKind, request: &[u8]) -> Result<Vec<u8>, WebhookError> {
    let target = controller
        .hooks
        .get(hook)
        .ok_or_else(|| WebhookError::NoHook {
            controller: controller.config.name.clone(),
            hook,
        })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(WebhookError::Client)?;
    runtime.block_on(async {
        let metrics = Arc::new(DriverMetrics::default());
        let mut caller = HookCaller::with_http(jiff::Timestamp::now, metrics.clone())
            .map_err(WebhookError::Client)?;
        if needs_cluster(&controller.config) {
            let clients = metahook_driver::client::connect::connect(
                None,
                metrics,
                // render reads, never writes.
                metahook_driver::start::leader::fence::Fence::closed(),
            )
            .await
            .map_err(WebhookError::Kube)?;
            caller = caller.reading_credentials_with(clients.client);
        }
        caller
            .call(&controller.config.name, target, request.to_vec())
            .await
            .map_err(|source| WebhookError::Call {
                controller: controller.config.name.clone(),
                hook,
                source: Box::new(source),
            })
    })
}

/// Whether any of the controller's webhooks names credentials to read.
fn needs_cluster(config: &ControllerConfig) -> bool {
    let hooks = &config.hooks;
    std::iter::once(&hooks.sync)
        .chain(&hooks.finalize)
        .chain(&hooks.customize)
        .any(|h| !h.webhook.auth.is_empty())
}
