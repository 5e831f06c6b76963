//! `metahook render`: run one hook on a request file and print the response,
//! offline — the same code path as the service, minus HTTP. With
//! `--controllers DIR`, a controller of the user's own, its webhook asked
//! (`webhook.rs`); with `--response`, an answer from a file; with `--plan`,
//! what the driver would do with the answer (`metahook_driver::observe::preview`).

mod webhook;

use crate::cli::RenderArgs;
use metahook_core::Controller;
use metahook_core::registry::{self, LookupError};
use metahook_core::{HookError, HookKind};
use metahook_driver::config::ControllerConfig;
use std::io::{Read, Write};
use std::path::PathBuf;

/// Why `render` printed no answer.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The request file (or `--response`'s) could not be read.
    #[error("reading {path} failed")]
    Read {
        /// The file (`-` for standard input).
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is neither JSON nor YAML.
    #[error("{path} is neither JSON nor YAML")]
    Yaml {
        /// The file (`-` for standard input).
        path: PathBuf,
        /// Where the YAML reader gave up, and why.
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// No controller, or no hook, of the name given.
    #[error(transparent)]
    Lookup(#[from] LookupError),
    /// The hook gave no answer: the request is not one it reads, or it
    /// failed.
    #[error("the {controller} {hook} hook rejected the request")]
    Hook {
        /// The controller.
        controller: String,
        /// The hook.
        hook: HookKind,
        /// Why.
        #[source]
        source: HookError,
    },
    /// Standard output could not be written.
    #[error("writing the response failed")]
    Write(#[source] std::io::Error),
    /// The plan (`--plan`) could not be encoded as JSON.
    #[error("encoding the plan failed")]
    Encode(#[source] serde_json::Error),
    /// `--plan` was asked of a customize hook: its answer is rules, not
    /// writes.
    #[error("a {0} hook's answer is not a plan: --plan takes sync or finalize")]
    NoPlan(HookKind),
    /// `--plan` made no plan: the controller is one it does not cover (a
    /// decorator, children that roll), or the driver would not act on the
    /// request or the answer.
    #[error("planning the {controller} controller's answer failed")]
    Plan {
        /// The controller.
        controller: String,
        /// Why.
        #[source]
        source: metahook_driver::observe::preview::PreviewError,
    },
    /// The hook named is not `sync`, `finalize` or `customize`.
    #[error("unknown hook {0:?}: sync, finalize or customize")]
    UnknownHook(String),
    /// `--controllers`: the manifests could not be used, or the webhook
    /// gave no answer.
    #[error(transparent)]
    Webhook(#[from] webhook::WebhookError),
}

/// `render`: the hook's answer to the request file, or with `--plan` what
/// the driver would do with it, on standard output.
pub fn run(args: &RenderArgs, controllers: &[Controller]) -> Result<(), RenderError> {
    let (path, input) = read_input(args.file.as_ref())?;
    let body = to_json(&path, input)?;
    let hook =
        HookKind::parse(&args.hook).ok_or_else(|| RenderError::UnknownHook(args.hook.clone()))?;
    let own = match &args.controllers {
        Some(dir) => Some(webhook::find(dir, &args.controller)?),
        None => None,
    };
    let response = match (&args.response, &own) {
        (Some(file), _) => {
            let (path, input) = read_input(Some(file))?;
            to_json(&path, input)?
        }
        (None, Some(own)) => webhook::ask(own, hook, &body)?,
        (None, None) => render(controllers, &args.controller, &args.hook, &body, args.now)?,
    };
    let response = if args.plan {
        let config = match own {
            Some(own) => own.config,
            None => builtin(controllers, &args.controller)?,
        };
        plan_of(controllers, config, hook, &body, &response)?
    } else {
        response
    };
    let text = if args.compact {
        response
    } else {
        pretty(&response)
    };
    let mut out = std::io::stdout().lock();
    out.write_all(&text)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(RenderError::Write)
}

/// Runs `controller`'s `hook` (one of `controllers`) on a JSON request, at
/// `now` (or the present).
pub fn render(
    controllers: &[Controller],
    controller: &str,
    hook: &str,
    body: &[u8],
    now: Option<jiff::Timestamp>,
) -> Result<Vec<u8>, RenderError> {
    let (_, kind, handler) = registry::lookup(controllers, controller, hook)?;
    handler(body, now.unwrap_or_else(jiff::Timestamp::now)).map_err(|source| RenderError::Hook {
        controller: controller.to_owned(),
        hook: kind,
        source,
    })
}

/// What the bundled driver would do with `response`, the answer of the
/// hook of `controller` (one of `controllers`) to the request `body`, as
/// compact JSON.
pub fn plan(
    controllers: &[Controller],
    controller: &str,
    hook: &str,
    body: &[u8],
    response: &[u8],
) -> Result<Vec<u8>, RenderError> {
    let (_, kind, _) = registry::lookup(controllers, controller, hook)?;
    plan_of(
        controllers,
        builtin(controllers, controller)?,
        kind,
        body,
        response,
    )
}

fn builtin(controllers: &[Controller], controller: &str) -> Result<ControllerConfig, RenderError> {
    metahook_driver::observe::preview::builtin(controllers, controller).map_err(|source| {
        RenderError::Plan {
            controller: controller.to_owned(),
            source,
        }
    })
}

/// What the driver would do with `config`'s `hook`'s answer `response`
/// (the CRDs of `controllers` name the kinds of their resources).
fn plan_of(
    controllers: &[Controller],
    config: ControllerConfig,
    hook: HookKind,
    body: &[u8],
    response: &[u8],
) -> Result<Vec<u8>, RenderError> {
    if hook == HookKind::Customize {
        return Err(RenderError::NoPlan(hook));
    }
    let controller = config.name.clone();
    let crds = metahook_core::registry::all_crds(controllers);
    let preview = metahook_driver::observe::preview::preview(config, hook, body, response, &crds)
        .map_err(|source| RenderError::Plan { controller, source })?;
    serde_json::to_vec(&preview).map_err(RenderError::Encode)
}

fn read_input(file: Option<&PathBuf>) -> Result<(PathBuf, Vec<u8>), RenderError> {
    let stdin = PathBuf::from("-");
    let path = file.unwrap_or(&stdin).clone();
    let mut input = Vec::new();
    let result = if path == stdin {
        std::io::stdin().read_to_end(&mut input).map(|_| ())
    } else {
        std::fs::read(&path).map(|bytes| input = bytes)
    };
    result.map_err(|source| RenderError::Read {
        path: path.clone(),
        source,
    })?;
    Ok((path, input))
}

/// JSON passes through untouched (so errors point at the user's own lines);
/// anything else is read as YAML and re-encoded as JSON.
fn to_json(path: &std::path::Path, input: Vec<u8>) -> Result<Vec<u8>, RenderError> {
    let looks_like_json = input
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{' || *b == b'[');
    if looks_like_json {
        return Ok(input);
    }
    let value: serde_json::Value =
        serde_saphyr::from_slice(&input).map_err(|source| RenderError::Yaml {
            path: path.to_owned(),
            source: Box::new(source),
        })?;
    Ok(value.to_string().into_bytes())
}

/// Indents a response without reordering its keys.
fn pretty(compact: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(compact.len() * 2);
    let mut de = serde_json::Deserializer::from_slice(compact);
    let mut ser = serde_json::Serializer::pretty(&mut out);
    match serde_transcode::transcode(&mut de, &mut ser) {
        Ok(()) => out,
        // The hooks only emit valid JSON; fall back to it as it is.
        Err(_) => compact.to_vec(),
    }
}
