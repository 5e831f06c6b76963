//! A controller of yours, declared as a value: its name, its parent (or
//! the type it decorates), its child types and how each is updated, its
//! hooks as plain functions, and the CRDs it owns. From this one
//! declaration metahook serves the hooks, drives them, renders them, and
//! writes the CompositeController manifest.
//!
//! ```
//! use metahook_core::{Answer, Controller, Request, UpdateStrategy};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! # use kube::CustomResource;
//! # use schemars::JsonSchema;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "Note", namespaced, status = "NoteStatus")]
//! # pub struct NoteSpec { text: String }
//! # #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
//! # pub struct NoteStatus { written: bool }
//!
//! fn sync(req: &Request<Note, ConfigMap>) -> Answer<NoteStatus> {
//!     let written = req.children.of::<ConfigMap>().get(&req.parent.metadata.name).is_some();
//!     Answer::new(NoteStatus { written })
//! }
//!
//! let notes: Controller = Controller::composite::<Note>("note")
//!     .child::<ConfigMap>(UpdateStrategy::InPlace)
//!     .sync(sync)
//!     .into();
//! assert_eq!(notes.name(), "note");
//! assert!(notes.check().is_ok());
//! ```

use crate::answer::{Answer, CustomizeAnswer, DecoratorAnswer, IntoAnswer};
use crate::collection::ObjectSet;
use crate::decode::decode;
use crate::object::{Object, TypeRef};
use crate::registry::{Handler, HookError, HookKind};
use crate::request::{
    Customize, Decorate, ParentType, Request, WireCustomize, WireDecorate, WireRequest,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

/// How Metacontroller (or the driver) brings an existing child to what is
/// desired (docs/metacontroller.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateStrategy {
    /// Never update; a deleted child is created again.
    OnDelete,
    /// Delete and create again.
    Recreate,
    /// Update in place.
    InPlace,
    /// [`UpdateStrategy::Recreate`], one child at a time, waiting for each
    /// to be ready.
    RollingRecreate,
    /// [`UpdateStrategy::InPlace`], one child at a time.
    RollingInPlace,
}

impl UpdateStrategy {
    /// The name a manifest's `updateStrategy.method` gives it.
    pub fn method(self) -> &'static str {
        match self {
            UpdateStrategy::OnDelete => "OnDelete",
            UpdateStrategy::Recreate => "Recreate",
            UpdateStrategy::InPlace => "InPlace",
            UpdateStrategy::RollingRecreate => "RollingRecreate",
            UpdateStrategy::RollingInPlace => "RollingInPlace",
        }
    }
}

/// A child (or attachment) type and how it is updated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildType {
    /// The type.
    pub type_ref: TypeRef,
    /// How an object of it is brought to what the hook desires.
    pub update: UpdateStrategy,
}

/// Where a manifest's webhooks point: a Service in the cluster, as the
/// chart installs metahook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhooks {
    /// The Service's name.
    pub service: String,
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's port (the Service forwards it to metahook's
    /// `--listen`).
    pub port: u16,
}

impl Default for Webhooks {
    /// The Service of a release named `metahook` in namespace `metahook`.
    fn default() -> Self {
        Webhooks {
            service: "metahook".to_owned(),
            namespace: "metahook".to_owned(),
            port: 80,
        }
    }
}

/// The two kinds of controller Metacontroller runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A CompositeController: one parent type and the children it owns.
    Composite {
        /// The parent type (`spec.parentResource`).
        parent: TypeRef,
        /// The child types (`spec.childResources`), in the order declared.
        children: Vec<ChildType>,
        /// Whether children are matched by a label Metacontroller generates
        /// (`spec.generateSelector`; see [`Composite::generate_selector`]).
        generate_selector: bool,
    },
    /// A DecoratorController: objects of other types, decorated with
    /// labels, annotations and attachments.
    Decorator {
        /// The decorated type (`spec.resources`).
        resource: TypeRef,
        /// The attachment types (`spec.attachments`), in the order
        /// declared.
        attachments: Vec<ChildType>,
    },
}

/// One controller, ready to be served, driven and rendered.
#[derive(Clone)]
pub struct Controller {
    name: String,
    shape: Shape,
    hooks: Vec<(HookKind, Handler)>,
    crds: Vec<Crd>,
    resync_period: Option<Duration>,
    hook_timeout: Duration,
    /// Mistakes in the declaration, reported by [`Controller::check`].
    problems: Vec<String>,
}

impl fmt::Debug for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hooks: Vec<_> = self.hooks.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("shape", &self.shape)
            .field("hooks", &hooks)
            .finish()
    }
}

/// A CRD a controller owns: made, or made when asked (a schema takes a
/// moment to generate, and serving a hook never needs it).
#[derive(Clone)]
enum Crd {
    Made(Box<CustomResourceDefinition>),
    Of(fn() -> CustomResourceDefinition),
}

/// What is wrong with a controller's declaration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("controller {name:?}: {}", problems.join("; "))]
pub struct DeclarationError {
    /// The controller's name.
    pub name: String,
    /// Each problem, in a sentence: `it has no sync hook`.
    pub problems: Vec<String>,
}

impl Controller {
    /// A CompositeController named `name` (the first path segment of its
    /// hooks: `/{name}/sync`) whose parent is `P`.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use metahook_core::{Answer, Controller, HookKind, Request, UpdateStrategy, Webhooks};
    /// # use kube::CustomResource;
    /// # use schemars::JsonSchema;
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
    /// # #[kube(group = "example.com", version = "v1", kind = "Note", namespaced, status = "NoteStatus")]
    /// # pub struct NoteSpec { text: String }
    /// # #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    /// # pub struct NoteStatus { copies: usize }
    ///
    /// fn sync(req: &Request<Note, ConfigMap>) -> Answer<NoteStatus> {
    ///     Answer::new(NoteStatus { copies: req.children.of::<ConfigMap>().len() })
    /// }
    ///
    /// let notes = Controller::composite::<Note>("note")
    ///     .child::<ConfigMap>(UpdateStrategy::InPlace)
    ///     .sync(sync)
    ///     .crd_of::<Note>()
    ///     .build();
    /// assert_eq!(notes.hook_kinds().collect::<Vec<_>>(), [HookKind::Sync]);
    /// assert_eq!(notes.crds()[0].metadata.name.as_deref(), Some("notes.example.com"));
    /// // The CompositeController Metacontroller reads, its hooks at metahook's Service.
    /// let manifest = notes.manifest(&Webhooks::default());
    /// assert_eq!(manifest["spec"]["parentResource"]["resource"], "notes");
    /// assert_eq!(manifest["spec"]["hooks"]["sync"]["webhook"]["path"], "/note/sync");
    /// ```
    pub fn composite<P: ParentType>(name: impl Into<String>) -> Composite<P> {
        Composite {
            controller: Controller::new(
                name.into(),
                Shape::Composite {
                    parent: P::type_ref(),
                    children: Vec::new(),
                    generate_selector: true,
                },
            ),
            _parent: PhantomData,
        }
    }

    /// A DecoratorController named `name` that decorates objects of type
    /// `T`: objects someone else made, given labels, annotations and
    /// attachments of their own.
    ///
    /// ```
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use metahook_core::{Controller, Decorate, DecoratorAnswer, HookKind, UpdateStrategy};
    /// use serde_json::json;
    ///
    /// /// Each Deployment labelled with its replicas, and a ConfigMap beside it.
    /// fn sync(req: &Decorate<Deployment, ConfigMap>) -> DecoratorAnswer {
    ///     let name = req.object.metadata.name.clone().unwrap_or_default();
    ///     let replicas = req.object.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    ///     DecoratorAnswer::new()
    ///         .label("example.com/replicas", replicas.to_string())
    ///         .attachment(json!({
    ///             "apiVersion": "v1", "kind": "ConfigMap",
    ///             "metadata": {"name": format!("{name}-replicas")},
    ///             "data": {"replicas": replicas.to_string()},
    ///         }))
    /// }
    ///
    /// let replicas = Controller::decorator::<Deployment>("replicas")
    ///     .attachment::<ConfigMap>(UpdateStrategy::InPlace)
    ///     .sync(sync)
    ///     .build();
    /// assert!(replicas.check().is_ok());
    /// // Called as the service calls it: request bytes in, answer bytes out.
    /// let request = json!({
    ///     "object": {
    ///         "apiVersion": "apps/v1", "kind": "Deployment",
    ///         "metadata": {"name": "web", "namespace": "shop"},
    ///         "spec": {"replicas": 3, "selector": {}, "template": {}},
    ///     },
    ///     "attachments": {"ConfigMap.v1": {}},
    /// });
    /// let hook = replicas.hook(HookKind::Sync).ok_or("a sync hook")?;
    /// let answer = hook(request.to_string().as_bytes(), "2026-11-22T03:00:00Z".parse()?)?;
    /// let answer: serde_json::Value = serde_json::from_slice(&answer)?;
    /// assert_eq!(answer["labels"]["example.com/replicas"], "3");
    /// assert_eq!(answer["attachments"][0]["metadata"]["name"], "web-replicas");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn decorator<T: Object>(name: impl Into<String>) -> Decorator<T> {
        Decorator {
            controller: Controller::new(
                name.into(),
                Shape::Decorator {
                    resource: T::type_ref(),
                    attachments: Vec::new(),
                },
            ),
            _object: PhantomData,
        }
    }

    fn new(name: String, shape: Shape) -> Self {
        Controller {
            name,
            shape,
            hooks: Vec::new(),
            crds: Vec::new(),
            resync_period: None,
            hook_timeout: Duration::from_secs(10),
            problems: Vec::new(),
        }
    }

    /// Its name: the first segment of its hooks' paths (`/{name}/sync`)
    /// and its manifest's `metadata.name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it controls: a parent and its child types, or a decorated type
    /// and its attachment types.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The hook of this kind, if the controller has one.
    pub fn hook(&self, kind: HookKind) -> Option<Handler> {
        self.hooks
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, handler)| handler.clone())
    }

    /// The kinds of hook it has, in the order they were declared.
    pub fn hook_kinds(&self) -> impl Iterator<Item = HookKind> + '_ {
        self.hooks.iter().map(|(kind, _)| *kind)
    }

    /// The CRDs it owns (its parent's, its children's), as declared.
    pub fn crds(&self) -> Vec<CustomResourceDefinition> {
        self.crds
            .iter()
            .map(|crd| match crd {
                Crd::Made(crd) => (**crd).clone(),
                Crd::Of(make) => make(),
            })
            .collect()
    }

    /// Whether the declaration can work: a sync hook, each type a hook
    /// reads among those declared, a name fit for a URL path.
    pub fn check(&self) -> Result<(), DeclarationError> {
        let mut problems = self.problems.clone();
        if !self.hooks.iter().any(|(k, _)| *k == HookKind::Sync) {
            problems.push("it has no sync hook".to_owned());
        }
        let fit = !self.name.is_empty()
            && self.name.len() <= 63
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !self.name.starts_with('-')
            && !self.name.ends_with('-');
        if !fit {
            problems.push(
                "its name must be a DNS label (lowercase letters, digits and '-', at most 63)"
                    .to_owned(),
            );
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(DeclarationError {
                name: self.name.clone(),
                problems,
            })
        }
    }

    /// The CompositeController (or DecoratorController) manifest that
    /// Metacontroller reads, its webhooks at `webhooks`' Service.
    pub fn manifest(&self, webhooks: &Webhooks) -> Value {
        let hook = |kind: HookKind| {
            json!({
                "version": "v2",
                "webhook": {
                    "service": {
                        "name": webhooks.service,
                        "namespace": webhooks.namespace,
                        "port": webhooks.port,
                    },
                    "path": format!("/{}/{}", self.name, kind),
                    "timeout": format!("{}s", self.hook_timeout.as_secs()),
                },
            })
        };
        let mut hooks = serde_json::Map::new();
        for kind in self.hook_kinds() {
            hooks.insert(kind.as_str().to_owned(), hook(kind));
        }
        let children = |types: &[ChildType]| -> Vec<Value> {
            types
                .iter()
                .map(|c| {
                    json!({
                        "apiVersion": c.type_ref.api_version,
                        "resource": c.type_ref.plural,
                        "updateStrategy": {"method": c.update.method()},
                    })
                })
                .collect()
        };
        let (kind, mut spec) = match &self.shape {
            Shape::Composite {
                parent,
                children: types,
                generate_selector,
            } => (
                "CompositeController",
                json!({
                    "parentResource": {"apiVersion": parent.api_version, "resource": parent.plural},
                    "childResources": children(types),
                    "generateSelector": generate_selector,
                    "hooks": hooks,
                }),
            ),
            Shape::Decorator {
                resource,
                attachments,
            } => (
                "DecoratorController",
                json!({
                    "resources": [{"apiVersion": resource.api_version, "resource": resource.plural}],
                    "attachments": children(attachments),
                    "hooks": hooks,
                }),
            ),
        };
        if let Some(period) = self.resync_period {
            spec["resyncPeriodSeconds"] = json!(period.as_secs());
        }
        json!({
            "apiVersion": "metacontroller.k8s.io/v1alpha1",
            "kind": kind,
            "metadata": {"name": self.name},
            "spec": spec,
        })
    }

    fn add_hook(&mut self, kind: HookKind, handler: Handler) {
        if self.hooks.iter().any(|(k, _)| *k == kind) {
            self.problems
                .push(format!("its {kind} hook is declared twice"));
        }
        self.hooks.push((kind, handler));
    }

    /// Notes a problem if a member of the set `S` a hook reads accepts none
    /// of the declared `types`: it would never be given an object.
    fn reads<S: ObjectSet>(&mut self, what: &str, types: &[ChildType]) {
        for member in S::members() {
            let declared = types
                .iter()
                .any(|t| (member.accepts)(&t.type_ref.kind, &t.type_ref.api_version));
            if !declared {
                self.problems.push(format!(
                    "a hook reads {} as {what}, but no {what} type it accepts is declared",
                    member.type_name
                ));
            }
        }
    }
}

/// The typed builder of a CompositeController whose parent is `P`
/// ([`Controller::composite`]).
pub struct Composite<P> {
    controller: Controller,
    _parent: PhantomData<fn() -> P>,
}

impl<P: ParentType> Composite<P> {
    /// A child type and how its objects are updated. Children are matched
    /// by a controller-uid label Metacontroller adds
    /// ([`Composite::generate_selector`]).
    pub fn child<T: Object>(mut self, update: UpdateStrategy) -> Self {
        if let Shape::Composite { children, .. } = &mut self.controller.shape {
            children.push(ChildType {
                type_ref: T::type_ref(),
                update,
            });
        }
        self
    }

    /// Whether children are matched by a label Metacontroller generates
    /// (`true`, the default) or by the parent's own `spec.selector`.
    pub fn generate_selector(mut self, generate: bool) -> Self {
        if let Shape::Composite {
            generate_selector, ..
        } = &mut self.controller.shape
        {
            *generate_selector = generate;
        }
        self
    }

    /// Call `sync` for every parent at least this often.
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.controller.resync_period = Some(period);
        self
    }

    /// How long Metacontroller waits for a hook's answer (default 10 s).
    pub fn hook_timeout(mut self, timeout: Duration) -> Self {
        self.controller.hook_timeout = timeout;
        self
    }

    /// A CRD this controller owns (its parent's, a child's): printed by
    /// `crds` and installed by the chart.
    pub fn crd(mut self, crd: CustomResourceDefinition) -> Self {
        self.controller.crds.push(Crd::Made(Box::new(crd)));
        self
    }

    /// The CRD of `K`, a `#[derive(CustomResource)]` type this controller
    /// owns: made only when asked for (`crds`, the chart), not when the
    /// controller is declared.
    pub fn crd_of<K: kube::CustomResourceExt>(mut self) -> Self {
        self.controller.crds.push(Crd::Of(K::crd));
        self
    }

    /// The `sync` hook: the parent and its children in, its status and
    /// desired children out.
    pub fn sync<C, R, A, F>(self, hook: F) -> Self
    where
        C: ObjectSet,
        R: ObjectSet,
        A: IntoAnswer<Answer<P::StatusType>>,
        F: Fn(&Request<P, C, R>) -> A + Send + Sync + 'static,
    {
        self.request_hook(HookKind::Sync, hook)
    }

    /// The `finalize` hook, called instead of `sync` once the parent is
    /// being deleted, until it answers [`Answer::finalized`]`(true)`.
    pub fn finalize<C, R, A, F>(self, hook: F) -> Self
    where
        C: ObjectSet,
        R: ObjectSet,
        A: IntoAnswer<Answer<P::StatusType>>,
        F: Fn(&Request<P, C, R>) -> A + Send + Sync + 'static,
    {
        self.request_hook(HookKind::Finalize, hook)
    }

    /// The `customize` hook: which related objects to send with each sync.
    pub fn customize<A, F>(mut self, hook: F) -> Self
    where
        A: IntoAnswer<CustomizeAnswer>,
        F: Fn(&Customize<P>) -> A + Send + Sync + 'static,
    {
        let handler: Handler = Arc::new(move |body, now| {
            let request: WireCustomize<P> = decode(body)?;
            let answer = hook(&request.at(now))
                .into_answer()
                .map_err(|message| HookError::Failed { message })?;
            Ok(serde_json::to_vec(&answer)?)
        });
        self.controller.add_hook(HookKind::Customize, handler);
        self
    }

    fn request_hook<C, R, A, F>(mut self, kind: HookKind, hook: F) -> Self
    where
        C: ObjectSet,
        R: ObjectSet,
        A: IntoAnswer<Answer<P::StatusType>>,
        F: Fn(&Request<P, C, R>) -> A + Send + Sync + 'static,
    {
        if let Shape::Composite { children, .. } = &self.controller.shape {
            let children = children.clone();
            self.controller.reads::<C>("child", &children);
        }
        let handler: Handler = Arc::new(move |body, now| {
            let request: WireRequest<P, C, R> = decode(body)?;
            let answer = hook(&request.at(now))
                .into_answer()
                .map_err(|message| HookError::Failed { message })?;
            Ok(answer.to_json()?)
        });
        self.controller.add_hook(kind, handler);
        self
    }

    /// The controller, declared.
    pub fn build(self) -> Controller {
        self.controller
    }
}

impl<P: ParentType> From<Composite<P>> for Controller {
    fn from(composite: Composite<P>) -> Controller {
        composite.build()
    }
}

/// The typed builder of a DecoratorController of objects `T`
/// ([`Controller::decorator`]).
pub struct Decorator<T> {
    controller: Controller,
    _object: PhantomData<fn() -> T>,
}

impl<T: Object> Decorator<T> {
    /// An attachment type and how its objects are updated.
    pub fn attachment<A: Object>(mut self, update: UpdateStrategy) -> Self {
        if let Shape::Decorator { attachments, .. } = &mut self.controller.shape {
            attachments.push(ChildType {
                type_ref: A::type_ref(),
                update,
            });
        }
        self
    }

    /// Call `sync` for every object at least this often.
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.controller.resync_period = Some(period);
        self
    }

    /// How long Metacontroller waits for a hook's answer (default 10 s).
    pub fn hook_timeout(mut self, timeout: Duration) -> Self {
        self.controller.hook_timeout = timeout;
        self
    }

    /// A CRD this controller owns.
    pub fn crd(mut self, crd: CustomResourceDefinition) -> Self {
        self.controller.crds.push(Crd::Made(Box::new(crd)));
        self
    }

    /// The CRD of `K`, a `#[derive(CustomResource)]` type this controller
    /// owns: made only when asked for (`crds`, the chart), not when the
    /// controller is declared.
    pub fn crd_of<K: kube::CustomResourceExt>(mut self) -> Self {
        self.controller.crds.push(Crd::Of(K::crd));
        self
    }

    /// The `sync` hook: the object and its attachments in, the edits and
    /// desired attachments out.
    pub fn sync<A, R, S, Out, F>(self, hook: F) -> Self
    where
        T: DeserializeOwned,
        A: ObjectSet,
        R: ObjectSet,
        S: Serialize,
        Out: IntoAnswer<DecoratorAnswer<S>>,
        F: Fn(&Decorate<T, A, R>) -> Out + Send + Sync + 'static,
    {
        self.request_hook(HookKind::Sync, hook)
    }

    /// The `finalize` hook, once the object is being deleted.
    pub fn finalize<A, R, S, Out, F>(self, hook: F) -> Self
    where
        T: DeserializeOwned,
        A: ObjectSet,
        R: ObjectSet,
        S: Serialize,
        Out: IntoAnswer<DecoratorAnswer<S>>,
        F: Fn(&Decorate<T, A, R>) -> Out + Send + Sync + 'static,
    {
        self.request_hook(HookKind::Finalize, hook)
    }

    fn request_hook<A, R, S, Out, F>(mut self, kind: HookKind, hook: F) -> Self
    where
        A: ObjectSet,
        R: ObjectSet,
        S: Serialize,
        Out: IntoAnswer<DecoratorAnswer<S>>,
        F: Fn(&Decorate<T, A, R>) -> Out + Send + Sync + 'static,
    {
        if let Shape::Decorator { attachments, .. } = &self.controller.shape {
            let attachments = attachments.clone();
            self.controller.reads::<A>("attachment", &attachments);
        }
        let handler: Handler = Arc::new(move |body, now| {
            let request: WireDecorate<T, A, R> = decode(body)?;
            let answer = hook(&request.at(now))
                .into_answer()
                .map_err(|message| HookError::Failed { message })?;
            Ok(answer.to_json()?)
        });
        self.controller.add_hook(kind, handler);
        self
    }

    /// The controller, declared.
    pub fn build(self) -> Controller {
        self.controller
    }
}

impl<T: Object> From<Decorator<T>> for Controller {
    fn from(decorator: Decorator<T>) -> Controller {
        decorator.build()
    }
}

#[cfg(test)]
mod tests;
