//! Step 2 of a reconcile: the related objects (docs/metacontroller.md
//! §1.6). The customize hook's rules for this parent generation (asked once,
//! then remembered by `controller/customized.rs`), each rule's type resolved through
//! discovery and watched, and the objects selected from the caches
//! (`decide/related.rs`, pure).

use super::error::ReconcileError;
use crate::controller::cache::CachedObject;
use crate::controller::context::Context;
use crate::controller::customized::Rules;
use crate::controller::triggers::{self, parent_key};
use crate::decide::model::ResolvedType;
use crate::decide::related::{self, Scope};
use crate::hook::call::HookTarget;
use crate::hook::wire;
use kube::api::DynamicObject;
use metahook_core::HookKind;
use metahook_core::protocol::RelatedResourceRule;
use std::sync::Arc;

/// Related objects per rule type; none without a customize hook.
pub(super) async fn objects(
    ctx: &Arc<Context>,
    parent: &DynamicObject,
) -> Result<Vec<(ResolvedType, Vec<Arc<DynamicObject>>)>, ReconcileError> {
    let Some(target) = &ctx.hooks.customize else {
        return Ok(Vec::new());
    };
    let rules = rules(ctx, target, parent).await?;
    let parent_namespace = if ctx.driven.parent.namespaced {
        parent.metadata.namespace.as_deref()
    } else {
        None
    };
    let mut out = Vec::new();
    for (index, rule) in rules.iter().enumerate() {
        let resource = related_type(ctx, rule).await?;
        let cache = ctx.caches.get_or_start(&resource);
        if !cache.is_synced() {
            return Err(ReconcileError::NotSynced(resource.api.kind.clone()));
        }
        let namespaces = if rule.namespace_selector.is_some() {
            let namespaces = ctx.caches.get_or_start(&namespace_type());
            if !namespaces.is_synced() {
                return Err(ReconcileError::NotSynced("Namespace".to_owned()));
            }
            namespaces.list(None)
        } else {
            Vec::new()
        };
        let scope = Scope {
            version: target.version,
            parent_namespace,
            resource_namespaced: resource.namespaced,
        };
        let selected = related::select(index, rule, &scope, &cache.list(None), &namespaces)?;
        let selected = CachedObject::decode_all(&selected).map_err(ReconcileError::Cached)?;
        out.push((resource, selected));
    }
    Ok(out)
}

/// The customize hook's rules for this parent generation.
async fn rules(
    ctx: &Context,
    target: &HookTarget,
    parent: &DynamicObject,
) -> Result<Rules, ReconcileError> {
    let uid = parent.metadata.uid.as_deref().unwrap_or_default();
    let generation = parent.metadata.generation.unwrap_or(0);
    if let Some(rules) = ctx.customized.rules(uid, generation) {
        return Ok(rules);
    }
    let request = wire::customize_request(&ctx.driven.config.object, parent)?;
    let body = ctx.caller.call(ctx.name(), target, request).await?;
    let rules = Arc::new(
        wire::decode_customize_response(&body, target.strict).map_err(|source| {
            ReconcileError::Decode {
                hook: HookKind::Customize,
                source,
            }
        })?,
    );
    ctx.customized.remember(
        uid,
        generation,
        parent_key(&ctx.driven, parent),
        Arc::clone(&rules),
    );
    Ok(rules)
}

/// The type a rule names. Resolved the first time, its cache is watched:
/// a change there queues the parents whose rules select the object.
async fn related_type(
    ctx: &Arc<Context>,
    rule: &RelatedResourceRule,
) -> Result<ResolvedType, ReconcileError> {
    if let Some(known) = ctx.customized.known_type(rule) {
        return Ok(known);
    }
    let resource =
        ctx.customized
            .discover(rule)
            .await
            .ok_or_else(|| ReconcileError::UnknownRelated {
                api_version: rule.api_version.clone(),
                resource: rule.resource.clone(),
            })?;
    // Rules are not fetched from here on a cache miss: such a parent is
    // synced by its own events.
    let weak = Arc::downgrade(ctx);
    let watched = resource.clone();
    ctx.caches
        .get_or_start(&resource)
        .subscribe(Arc::new(move |change| {
            let Some(ctx) = weak.upgrade() else { return };
            let answers = ctx.customized.answers();
            // Namespaces are read (and their cache started) only for rules
            // that select by namespace labels: watching every Namespace needs
            // a permission nothing else does (the chart's ClusterRole has
            // none).
            let namespaces = if answers
                .iter()
                .any(|(_, rules)| rules.iter().any(|r| r.namespace_selector.is_some()))
            {
                ctx.caches.get_or_start(&namespace_type()).list(None)
            } else {
                Vec::new()
            };
            let version = ctx
                .hooks
                .customize
                .as_ref()
                .map_or(crate::config::HookVersion::V1, |h| h.version);
            for key in triggers::related_changed(
                &ctx.driven,
                version,
                &watched,
                change,
                &answers,
                &namespaces,
            ) {
                ctx.enqueue_as(key, change.urgency_for_parents());
            }
        }));
    Ok(resource)
}

fn namespace_type() -> ResolvedType {
    ResolvedType::new("", "v1", "Namespace", "namespaces", false)
}
