//! What a controller with a customize hook keeps: the hook's answer per
//! parent (UID, generation), the related types it named, resolved through
//! discovery and watched, and which parents a related object's change
//! re-syncs (docs/metacontroller.md §1.6). The selection itself is
//! `related.rs`'s (pure).

use crate::cache::Change;
use crate::config::HookVersion;
use crate::hook_call::HookTarget;
use crate::model::{ApiType, object_key, split_key};
use crate::reconcile::ReconcileError;
use crate::related::{self, Scope};
use crate::wire;
use crate::worker::ControllerRuntime;
use kube::api::DynamicObject;
use metahook_hooks::HookKind;
use metahook_hooks::protocol::RelatedResourceRule;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How long a customize answer is reused for one (UID, generation), as
/// Metacontroller does.
const CUSTOMIZE_TTL: Duration = Duration::from_secs(20 * 60);

impl ControllerRuntime {
    /// Related objects per rule type, from the customize hook's rules
    /// (cached per parent UID and generation).
    pub(crate) async fn related(
        self: &Arc<Self>,
        parent: &DynamicObject,
    ) -> Result<Vec<(ApiType, Vec<Arc<DynamicObject>>)>, ReconcileError> {
        let Some(target) = &self.hooks.customize else {
            return Ok(Vec::new());
        };
        let rules = self.customize_rules(target, parent).await?;
        let parent_ns = if self.driven.parent.namespaced {
            parent.metadata.namespace.as_deref()
        } else {
            None
        };
        let mut out = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            let resource = self.related_type(rule).await?;
            let cache = self.caches.get_or_start(&resource);
            if !cache.is_synced() {
                return Err(ReconcileError::NotSynced(resource.api.kind.clone()));
            }
            let namespaces = if rule.namespace_selector.is_some() {
                let ns_cache = self.caches.get_or_start(&namespace_resource());
                if !ns_cache.is_synced() {
                    return Err(ReconcileError::NotSynced("Namespace".to_owned()));
                }
                ns_cache.list(None)
            } else {
                Vec::new()
            };
            let scope = Scope {
                version: target.version,
                parent_namespace: parent_ns,
                resource_namespaced: resource.namespaced,
            };
            let selected = related::select(index, rule, &scope, &cache.list(None), &namespaces)?;
            out.push((resource, selected));
        }
        Ok(out)
    }

    async fn customize_rules(
        &self,
        target: &HookTarget,
        parent: &DynamicObject,
    ) -> Result<Arc<Vec<RelatedResourceRule>>, ReconcileError> {
        let key = (
            parent.metadata.uid.clone().unwrap_or_default(),
            parent.metadata.generation.unwrap_or(0),
        );
        {
            let mut cache = self.customized.lock().unwrap_or_else(|p| p.into_inner());
            cache.retain(|_, (at, _, _)| at.elapsed() < CUSTOMIZE_TTL);
            if let Some((_, _, rules)) = cache.get(&key) {
                return Ok(Arc::clone(rules));
            }
        }
        let request = wire::customize_request(&self.driven.config.object, parent)?;
        let body = self.caller.call(self.name(), target, request).await?;
        let rules = Arc::new(
            wire::decode_customize_response(&body, target.strict()).map_err(|source| {
                ReconcileError::Decode {
                    hook: HookKind::Customize,
                    source,
                }
            })?,
        );
        let mut cache = self.customized.lock().unwrap_or_else(|p| p.into_inner());
        // Only the latest generation is ever asked for again: one entry
        // per parent, whatever the number of spec changes.
        cache.retain(|(uid, _), _| *uid != key.0);
        cache.insert(
            key,
            (Instant::now(), object_key(parent), Arc::clone(&rules)),
        );
        Ok(rules)
    }

    /// Drops a deleted parent's customize answers: the cache holds at most
    /// one entry per live parent.
    pub(crate) fn forget_customized(&self, uid: &str) {
        self.customized
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(cached, _), _| cached != uid);
    }

    /// How many customize answers are cached (for tests of its bound).
    #[cfg(test)]
    pub fn customized_len(&self) -> usize {
        self.customized
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    async fn related_type(
        self: &Arc<Self>,
        rule: &RelatedResourceRule,
    ) -> Result<ApiType, ReconcileError> {
        let key = (rule.api_version.clone(), rule.resource.clone());
        if let Some(r) = self
            .related_types
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(r.clone());
        }
        let resource = (self.discover)(&rule.api_version, &rule.resource)
            .await
            .ok_or_else(|| ReconcileError::UnknownRelated {
                api_version: rule.api_version.clone(),
                resource: rule.resource.clone(),
            })?;
        self.related_types
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, resource.clone());
        // A related object's change re-syncs the parents whose cached rules
        // select it (docs/metacontroller.md §1.6). Rules are not fetched from
        // here on a cache miss: such a parent is synced by its own events.
        let weak = Arc::downgrade(self);
        let watched = resource.clone();
        self.caches
            .get_or_start(&resource)
            .subscribe(Arc::new(move |change| {
                if let Some(rt) = weak.upgrade() {
                    rt.related_changed(&watched, change);
                }
            }));
        Ok(resource)
    }

    fn related_changed(&self, resource: &ApiType, change: &Change) {
        let obj = match change {
            Change::Applied(o) | Change::Deleted(o) => Arc::clone(o),
        };
        let entries: Vec<(String, Arc<Vec<RelatedResourceRule>>)> = self
            .customized
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .map(|(_, key, rules)| (key.clone(), Arc::clone(rules)))
            .collect();
        let version = self
            .hooks
            .customize
            .as_ref()
            .map_or(HookVersion::V1, |h| h.version);
        // Namespaces are read (and their cache started) only for rules that
        // select by namespace labels: watching every Namespace needs a
        // permission nothing else does (the chart's ClusterRole has none).
        let namespaces = if entries
            .iter()
            .any(|(_, rules)| rules.iter().any(|r| r.namespace_selector.is_some()))
        {
            self.caches.get_or_start(&namespace_resource()).list(None)
        } else {
            Vec::new()
        };
        for (key, rules) in entries {
            let (parent_ns, _) = split_key(&key);
            let scope = Scope {
                version,
                parent_namespace: if self.driven.parent.namespaced {
                    parent_ns
                } else {
                    None
                },
                resource_namespaced: resource.namespaced,
            };
            let selects = rules.iter().enumerate().any(|(i, rule)| {
                rule.api_version == resource.api.api_version
                    && rule.resource == resource.api.plural
                    && related::select(i, rule, &scope, std::slice::from_ref(&obj), &namespaces)
                        .is_ok_and(|s| !s.is_empty())
            });
            if selects {
                self.add(&key);
            }
        }
    }
}

fn namespace_resource() -> ApiType {
    ApiType::new("", "v1", "Namespace", "namespaces", false)
}
