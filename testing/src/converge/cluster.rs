//! The cluster and the controller as a pass sees them: the objects
//! stored, the driver's view of the controller, and one pass — the
//! planner's prelude, the hook called with the request the driver would
//! build, its answer planned and performed as the driver would.

use super::error::ConvergeError;
use super::perform::perform;
use crate::store::{Key, Store};
use jiff::Timestamp;
use kube::core::DynamicObject;
use metahook_core::HookError;
use metahook_core::registry;
use metahook_core::{Controller, HookKind, Shape, TypeRef};
use metahook_planner::decide::model::{Driven, DrivenChild, ResolvedType};
use metahook_planner::decide::plan::{self, NoMemory, Op, StatusPace};
use metahook_planner::decide::related;
use metahook_planner::wire::{self, TypedObjects};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// One pass: what it wrote, and the hook's answer.
#[derive(Debug, Clone)]
pub struct Pass {
    /// The hook it called: `None` when it called none (the parent was
    /// gone, or is not this controller's).
    pub hook: Option<HookKind>,
    /// Each write, described with the fields it changed.
    pub writes: Vec<String>,
    /// The hook's answer, as it was sent.
    pub answer: Option<Value>,
    /// `resyncAfterSeconds`, if the answer asked for a later call.
    pub resync_after: Option<Duration>,
}

/// The cluster, and the controller that reconciles its parent.
pub(super) struct Cluster {
    pub(super) controller: Controller,
    pub(super) driven: Driven,
    pub(super) store: Store,
    /// The parent's, once it is created.
    pub(super) parent_key: Option<Key>,
}

/// The objects of one type a customize rule selected.
type Related = (ResolvedType, Vec<Arc<DynamicObject>>);

impl Cluster {
    /// An empty cluster for `controller` (a CompositeController without
    /// rolling updates).
    pub(super) fn new(controller: Controller) -> Result<Self, ConvergeError> {
        let Shape::Composite {
            parent, children, ..
        } = controller.shape().clone()
        else {
            return Err(ConvergeError::Decorator(controller.name().to_owned()));
        };
        let config = metahook_planner::config::from_controllers(std::slice::from_ref(&controller))
            .map_err(ConvergeError::Config)?
            .into_iter()
            .next()
            .ok_or_else(|| ConvergeError::Decorator(controller.name().to_owned()))?;
        let children = children
            .iter()
            .map(|c| DrivenChild {
                resource: api_type(&c.type_ref),
                strategy: config
                    .children
                    .iter()
                    .find(|r| r.resource == c.type_ref.plural)
                    .map_or(metahook_planner::config::UpdateStrategy::OnDelete, |r| {
                        r.update_strategy
                    }),
            })
            .collect();
        let driven = Driven {
            config,
            parent: api_type(&parent),
            children,
            shard_labels: Vec::new(),
            status_subresource: true,
        };
        if driven.rolls() {
            return Err(ConvergeError::Rolling(controller.name().to_owned()));
        }
        Ok(Cluster {
            controller,
            driven,
            store: Store::default(),
            parent_key: None,
        })
    }

    /// The parent as the cluster holds it (`None` once it is gone).
    pub(super) fn stored_parent(&self) -> Option<&Value> {
        self.parent_key.as_ref().and_then(|k| self.store.get(k))
    }

    /// The objects of each child type, as the driver's caches hold them.
    fn candidates(&self, pass: usize) -> Result<Vec<Vec<Arc<DynamicObject>>>, ConvergeError> {
        self.driven
            .children
            .iter()
            .map(|c| self.objects_of(&c.resource.map_key(), pass))
            .collect()
    }

    fn objects_of(
        &self,
        group_key: &str,
        pass: usize,
    ) -> Result<Vec<Arc<DynamicObject>>, ConvergeError> {
        self.store
            .of_type(group_key)
            .into_iter()
            .map(|o| {
                serde_json::from_value(o)
                    .map(Arc::new)
                    .map_err(|source| ConvergeError::Object { pass, source })
            })
            .collect()
    }

    /// Pass number `pass`, at `now`: one reconcile of the parent.
    pub(super) fn pass(&mut self, pass: usize, now: Timestamp) -> Result<Pass, ConvergeError> {
        let mut done = Pass {
            hook: None,
            writes: Vec::new(),
            answer: None,
            resync_after: None,
        };
        let Some(parent) = self.stored_parent().cloned() else {
            return Ok(done);
        };
        let parent = dynamic(parent, pass)?;
        let candidates = self.candidates(pass)?;
        let prelude = plan::prelude(&self.driven, &parent, &candidates)
            .map_err(|source| ConvergeError::Plan { pass, source })?;
        for op in prelude.ops {
            self.perform(op, now, &mut done.writes);
        }
        let plan::Next::CallHook { hook, observed } = prelude.next else {
            return Ok(done);
        };
        done.hook = Some(hook);
        // The hook sees the parent after the finalizer, the children after
        // the claim.
        let Some(parent) = self.stored_parent().cloned() else {
            return Ok(done);
        };
        let parent = dynamic(parent, pass)?;
        let observed = self.reread(&observed, pass)?;
        let target = self.driven.config.hooks.for_pass(hook);
        let (version, strict) = (target.version, target.strict());
        let related = self.related(&parent, now, pass)?;
        let namespace = parent.metadata.namespace.clone();
        let children: Vec<TypedObjects<'_>> = self
            .driven
            .children
            .iter()
            .zip(&observed)
            .map(|(c, objects)| TypedObjects {
                resource: &c.resource,
                objects,
            })
            .collect();
        let related_typed: Vec<TypedObjects<'_>> = related
            .iter()
            .map(|(t, objects)| TypedObjects {
                resource: t,
                objects,
            })
            .collect();
        let request = wire::sync_request(
            &self.driven.config.object,
            &parent,
            &wire::object_map(&children, version, namespace.as_deref()),
            &wire::object_map(&related_typed, version, namespace.as_deref()),
            hook == HookKind::Finalize,
        )
        .map_err(|source| ConvergeError::Object { pass, source })?;
        let answer = self.call(hook, &request, now, pass)?;
        done.answer = serde_json::from_slice(&answer).ok();
        let response = wire::decode_sync_response(&answer, strict)
            .map_err(|source| ConvergeError::Answer { pass, hook, source })?;
        let existing = self.candidates(pass)?;
        let planned = plan::after_hook(
            &self.driven,
            &parent,
            &observed,
            existing.as_slice(),
            response,
            &NoMemory,
            StatusPace::Now,
        )
        .map_err(|source| ConvergeError::Plan { pass, source })?;
        done.resync_after = planned.resync_after;
        for op in planned.ops {
            self.perform(op, now, &mut done.writes);
        }
        if let Some(source) = planned.failure {
            return Err(ConvergeError::Plan { pass, source });
        }
        Ok(done)
    }

    /// `observed` as the store holds it now (after adoptions).
    fn reread(
        &self,
        observed: &[Vec<Arc<DynamicObject>>],
        pass: usize,
    ) -> Result<Vec<Vec<Arc<DynamicObject>>>, ConvergeError> {
        observed
            .iter()
            .map(|objects| {
                objects
                    .iter()
                    .filter_map(|o| self.store.get(&key_of(o)).cloned())
                    .map(|o| dynamic(o, pass).map(Arc::new))
                    .collect()
            })
            .collect()
    }

    /// The related objects the customize hook's rules select, per type.
    fn related(
        &self,
        parent: &DynamicObject,
        now: Timestamp,
        pass: usize,
    ) -> Result<Vec<Related>, ConvergeError> {
        let Some(customize) = self.controller.hook(HookKind::Customize) else {
            return Ok(Vec::new());
        };
        let Some(hook) = self.driven.config.hooks.customize.as_ref() else {
            return Ok(Vec::new());
        };
        let request = wire::customize_request(&self.driven.config.object, parent)
            .map_err(|source| ConvergeError::Object { pass, source })?;
        let answer = invoke(&customize, &request, now, pass, HookKind::Customize)?;
        let rules = wire::decode_customize_response(&answer, hook.strict()).map_err(|source| {
            ConvergeError::Answer {
                pass,
                hook: HookKind::Customize,
                source,
            }
        })?;
        let namespaces = self.objects_of("Namespace.v1", pass)?;
        let mut out = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            let Some(kind) = self.kind_of(&rule.api_version, &rule.resource) else {
                continue;
            };
            let t = api_type(&TypeRef {
                api_version: rule.api_version.clone().into(),
                kind: kind.clone().into(),
                plural: rule.resource.clone().into(),
                namespaced: true,
            });
            let objects = self.objects_of(&t.map_key(), pass)?;
            let scope = related::Scope {
                version: hook.version,
                parent_namespace: parent.metadata.namespace.as_deref(),
                resource_namespaced: objects
                    .first()
                    .is_none_or(|o| o.metadata.namespace.is_some()),
            };
            let selected = related::select(index, rule, &scope, &objects, &namespaces)
                .map_err(|source| ConvergeError::Related { pass, source })?;
            out.push((t, selected));
        }
        Ok(out)
    }

    /// The kind of `resource` objects in the store (or of a child type).
    fn kind_of(&self, api_version: &str, resource: &str) -> Option<String> {
        self.driven
            .children
            .iter()
            .find(|c| {
                c.resource.api.plural == resource && c.resource.api.api_version == api_version
            })
            .map(|c| c.resource.api.kind.clone())
            .or_else(|| {
                self.store.objects().keys().find_map(|k| {
                    let (kind, version) = k.group_key.split_once('.')?;
                    let plural =
                        kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
                            version.rsplit_once('/').map_or("", |(g, _)| g),
                            version.rsplit('/').next().unwrap_or(version),
                            kind,
                        ))
                        .plural;
                    (version == api_version && plural == resource).then(|| kind.to_owned())
                })
            })
    }

    fn call(
        &self,
        hook: HookKind,
        request: &[u8],
        now: Timestamp,
        pass: usize,
    ) -> Result<Vec<u8>, ConvergeError> {
        let Some(handler) = self.controller.hook(hook) else {
            return Err(ConvergeError::Hook {
                pass,
                hook,
                source: HookError::Failed {
                    message: format!("the controller has no {hook} hook"),
                },
            });
        };
        invoke(&handler, request, now, pass, hook)
    }

    /// Performs one planned operation at `now` (none before the parent
    /// exists).
    fn perform(&mut self, op: Op, now: Timestamp, writes: &mut Vec<String>) {
        let Some(parent_key) = self.parent_key.clone() else {
            return;
        };
        let now = now.to_string();
        perform(
            &mut self.store,
            &self.driven.children,
            &parent_key,
            &now,
            op,
            writes,
        );
    }
}

fn invoke(
    handler: &metahook_core::Handler,
    request: &[u8],
    now: Timestamp,
    pass: usize,
    hook: HookKind,
) -> Result<Vec<u8>, ConvergeError> {
    match registry::call(handler, request, now) {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(source)) => Err(ConvergeError::Hook { pass, hook, source }),
        Err(registry::Panicked { message }) => Err(ConvergeError::Panicked {
            pass,
            hook,
            message,
        }),
    }
}

fn dynamic(object: Value, pass: usize) -> Result<DynamicObject, ConvergeError> {
    serde_json::from_value(object).map_err(|source| ConvergeError::Object { pass, source })
}

fn key_of(object: &DynamicObject) -> Key {
    let types = object.types.clone().unwrap_or_default();
    Key {
        group_key: format!("{}.{}", types.kind, types.api_version),
        namespace: object.metadata.namespace.clone().unwrap_or_default(),
        name: object.metadata.name.clone().unwrap_or_default(),
    }
}

fn api_type(t: &TypeRef) -> ResolvedType {
    let version = t.api_version.rsplit('/').next().unwrap_or_default();
    ResolvedType::new(t.group(), version, &t.kind, &t.plural, t.namespaced)
}
