//! The typed builder of a CompositeController ([`Controller::composite`]).

use super::declaration::{Controller, Crd};
use super::handler::handler;
use super::shape::{ChildType, Shape, UpdateStrategy};
use crate::answer::{Answer, CustomizeAnswer, IntoAnswer};
use crate::collection::ObjectSet;
use crate::hook::HookKind;
use crate::object::Object;
use crate::request::{Customize, ParentType, Request, WireCustomize, WireRequest};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use std::marker::PhantomData;
use std::time::Duration;

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

    settings!("parent");

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
        let handler = handler::<WireCustomize<P>, CustomizeAnswer, _, _>(hook);
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
        let handler = handler::<WireRequest<P, C, R>, Answer<P::StatusType>, _, _>(hook);
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
