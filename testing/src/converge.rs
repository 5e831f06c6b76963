//! The convergence check: a controller driven, pass after pass, by the
//! bundled driver's own planner (`metahook_driver::decide::plan`, the same code
//! that plans every reconcile on a cluster) over an in-memory cluster,
//! until a pass writes nothing.
//!
//! A pass is what one reconcile of the parent does: the planner's prelude
//! (finalizer, claim), the hook called with the request the driver would
//! build, its answer decoded and planned as the driver plans it, and every
//! planned write performed on the store. Between passes the world moves
//! (a test's functions set the children's status, as a Deployment's
//! controller would), and the clock moves on by the tick — or, when a pass
//! wrote nothing but asked to be called again (`resyncAfterSeconds`), to
//! that time.
//!
//! The controller settles when a pass writes nothing and asks for no
//! later call. If it has not within the passes allowed, the check fails
//! with what the last pass still wrote, field by field: a timestamp in the
//! status, a field the server defaults otherwise, a value that changes
//! every call.

use crate::store::{Edit, Key, Store, differences};
use jiff::Timestamp;
use kube::core::DynamicObject;
use metahook_core::registry::{self, HookError};
use metahook_core::{Controller, HookKind, Object, Shape, TypeRef};
use metahook_driver::config::ConfigError;
use metahook_driver::decide::model::{ApiType, ChildType, Driven};
use metahook_driver::decide::plan::{self, NoMemory, Op, PlanError, StatusPace};
use metahook_driver::decide::related::{self, RelatedError};
use metahook_driver::hook::wire::{self, DecodeResponseError, TypedObjects};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Why a convergence check could not run, or failed.
#[derive(Debug, thiserror::Error)]
pub enum ConvergeError {
    /// The declaration makes no manifest the driver can drive.
    #[error("the controller's declaration is not one the driver can drive")]
    Config(#[source] ConfigError),
    /// The controller, named here, is a DecoratorController.
    #[error("{0}: a DecoratorController's convergence is not checked here")]
    Decorator(String),
    /// The controller, named here, has a child type that rolls
    /// (`RollingRecreate`, `RollingInPlace`).
    #[error("{0}: a child type rolls; rolling updates are not checked here")]
    Rolling(String),
    /// No parent was given, or not one of the controller's parent type:
    /// what is wrong with it.
    #[error("the parent is not a Kubernetes object of the controller's parent type: {0}")]
    Parent(String),
    /// A hook gave no answer: the request is not one it reads, or it
    /// failed.
    #[error("pass {pass}: the {hook} hook failed")]
    Hook {
        /// The pass, from 1.
        pass: usize,
        /// The hook.
        hook: HookKind,
        /// Why.
        #[source]
        source: HookError,
    },
    /// A hook panicked.
    #[error("pass {pass}: the {hook} hook panicked: {message}")]
    Panicked {
        /// The pass, from 1.
        pass: usize,
        /// The hook.
        hook: HookKind,
        /// What the panic said.
        message: String,
    },
    /// A hook's answer is not one the driver takes (a key the protocol
    /// does not have, a value of the wrong type).
    #[error("pass {pass}: the driver would not take the {hook} hook's answer")]
    Answer {
        /// The pass, from 1.
        pass: usize,
        /// The hook.
        hook: HookKind,
        /// What the driver found wrong.
        #[source]
        source: DecodeResponseError,
    },
    /// The driver would not act on the answer: a desired child without a
    /// name, of a type not declared, or whose labels the parent's selector
    /// does not match.
    #[error("pass {pass}: the driver would not act on the answer")]
    Plan {
        /// The pass, from 1.
        pass: usize,
        /// What the driver found wrong.
        #[source]
        source: PlanError,
    },
    /// A rule of the customize hook's answer is invalid (names with a
    /// selector, say).
    #[error("pass {pass}: the customize hook's rules")]
    Related {
        /// The pass, from 1.
        pass: usize,
        /// What is wrong with the rule.
        #[source]
        source: RelatedError,
    },
    /// An object in the cluster (one given, or one a pass wrote) is not a
    /// Kubernetes object the driver can read.
    #[error("pass {pass}: an object the store holds is not a Kubernetes object")]
    Object {
        /// The pass, from 1.
        pass: usize,
        /// Why it could not be read.
        #[source]
        source: serde_json::Error,
    },
    /// The controller never settled.
    #[error(transparent)]
    NotSettled(#[from] NotSettled),
}

/// A controller that kept writing: what its last pass still wrote.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the {controller} controller did not settle in {passes} passes; its last pass still wrote:\n{}",
    writes.iter().map(|w| format!("  {w}")).collect::<Vec<_>>().join("\n")
)]
pub struct NotSettled {
    /// The controller's name.
    pub controller: String,
    /// The passes it was allowed ([`Converge::max_passes`]).
    pub passes: usize,
    /// Each write of the last pass: what, and which fields made it.
    pub writes: Vec<String>,
}

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

/// A convergence check of one controller and one parent, to set up and
/// [`run`](Converge::run).
pub struct Converge {
    controller: Controller,
    driven: Driven,
    store: Store,
    parent: Option<Value>,
    parent_key: Option<Key>,
    movers: Vec<(String, Edit)>,
    clock: Timestamp,
    started: Timestamp,
    tick: Duration,
    max_passes: usize,
    passes: Vec<Pass>,
}

/// The objects of one type a customize rule selected.
type Related = (ApiType, Vec<Arc<DynamicObject>>);

/// A converged controller: the cluster as it settled, and every pass.
pub struct Converged {
    check: Converge,
}

impl Converge {
    /// Checks `controller` (a CompositeController without rolling updates).
    pub fn new(controller: impl Into<Controller>) -> Result<Self, ConvergeError> {
        let controller = controller.into();
        let Shape::Composite {
            parent, children, ..
        } = controller.shape().clone()
        else {
            return Err(ConvergeError::Decorator(controller.name().to_owned()));
        };
        let config = metahook_driver::config::from_controllers(std::slice::from_ref(&controller))
            .map_err(ConvergeError::Config)?
            .into_iter()
            .next()
            .ok_or_else(|| ConvergeError::Decorator(controller.name().to_owned()))?;
        let children = children
            .iter()
            .map(|c| ChildType {
                resource: api_type(&c.type_ref),
                strategy: config
                    .children
                    .iter()
                    .find(|r| r.resource == c.type_ref.plural)
                    .map_or(metahook_driver::config::UpdateStrategy::OnDelete, |r| {
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
        Ok(Converge {
            controller,
            driven,
            store: Store::default(),
            parent: None,
            parent_key: None,
            movers: Vec::new(),
            clock: Timestamp::from_second(1_795_316_400).unwrap_or(Timestamp::UNIX_EPOCH),
            started: Timestamp::from_second(1_795_316_400).unwrap_or(Timestamp::UNIX_EPOCH),
            tick: Duration::from_secs(1),
            max_passes: 20,
            passes: Vec::new(),
        })
    }

    /// The parent, as a user applies it (a typed object or JSON).
    pub fn parent(mut self, parent: impl Serialize) -> Self {
        self.parent = serde_json::to_value(parent).ok();
        self
    }

    /// Another object in the cluster from the start (one of a child type
    /// the parent does not own, a related object).
    pub fn object(mut self, object: impl Serialize) -> Self {
        if let Ok(object) = serde_json::to_value(object) {
            let now = self.clock.to_string();
            self.store.create(object, &now);
        }
        self
    }

    /// What the API server sets on objects of type `T` when they are
    /// written without it (`metahook_testing::kubernetes` has a
    /// Deployment's).
    pub fn defaults<T: Object>(mut self, defaults: impl Fn(&mut Value) + 'static) -> Self {
        self.store
            .add_defaults(T::type_ref().group_key(), Box::new(defaults));
        self
    }

    /// How objects of type `T` change between passes, as their own
    /// controllers would change them (a Deployment becoming available).
    pub fn moves<T: Object>(mut self, moves: impl Fn(&mut Value) + 'static) -> Self {
        self.movers
            .push((T::type_ref().group_key(), Box::new(moves)));
        self
    }

    /// When the first pass runs (default 2026-11-22T03:00:00Z).
    pub fn at(mut self, now: Timestamp) -> Self {
        self.clock = now;
        self.started = now;
        self
    }

    /// How long between passes (default a second): a status that records
    /// when it was written never settles.
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// At most this many passes (default 20).
    pub fn max_passes(mut self, passes: usize) -> Self {
        self.max_passes = passes;
        self
    }

    /// Creates the parent and runs passes until one writes nothing.
    pub fn run(mut self) -> Result<Converged, ConvergeError> {
        let parent = self
            .parent
            .take()
            .ok_or_else(|| ConvergeError::Parent("none was given".to_owned()))?;
        let want = self.driven.parent.map_key();
        let key = Key::of(&parent);
        if key.group_key != want {
            return Err(ConvergeError::Parent(format!(
                "{} is not a {want}",
                key.describe()
            )));
        }
        let now = self.clock.to_string();
        self.parent_key = Some(self.store.create(parent, &now));
        self.settle()?;
        Ok(Converged { check: self })
    }

    /// Passes until one writes nothing and asks for no later call.
    fn settle(&mut self) -> Result<(), ConvergeError> {
        for n in 1..=self.max_passes {
            let pass = self.pass(self.passes.len() + 1)?;
            let quiet = pass.writes.is_empty();
            let resync = pass.resync_after;
            self.passes.push(pass);
            let moved = self.move_world();
            if self.stored_parent().is_none() {
                return Ok(());
            }
            if quiet && !moved {
                match resync {
                    Some(after) => {
                        self.advance(after);
                        continue;
                    }
                    None => return Ok(()),
                }
            }
            if n < self.max_passes {
                self.advance(self.tick);
            }
        }
        Err(NotSettled {
            controller: self.controller.name().to_owned(),
            passes: self.max_passes,
            writes: self
                .passes
                .last()
                .map(|p| p.writes.clone())
                .unwrap_or_default(),
        }
        .into())
    }

    fn advance(&mut self, by: Duration) {
        let by = jiff::SignedDuration::try_from(by).unwrap_or(jiff::SignedDuration::ZERO);
        self.clock = self.clock.checked_add(by).unwrap_or(self.clock);
    }

    fn stored_parent(&self) -> Option<&Value> {
        self.parent_key.as_ref().and_then(|k| self.store.get(k))
    }

    fn move_world(&mut self) -> bool {
        let mut moved = false;
        let keys: Vec<Key> = self.store.objects().keys().cloned().collect();
        for (group_key, mover) in &self.movers {
            for key in keys.iter().filter(|k| k.group_key == *group_key) {
                moved |= self.store.edit(key, |o| mover(o));
            }
        }
        moved
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

    fn pass(&mut self, pass: usize) -> Result<Pass, ConvergeError> {
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
            self.perform(op, &mut done.writes);
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
        let related = self.related(&parent, pass)?;
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
            wire::object_map(&children, version, namespace.as_deref()),
            wire::object_map(&related_typed, version, namespace.as_deref()),
            hook == HookKind::Finalize,
        )
        .map_err(|source| ConvergeError::Object { pass, source })?;
        let answer = self.call(hook, &request, pass)?;
        done.answer = serde_json::from_slice(&answer).ok();
        let response = wire::decode_sync_response(&answer, strict)
            .map_err(|source| ConvergeError::Answer { pass, hook, source })?;
        let existing = self.candidates(pass)?;
        let planned = plan::after_hook(
            &self.driven,
            &parent,
            &observed,
            &existing,
            response,
            &NoMemory,
            StatusPace::Now,
        )
        .map_err(|source| ConvergeError::Plan { pass, source })?;
        done.resync_after = planned.resync_after;
        for op in planned.ops {
            self.perform(op, &mut done.writes);
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
    fn related(&self, parent: &DynamicObject, pass: usize) -> Result<Vec<Related>, ConvergeError> {
        let Some(customize) = self.controller.hook(HookKind::Customize) else {
            return Ok(Vec::new());
        };
        let Some(hook) = self.driven.config.hooks.customize.as_ref() else {
            return Ok(Vec::new());
        };
        let request = wire::customize_request(&self.driven.config.object, parent)
            .map_err(|source| ConvergeError::Object { pass, source })?;
        let answer = invoke(&customize, &request, self.clock, pass, HookKind::Customize)?;
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

    fn call(&self, hook: HookKind, request: &[u8], pass: usize) -> Result<Vec<u8>, ConvergeError> {
        let Some(handler) = self.controller.hook(hook) else {
            return Err(ConvergeError::Hook {
                pass,
                hook,
                source: HookError::Failed {
                    message: format!("the controller has no {hook} hook"),
                },
            });
        };
        invoke(&handler, request, self.clock, pass, hook)
    }

    /// Performs one planned operation; records it in `writes` if it is a
    /// write, with the fields it changed (or failed to change).
    fn perform(&mut self, op: Op, writes: &mut Vec<String>) {
        let now = self.clock.to_string();
        let Some(parent_key) = self.parent_key.clone() else {
            return;
        };
        let parent_name = parent_key.describe();
        match op {
            Op::AddFinalizer { after, .. } => {
                self.store.edit(&parent_key, |p| {
                    p["metadata"]["finalizers"] = serde_json::json!(after);
                });
                writes.push(format!("finalizer added to {parent_name}"));
            }
            Op::RemoveFinalizer { after, .. } => {
                self.store.edit(&parent_key, |p| {
                    p["metadata"]["finalizers"] = serde_json::json!(after);
                });
                self.store.collect_if_released(&parent_key, &now);
                writes.push(format!("finalizer removed from {parent_name}"));
            }
            Op::VerifyParent | Op::Event { .. } | Op::PatchObject { .. } | Op::Revision(_) => {}
            Op::Adopt { child, after, .. } | Op::Release { child, after, .. } => {
                let key = self.target_key(&child);
                self.store.edit(&key, |c| {
                    c["metadata"]["ownerReferences"] = serde_json::json!(after);
                });
                writes.push(format!("owner references of {} set", key.describe()));
            }
            Op::DeleteChild { child, .. } => {
                let key = self.target_key(&child);
                self.store.delete(&key, &now);
                writes.push(format!("{} deleted", key.describe()));
            }
            Op::ApplyChild {
                namespace, body, ..
            } => {
                let mut body = body;
                if let Some(ns) = namespace {
                    body["metadata"]["namespace"] = Value::String(ns);
                }
                let key = Key::of(&body);
                let before = self.store.get(&key).cloned();
                self.store.apply(&body, &now);
                let after = self.store.get(&key).cloned().unwrap_or(Value::Null);
                let why = match &before {
                    None => vec!["created".to_owned()],
                    Some(before) => {
                        let changed = differences(before, &after, 8);
                        if changed.is_empty() {
                            // Applied, and nothing changed: the driver saw a
                            // field it sends that the object does not hold.
                            unheld("", &body, &after)
                        } else {
                            changed
                        }
                    }
                };
                writes.push(format!("apply {}: {}", key.describe(), why.join("; ")));
            }
            Op::WriteStatus { status } => {
                let old = self
                    .store
                    .get(&parent_key)
                    .map(|p| p["status"].clone())
                    .unwrap_or(Value::Null);
                let mut changed = differences(&old, &status, 8);
                for c in &mut changed {
                    *c = format!("status.{c}");
                }
                self.store.edit(&parent_key, |p| p["status"] = status);
                writes.push(format!("status of {parent_name}: {}", changed.join("; ")));
            }
        }
    }

    fn target_key(&self, target: &plan::Target) -> Key {
        Key {
            group_key: self
                .driven
                .children
                .get(target.type_index)
                .map(|c| c.resource.map_key())
                .unwrap_or_default(),
            namespace: target.namespace.clone().unwrap_or_default(),
            name: target.name.clone(),
        }
    }

    /// Deletes the parent and runs passes until it is gone.
    fn finalize(&mut self) -> Result<(), ConvergeError> {
        let Some(key) = self.parent_key.clone() else {
            return Ok(());
        };
        let now = self.clock.to_string();
        self.store.delete(&key, &now);
        for _ in 0..self.max_passes {
            if self.stored_parent().is_none() {
                return Ok(());
            }
            let pass = self.pass(self.passes.len() + 1)?;
            let resync = pass.resync_after;
            self.passes.push(pass);
            self.move_world();
            self.advance(resync.unwrap_or(self.tick));
        }
        if self.stored_parent().is_none() {
            return Ok(());
        }
        Err(NotSettled {
            controller: self.controller.name().to_owned(),
            passes: self.max_passes,
            writes: vec![format!(
                "{} was not finalized: {}",
                key.describe(),
                self.passes
                    .last()
                    .map(|p| p.writes.join("; "))
                    .unwrap_or_default()
            )],
        }
        .into())
    }
}

impl Converged {
    /// How many passes it took, the last one the pass that wrote nothing.
    pub fn passes(&self) -> usize {
        self.check.passes.len()
    }

    /// The clock after the last pass.
    pub fn now(&self) -> Timestamp {
        self.check.clock
    }

    /// When the check started.
    pub fn started(&self) -> Timestamp {
        self.check.started
    }

    /// Every pass, in order.
    pub fn history(&self) -> &[Pass] {
        &self.check.passes
    }

    /// The last answer of the hook.
    pub fn last_answer(&self) -> Option<&Value> {
        self.check
            .passes
            .iter()
            .rev()
            .find_map(|p| p.answer.as_ref())
    }

    /// The parent as the cluster holds it (`None` once it is gone).
    pub fn parent(&self) -> Option<&Value> {
        self.check.stored_parent()
    }

    /// The object of type `T` named `name` in the parent's namespace.
    pub fn object<T: Object>(&self, name: &str) -> Option<&Value> {
        let namespace = self
            .check
            .parent_key
            .as_ref()
            .map(|k| k.namespace.clone())
            .unwrap_or_default();
        self.check.store.get(&Key {
            group_key: T::type_ref().group_key(),
            namespace,
            name: name.to_owned(),
        })
    }

    /// Every object of type `T` in the cluster.
    pub fn objects<T: Object>(&self) -> Vec<Value> {
        self.check.store.of_type(&T::type_ref().group_key())
    }

    /// Deletes the parent and runs the finalize hook (if any) pass after
    /// pass until the parent is gone; its children go with it.
    pub fn delete(mut self) -> Result<Converged, ConvergeError> {
        self.check.finalize()?;
        Ok(self)
    }
}

/// The fields of `body` that `stored` does not hold as sent.
fn unheld(path: &str, body: &Value, stored: &Value) -> Vec<String> {
    match (body, stored) {
        (Value::Object(b), Value::Object(s)) => b
            .iter()
            .flat_map(|(k, v)| {
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                unheld(&sub, v, s.get(k).unwrap_or(&Value::Null))
            })
            .collect(),
        _ if body == stored => Vec::new(),
        _ => vec![format!(
            "{path}: sent {body}, the server keeps {stored} (a default or a normalization the answer does not match)"
        )],
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

fn api_type(t: &TypeRef) -> ApiType {
    let version = t.api_version.rsplit('/').next().unwrap_or_default();
    ApiType::new(t.group(), version, &t.kind, &t.plural, t.namespaced)
}
