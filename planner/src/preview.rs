//! `metahook render --plan`: what the driver would do with one hook answer,
//! offline — the same pure planner (`plan::after_hook`) on a request in
//! Metacontroller's format, described as a reconcile record describes its
//! plan. The request's children are taken as the claimed, observed
//! children (Metacontroller sends only those), nothing is remembered from
//! an earlier apply, and types are read from the controller's manifest and
//! the request instead of an API server's discovery. A CompositeController
//! only, and none that rolls: which child a rolling update moves depends on
//! the ControllerRevisions in the cluster, which a request does not carry.

use crate::config::{self, ConfigError, ControllerConfig, UpdateStrategyExt};
use crate::decide::model::{Driven, DrivenChild, ResolvedType};
use crate::decide::plan::{self, NoMemory, Op, PlanError};
use crate::steps::{FieldChange, Step, changed_fields};
use crate::wire::{self, DecodeResponseError};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::DynamicObject;
use kube::core::{ApiResource, GroupVersionKind};
use metahook_core::{Controller, HookKind};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    #[error("the built-in manifests are invalid")]
    Config(#[from] ConfigError),
    #[error("no built-in CompositeController is named {0}")]
    UnknownController(String),
    #[error(
        "{0} is a DecoratorController: --plan previews a CompositeController's answer (render without --plan prints the hook's answer)"
    )]
    Decorator(String),
    #[error(
        "{0} rolls its children (RollingRecreate / RollingInPlace): which child moves depends on the ControllerRevisions in the cluster, which a request does not carry"
    )]
    Rolling(String),
    #[error("the request is not JSON")]
    Request(#[source] serde_json::Error),
    #[error("the request's {field} is not a Kubernetes object")]
    Object {
        field: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("the hook's answer could not be decoded")]
    Decode(#[from] DecodeResponseError),
    #[error("planning failed")]
    Plan(#[from] PlanError),
}

/// The plan for one hook answer.
#[derive(Debug, Serialize)]
pub struct Preview {
    /// Every operation, in order, as a reconcile record lists them.
    pub plan: Vec<Step>,
    /// The status fields the status write changes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<FieldChange>,
    /// Why the reconcile would fail after the plan, if it would.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Why the plan is not what the answer alone suggests (a request
    /// missing what the engine adds).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The CompositeController of `table` named `controller`.
pub fn builtin(table: &[Controller], controller: &str) -> Result<ControllerConfig, PreviewError> {
    config::from_controllers(table)?
        .into_iter()
        .find(|c| c.name == controller)
        .ok_or_else(|| PreviewError::UnknownController(controller.to_owned()))
}

/// Plans `config`'s reaction to `response`, its `hook`'s answer to
/// `request` (JSON). `crds`: custom resources whose kinds may be needed
/// (those of the controllers built in), for a child type that neither the
/// request nor the answer names.
pub fn preview(
    config: ControllerConfig,
    hook: HookKind,
    request: &[u8],
    response: &[u8],
    crds: &[CustomResourceDefinition],
) -> Result<Preview, PreviewError> {
    if config.is_decorator() {
        return Err(PreviewError::Decorator(config.name));
    }
    if config
        .children
        .iter()
        .any(|c| c.update_strategy.is_rolling())
    {
        return Err(PreviewError::Rolling(config.name));
    }
    let request: Value = serde_json::from_slice(request).map_err(PreviewError::Request)?;
    let request = &request;
    let parent: DynamicObject = object(&request["parent"], "parent")?;
    let (group, version) = split_api_version(&config.parent.api_version);
    let parent_type = ResolvedType::new(
        group,
        version,
        parent.types.as_ref().map_or("", |t| t.kind.as_str()),
        &config.parent.resource,
        parent.metadata.namespace.is_some(),
    );
    let answer: Value = serde_json::from_slice(response).unwrap_or(Value::Null);
    let mut children = Vec::new();
    let mut observed = Vec::new();
    let mut types = Vec::new();
    for child in &config.children {
        // A type neither in the request nor in the answer has nothing
        // observed and nothing desired: nothing to plan for it.
        let Some(kind) = kind_of(&child.api_version, &child.resource, request, &answer, crds)
        else {
            continue;
        };
        types.push(child.clone());
        let (group, version) = split_api_version(&child.api_version);
        observed.push(
            request["children"][format!("{kind}.{}", child.api_version)]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(key, value)| object(value, &format!("children {key}")).map(Arc::new))
                .collect::<Result<Vec<_>, _>>()?,
        );
        children.push(DrivenChild {
            resource: ResolvedType::new(group, version, &kind, &child.resource, true),
            strategy: child.update_strategy,
        });
    }
    // Decoded as the driver decodes this hook's answers.
    let strict = config.hooks.for_pass(hook).strict();
    let ctl = Driven {
        config: ControllerConfig {
            children: types,
            ..config
        },
        parent: parent_type,
        children,
        shard_labels: Vec::new(),
        status_subresource: true,
    };
    let decoded = wire::decode_sync_response(response, strict)?;
    let planned = plan::after_hook(
        &ctl,
        &parent,
        &observed,
        observed.as_slice(),
        decoded,
        &NoMemory,
        plan::StatusPace::Now,
    )?;
    let notes = notes(&ctl, &parent, hook, &observed, &planned.ops);
    let current_status = parent.data.get("status").cloned().unwrap_or(Value::Null);
    let status = planned
        .ops
        .iter()
        .find_map(|op| match op {
            Op::WriteStatus { status } => Some(changed_fields(status, &current_status)),
            _ => None,
        })
        .unwrap_or_default();
    Ok(Preview {
        plan: planned
            .ops
            .iter()
            .map(|op| Step::of(op, &ctl, &observed))
            .collect(),
        status,
        failure: planned.failure.map(|f| metahook_core::error_chain(&f)),
        notes,
    })
}

/// A finalize request whose parent lacks this controller's finalizer
/// plans no delete: the driver leaves the children to the garbage
/// collector, as it does for a parent deleted without it. A hand-written
/// request is the usual cause (the engine adds the finalizer first).
fn notes(
    ctl: &Driven,
    parent: &DynamicObject,
    hook: HookKind,
    observed: &[Vec<Arc<DynamicObject>>],
    ops: &[Op],
) -> Vec<String> {
    let finalizer = ctl.finalizer();
    let held = parent
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| *f == finalizer);
    let children = observed.iter().map(Vec::len).sum::<usize>();
    let deletes = ops.iter().any(|op| matches!(op, Op::DeleteChild { .. }));
    if hook == HookKind::Finalize && !held && children > 0 && !deletes {
        vec![format!(
            "the parent does not carry the finalizer {finalizer:?}: the driver deletes none of its {children} children, the garbage collector does once the parent is gone (the engine adds the finalizer before the first finalize call; a hand-written request lacks it)"
        )]
    } else {
        Vec::new()
    }
}

fn object(value: &Value, field: &str) -> Result<DynamicObject, PreviewError> {
    serde_json::from_value(value.clone()).map_err(|source| PreviewError::Object {
        field: field.to_owned(),
        source,
    })
}

/// The kind of a resource one of `crds` defines.
fn crd_kind(
    crds: &[CustomResourceDefinition],
    api_version: &str,
    resource: &str,
) -> Option<String> {
    let (group, _) = split_api_version(api_version);
    crds.iter()
        .find(|crd| crd.spec.group == group && crd.spec.names.plural == resource)
        .map(|crd| crd.spec.names.kind.clone())
}

/// `apps/v1` → (`apps`, `v1`); `v1` → (``, `v1`).
fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// The kind of `resource` objects: a kind named in the request's child
/// map keys (`Kind.apiVersion`) or among the children the hook desires
/// whose plural is `resource`, else one `crds` defines.
fn kind_of(
    api_version: &str,
    resource: &str,
    request: &Value,
    answer: &Value,
    crds: &[CustomResourceDefinition],
) -> Option<String> {
    let from_keys = request["children"]
        .as_object()
        .into_iter()
        .flat_map(|groups| groups.keys())
        .filter_map(|key| {
            key.split_once('.')
                .filter(|(_, v)| *v == api_version)
                .map(|(kind, _)| kind.to_owned())
        });
    let from_answer = answer["children"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["apiVersion"] == api_version)
        .filter_map(|c| c["kind"].as_str().map(str::to_owned));
    let (group, version) = split_api_version(api_version);
    from_keys
        .chain(from_answer)
        .find(|kind| {
            ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind)).plural == resource
        })
        .or_else(|| crd_kind(crds, api_version, resource))
}
