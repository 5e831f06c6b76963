//! The related objects of one parent (docs/metacontroller.md §1.6), read
//! as a reconcile gathers them (`reconcile/related.rs`): the customize
//! hook asked, each rule's type resolved through discovery, the objects
//! listed and selected by the same pure rules (`decide/related.rs`).
//! Nothing is remembered between parents but the resolved types: the
//! objects are listed for each parent, which costs a list per rule and
//! parent and holds only what one parent needs.

use super::context::{Reader, Resolved};
use super::error::PassError;
use super::window::list_all;
use crate::config::HookVersion;
use crate::controller::cache::{CachedObject, SharedType};
use crate::decide::model::ResolvedType;
use crate::decide::related::{self, Scope};
use crate::hook::wire;
use crate::start::discovery;
use kube::api::{Api, DynamicObject, ListParams};
use metahook_core::HookKind;
use metahook_core::protocol::RelatedResourceRule;
use std::sync::{Arc, Mutex, MutexGuard};

/// Related objects per rule type; none without a customize hook.
pub(super) async fn objects(
    reader: &Reader,
    resolved: &Resolved,
    parent: &DynamicObject,
) -> Result<Vec<(ResolvedType, Vec<Arc<DynamicObject>>)>, PassError> {
    let Some(target) = &resolved.hooks.customize else {
        return Ok(Vec::new());
    };
    let ctl = &resolved.driven;
    let request =
        wire::customize_request(&ctl.config.object, parent).map_err(PassError::Request)?;
    let body = reader
        .caller
        .call(&ctl.config.name, target, request)
        .await?;
    let rules = wire::decode_customize_response(&body, target.strict).map_err(|source| {
        PassError::Answer {
            hook: HookKind::Customize,
            source,
        }
    })?;
    let parent_namespace = if ctl.parent.namespaced {
        parent.metadata.namespace.as_deref()
    } else {
        None
    };
    let mut out = Vec::new();
    for (index, rule) in rules.iter().enumerate() {
        let resource = reader.related_type(rule).await?;
        let scope = Scope {
            version: target.version,
            parent_namespace,
            resource_namespaced: resource.namespaced,
        };
        let objects = list(reader, &resource, listed_namespace(rule, &scope)).await?;
        let namespaces = if rule.namespace_selector.is_some() {
            list(reader, &namespace_type(), None).await?
        } else {
            Vec::new()
        };
        let selected = related::select(index, rule, &scope, &objects, &namespaces)?;
        let selected = CachedObject::decode_all(&selected).map_err(PassError::Cached)?;
        out.push((resource, selected));
    }
    Ok(out)
}

/// The one namespace a rule can select from, when there is one: the
/// rule's own, or a v1 hook's parent's (`decide/related.rs` confines it).
fn listed_namespace<'a>(rule: &'a RelatedResourceRule, scope: &Scope<'a>) -> Option<&'a str> {
    if !scope.resource_namespaced || rule.namespace_selector.is_some() {
        return None;
    }
    rule.namespace
        .as_deref()
        .or(match (scope.version, scope.parent_namespace) {
            (HookVersion::V1, Some(ns)) => Some(ns),
            _ => None,
        })
}

async fn list(
    reader: &Reader,
    resource: &ResolvedType,
    namespace: Option<&str>,
) -> Result<Vec<Arc<CachedObject>>, PassError> {
    let shared = SharedType::of(&resource.api);
    let api: Api<CachedObject> = match namespace {
        Some(ns) => Api::namespaced_with(reader.client.clone(), ns, &shared),
        None => Api::all_with(reader.client.clone(), &shared),
    };
    let listed = list_all(&api, ListParams::default())
        .await
        .map_err(|err| PassError::Related(Box::new(err)))?;
    Ok(listed
        .into_iter()
        .map(|mut obj| {
            obj.set_type_if_missing(&resource.api.api_version, &resource.api.kind);
            Arc::new(obj)
        })
        .collect())
}

fn namespace_type() -> ResolvedType {
    ResolvedType::new("", "v1", "Namespace", "namespaces", false)
}

impl Reader {
    /// The type a rule names, through discovery the first time.
    async fn related_type(&self, rule: &RelatedResourceRule) -> Result<ResolvedType, PassError> {
        let key = (rule.api_version.clone(), rule.resource.clone());
        let known = lock(&self.related).get(&key).cloned();
        if let Some(known) = known {
            return Ok(known);
        }
        let (resource, _) = discovery::resolve(&self.client, &rule.api_version, &rule.resource)
            .await
            .map_err(|source| PassError::Discovery(Box::new(source)))?;
        lock(&self.related).insert(key, resource.clone());
        Ok(resource)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update is one statement: a panic cannot leave the map half-done.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
