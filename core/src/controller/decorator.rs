//! The typed builder of a DecoratorController ([`Controller::decorator`]).

use super::declaration::{Controller, Crd};
use super::handler::handler;
use super::shape::{ChildType, Shape, UpdateStrategy};
use crate::answer::{DecoratorAnswer, IntoAnswer};
use crate::collection::ObjectSet;
use crate::hook::HookKind;
use crate::object::Object;
use crate::request::{Decorate, WireDecorate};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::marker::PhantomData;
use std::time::Duration;

impl Controller {
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

    settings!("object");

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
        let handler = handler::<WireDecorate<T, A, R>, DecoratorAnswer<S>, _, _>(hook);
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
