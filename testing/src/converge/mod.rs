//! The convergence check: a controller driven, pass after pass, by the
//! bundled driver's own planner (`metahook_planner::decide::plan`, the same code
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

mod admission;
mod cluster;
mod error;
mod perform;

pub use cluster::Pass;
pub use error::{ConvergeError, NotSettled, Refused};

use crate::store::{Edit, Key};
use cluster::Cluster;
use jiff::Timestamp;
use metahook_core::admission::Operation;
use metahook_core::{Controller, Object};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::time::Duration;

/// A convergence check of one controller and one parent, to set up and
/// [`run`](Converge::run).
pub struct Converge {
    cluster: Cluster,
    parent: Option<Value>,
    movers: Vec<(String, Edit)>,
    clock: Timestamp,
    started: Timestamp,
    tick: Duration,
    max_passes: usize,
    passes: Vec<Pass>,
    /// What the admission hooks warned, in order.
    warnings: Vec<String>,
    /// The admission reviews sent so far.
    reviews: usize,
}

/// A converged controller: the cluster as it settled, and every pass.
pub struct Converged {
    check: Converge,
}

impl Converge {
    /// Checks `controller` (a CompositeController without rolling updates),
    /// whose declaration is checked first ([`Controller::check`]).
    pub fn new(controller: impl Into<Controller>) -> Result<Self, ConvergeError> {
        let controller = controller.into();
        controller.check()?;
        Ok(Converge {
            cluster: Cluster::new(controller)?,
            parent: None,
            movers: Vec::new(),
            clock: Timestamp::from_second(1_795_316_400).unwrap_or(Timestamp::UNIX_EPOCH),
            started: Timestamp::from_second(1_795_316_400).unwrap_or(Timestamp::UNIX_EPOCH),
            tick: Duration::from_secs(1),
            max_passes: 20,
            passes: Vec::new(),
            warnings: Vec::new(),
            reviews: 0,
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
            self.cluster.store.create(object, &now);
        }
        self
    }

    /// What the API server sets on objects of type `T` when they are
    /// written without it (`metahook_testing::kubernetes` has a
    /// Deployment's).
    pub fn defaults<T: Object>(mut self, defaults: impl Fn(&mut Value) + 'static) -> Self {
        self.cluster
            .store
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
    ///
    /// The parent is created as the API server creates it: given a uid,
    /// a generation and its defaults ([`Converge::defaults`]), then passed
    /// through the controller's own `default` hook (its patch applied) and
    /// its `validate` hook, if it has them. A refusal is
    /// [`ConvergeError::Refused`], with the hook's message and fields, and
    /// no pass runs; warnings are kept ([`Converged::warnings`]).
    pub fn run(mut self) -> Result<Converged, ConvergeError> {
        let parent = self
            .parent
            .take()
            .ok_or_else(|| ConvergeError::Parent("none was given".to_owned()))?;
        let want = self.cluster.driven.parent.map_key();
        let key = Key::of(&parent);
        if key.group_key != want {
            return Err(ConvergeError::Parent(format!(
                "{} is not a {want}",
                key.describe()
            )));
        }
        let now = self.clock.to_string();
        let parent = self.cluster.store.prepare(parent, &now);
        let parent = self.admit(Operation::Create, parent, None)?;
        self.cluster.parent_key = Some(self.cluster.store.insert(parent));
        self.settle()?;
        Ok(Converged { check: self })
    }

    /// `object`, a create or update of the parent, as the controller's
    /// admission hooks admit it.
    fn admit(
        &mut self,
        operation: Operation,
        object: Value,
        old: Option<&Value>,
    ) -> Result<Value, ConvergeError> {
        self.reviews += 1;
        let store = &self.cluster.store;
        let key = Key::of(&object);
        let admitted = admission::admit(
            &self.cluster.controller,
            operation,
            object,
            old,
            &|o| store.defaulted(&key, o),
            self.reviews,
            self.clock,
        )?;
        self.warnings.extend(admitted.warnings);
        Ok(admitted.object)
    }

    /// Passes until one writes nothing and asks for no later call.
    fn settle(&mut self) -> Result<(), ConvergeError> {
        for n in 1..=self.max_passes {
            let pass = self.cluster.pass(self.passes.len() + 1, self.clock)?;
            let quiet = pass.writes.is_empty();
            let resync = pass.resync_after;
            self.passes.push(pass);
            let moved = self.move_world();
            if self.cluster.stored_parent().is_none() {
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
            controller: self.cluster.controller.name().to_owned(),
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

    fn move_world(&mut self) -> bool {
        let mut moved = false;
        let keys: Vec<Key> = self.cluster.store.objects().keys().cloned().collect();
        for (group_key, mover) in &self.movers {
            for key in keys.iter().filter(|k| k.group_key == *group_key) {
                moved |= self.cluster.store.edit(key, |o| mover(o));
            }
        }
        moved
    }

    /// Deletes the parent and runs passes until it is gone.
    fn finalize(&mut self) -> Result<(), ConvergeError> {
        let Some(key) = self.cluster.parent_key.clone() else {
            return Ok(());
        };
        let now = self.clock.to_string();
        self.cluster.store.delete(&key, &now);
        for _ in 0..self.max_passes {
            if self.cluster.stored_parent().is_none() {
                return Ok(());
            }
            let pass = self.cluster.pass(self.passes.len() + 1, self.clock)?;
            let resync = pass.resync_after;
            self.passes.push(pass);
            self.move_world();
            self.advance(resync.unwrap_or(self.tick));
        }
        if self.cluster.stored_parent().is_none() {
            return Ok(());
        }
        Err(NotSettled {
            controller: self.cluster.controller.name().to_owned(),
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
        self.check.cluster.stored_parent()
    }

    /// The parent as its type `P` (`None` once it is gone, or if it does
    /// not read as `P`): `settled.parent_as::<Widget>()?.status`.
    pub fn parent_as<P: DeserializeOwned>(&self) -> Option<P> {
        self.parent()
            .and_then(|p| serde_json::from_value(p.clone()).ok())
    }

    /// The object of type `T` named `name` in the parent's namespace, as
    /// `T` (`None` if there is none, or it does not read as `T`).
    pub fn get<T: Object>(&self, name: &str) -> Option<T> {
        self.object::<T>(name)
            .and_then(|o| serde_json::from_value(o.clone()).ok())
    }

    /// Every object of type `T` in the cluster, as `T` (those that read as
    /// `T`).
    pub fn all<T: Object>(&self) -> Vec<T> {
        self.objects::<T>()
            .into_iter()
            .filter_map(|o| serde_json::from_value(o).ok())
            .collect()
    }

    /// Changes the parent as a user would (`kubectl edit`: its generation
    /// moves with its spec), and runs passes until one writes nothing again.
    ///
    /// The change is an update through the controller's admission hooks,
    /// as on [`Converge::run`]: defaulted, then validated. A refused change
    /// is an error, [`ConvergeError::Refused`], as `kubectl edit` fails:
    /// match on it to test a refusal. An edit that changes nothing sends
    /// nothing (as `kubectl`) and runs no pass.
    pub fn change(mut self, edit: impl FnOnce(&mut Value)) -> Result<Converged, ConvergeError> {
        let key = self
            .check
            .cluster
            .parent_key
            .clone()
            .ok_or_else(|| ConvergeError::Parent("none was created".to_owned()))?;
        let Some(existing) = self.check.cluster.store.get(&key).cloned() else {
            return Err(ConvergeError::Parent("it is gone".to_owned()));
        };
        let mut next = existing.clone();
        edit(&mut next);
        if next == existing {
            return Ok(self);
        }
        self.check.cluster.store.defaulted(&key, &mut next);
        let next = self.check.admit(Operation::Update, next, Some(&existing))?;
        if !self.check.cluster.store.replace(key, existing, next) {
            return Ok(self);
        }
        let tick = self.check.tick;
        self.check.advance(tick);
        self.check.settle()?;
        Ok(self)
    }

    /// What the controller's admission hooks warned on the create and
    /// each change of the parent, in order (`kubectl` prints them).
    pub fn warnings(&self) -> &[String] {
        &self.check.warnings
    }

    /// The passes since pass `from` (1-based): what a [`Converged::change`]
    /// made the controller do.
    pub fn history_since(&self, from: usize) -> &[Pass] {
        self.check
            .passes
            .get(from.saturating_sub(1)..)
            .unwrap_or_default()
    }

    /// The object of type `T` named `name` in the parent's namespace.
    pub fn object<T: Object>(&self, name: &str) -> Option<&Value> {
        let namespace = self
            .check
            .cluster
            .parent_key
            .as_ref()
            .map(|k| k.namespace.clone())
            .unwrap_or_default();
        self.check.cluster.store.get(&Key {
            group_key: T::type_ref().group_key(),
            namespace,
            name: name.to_owned(),
        })
    }

    /// Every object of type `T` in the cluster.
    pub fn objects<T: Object>(&self) -> Vec<Value> {
        self.check.cluster.store.of_type(&T::type_ref().group_key())
    }

    /// Deletes the parent and runs the finalize hook (if any) pass after
    /// pass until the parent is gone; its children go with it.
    pub fn delete(mut self) -> Result<Converged, ConvergeError> {
        self.check.finalize()?;
        Ok(self)
    }
}
