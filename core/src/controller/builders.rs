//! The typed builders of a CompositeController ([`Controller::composite`])
//! and of a DecoratorController ([`Controller::decorator`]).

use super::declaration::{Controller, Crd, Versions};
use super::handler::handler;
use super::shape::{Shape, UpdateStrategy};
use super::types::Types;
use crate::admission::{Admission, Verdict, defaults_handler, validate_handler};
use crate::answer::{Answer, CustomizeAnswer, DecoratorAnswer, IntoAnswer};
use crate::collection::ObjectSet;
use crate::conversion::{Version, convert_handler};
use crate::hook::HookKind;
use crate::object::Object;
use crate::request::{
    Customize, Decorate, ParentMeta, ParentType, Request, WireCustomize, WireDecorate, WireRequest,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::marker::PhantomData;
use std::time::Duration;

/// The settings both builders take, written once: `$what` is what `sync`
/// is called for, at least every resync period.
macro_rules! settings {
    ($what:literal) => {
        #[doc = concat!("Call `sync` for every ", $what, " at least this often.")]
        pub fn resync_period(mut self, period: Duration) -> Self {
            self.controller.resync_period = Some(period);
            self
        }

        /// The revision of these hooks (`env!("CARGO_PKG_VERSION")`, a
        /// commit): each reconcile record names the revision that answered
        /// its parent, and the driver counts the parents each has answered.
        pub fn revision(mut self, revision: impl Into<String>) -> Self {
            self.controller.revision = Some(revision.into());
            self
        }

        /// How long Metacontroller waits for a hook's answer (default 10 s).
        pub fn hook_timeout(mut self, timeout: Duration) -> Self {
            self.controller.hook_timeout = timeout;
            self
        }

        /// A CRD this controller owns (its parent's, a child's, an
        /// attachment's): printed by `crds` and installed by the chart.
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
    };
}

impl Controller {
    /// A CompositeController named `name` (the first path segment of its
    /// hooks: `/{name}/sync`) whose parent is `P`, a custom resource whose
    /// CRD it owns. Its child types are those its hooks' requests read.
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
    ///     .sync(sync)
    ///     .build();
    /// assert_eq!(notes.hook_kinds().collect::<Vec<_>>(), [HookKind::Sync]);
    /// assert_eq!(notes.crds()[0].metadata.name.as_deref(), Some("notes.example.com"));
    /// // The CompositeController Metacontroller reads, its hooks at metahook's Service.
    /// let manifest = notes.manifest(&Webhooks::default());
    /// assert_eq!(manifest["spec"]["parentResource"]["resource"], "notes");
    /// assert_eq!(manifest["spec"]["hooks"]["sync"]["webhook"]["path"], "/note/sync");
    /// ```
    pub fn composite<P: ParentType + kube::CustomResourceExt>(
        name: impl Into<String>,
    ) -> Composite<P> {
        let mut controller = Controller::new(
            name.into(),
            Shape::Composite {
                parent: P::type_ref(),
                children: Vec::new(),
                generate_selector: true,
            },
        );
        controller.crds.push(Crd::Parent(P::crd));
        Composite {
            controller,
            types: Types::default(),
            versions: Vec::new(),
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
            types: Types::default(),
            _object: PhantomData,
        }
    }
}

/// The typed builder of a CompositeController whose parent is `P`
/// ([`Controller::composite`]).
pub struct Composite<P: ParentType> {
    controller: Controller,
    types: Types,
    /// The hub's version first, once another is declared.
    versions: Vec<Version<P>>,
    _parent: PhantomData<fn() -> P>,
}

impl<P: ParentType> Composite<P> {
    /// How the children of type `T` (one the hooks read) are updated, where
    /// it differs from [`UpdateStrategy::InPlace`]. Children are matched by
    /// a controller-uid label Metacontroller adds
    /// ([`Composite::generate_selector`]).
    pub fn update<T: Object>(mut self, update: UpdateStrategy) -> Self {
        self.types.update::<T>(update);
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
    /// desired children out. The types of its request's children are the
    /// controller's child types.
    pub fn sync<C, R, MC, MR, A, F>(self, hook: F) -> Self
    where
        C: ObjectSet<MC>,
        R: ObjectSet<MR>,
        A: IntoAnswer<Answer<P::StatusType>>,
        F: Fn(&Request<P, C, R>) -> A + Send + Sync + 'static,
    {
        self.request_hook(HookKind::Sync, hook)
    }

    /// The `finalize` hook, called instead of `sync` once the parent is
    /// being deleted, until it answers [`Answer::finalized`]`(true)`.
    pub fn finalize<C, R, MC, MR, A, F>(self, hook: F) -> Self
    where
        C: ObjectSet<MC>,
        R: ObjectSet<MR>,
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

    /// The `validate` hook, which the API server asks before it creates,
    /// changes or deletes a parent: a [`Verdict`] refuses with a message
    /// per field, or allows, with warnings either way. Served as an
    /// AdmissionReview webhook (the ValidatingWebhookConfiguration is
    /// generated with the chart).
    pub fn validate<A, F>(mut self, hook: F) -> Self
    where
        A: IntoAnswer<Verdict>,
        F: Fn(&Admission<P>) -> A + Send + Sync + 'static,
    {
        let handler = validate_handler::<P, A, F>(hook);
        self.controller.add_hook(HookKind::Validate, handler);
        self
    }

    /// The `default` hook, which the API server asks before it creates or
    /// changes a parent: it fills in the spec's defaults where the schema's
    /// own `default` cannot (a value from other fields, or from the name).
    /// Only the spec is changed; the API server is sent the patch.
    pub fn defaults<F>(mut self, hook: F) -> Self
    where
        P::SpecType: Serialize,
        F: Fn(&ParentMeta, &mut P::SpecType) + Send + Sync + 'static,
    {
        let handler = defaults_handler::<P, F>(hook);
        self.controller.add_hook(HookKind::Default, handler);
        self
    }

    /// Another version of the parent, `V`, served beside `P`'s: the API
    /// server converts between them with the `convert` hook, through `P`
    /// (the hub: the version every other hook reads and the one stored).
    /// `V` is the same kind in the same group, made by its own
    /// `#[derive(CustomResource)]` (in a module of its own, `v1::Foo`).
    ///
    /// The conversions are `From` both ways between the specs (and the
    /// statuses; one status type for both needs nothing, `From<T> for T`
    /// converts it): a conversion is total and plain, a spoke converts to
    /// the hub and back without knowing the other spokes, and a round
    /// trip is a property test away. A field one version lacks cannot be
    /// kept aside (in an annotation, as some operators do): give the
    /// other version the field too, optional, or the round trip loses it.
    ///
    /// The parent's CRD with every version and the webhook:
    /// [`Controller::crds_with_conversion`]; [`Controller::crds`] keeps to
    /// `P`'s version. See [`crate::conversion`] for an example.
    pub fn version<V>(mut self) -> Self
    where
        V: ParentType + kube::CustomResourceExt,
        V::SpecType: Serialize + From<P::SpecType>,
        V::StatusType: From<P::StatusType>,
        P::SpecType: Serialize + From<V::SpecType>,
        P::StatusType: From<V::StatusType>,
    {
        let (hub, spoke) = (P::type_ref(), V::type_ref());
        let differs = [
            ("group", P::group(&()) != V::group(&())),
            ("kind", hub.kind != spoke.kind),
            ("plural", hub.plural != spoke.plural),
            ("scope", hub.namespaced != spoke.namespaced),
        ];
        for (what, _) in differs.iter().filter(|(_, differs)| *differs) {
            self.controller.problems.push(format!(
                "its parent's version {} differs from {} in its {what}",
                spoke.api_version, hub.api_version
            ));
        }
        if spoke.api_version == hub.api_version
            || self
                .versions
                .iter()
                .any(|v| v.api_version == spoke.api_version)
        {
            self.controller.problems.push(format!(
                "its parent's version {} is declared twice",
                spoke.api_version
            ));
        }
        if self.versions.is_empty() {
            self.versions.push(Version::hub());
        }
        self.versions.push(Version::of::<V>());
        self.controller
            .versions
            .get_or_insert_with(|| Versions {
                hub: P::version(&()).into_owned(),
                others: Vec::new(),
            })
            .others
            .push(V::crd);
        self
    }

    fn request_hook<C, R, MC, MR, A, F>(mut self, kind: HookKind, hook: F) -> Self
    where
        C: ObjectSet<MC>,
        R: ObjectSet<MR>,
        A: IntoAnswer<Answer<P::StatusType>>,
        F: Fn(&Request<P, C, R>) -> A + Send + Sync + 'static,
    {
        self.types.read::<C, MC>();
        let handler = handler::<WireRequest<P, C, R, MC, MR>, Answer<P::StatusType>, _, _>(hook);
        self.controller.add_hook(kind, handler);
        self
    }

    /// The controller, declared.
    pub fn build(mut self) -> Controller {
        self.types.declare(&mut self.controller, "child");
        if !self.versions.is_empty() {
            let handler = convert_handler(std::mem::take(&mut self.versions));
            self.controller.add_hook(HookKind::Convert, handler);
        }
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
    types: Types,
    _object: PhantomData<fn() -> T>,
}

impl<T: Object> Decorator<T> {
    /// How the attachments of type `A` (one the hooks read) are updated,
    /// where it differs from [`UpdateStrategy::InPlace`].
    pub fn update<A: Object>(mut self, update: UpdateStrategy) -> Self {
        self.types.update::<A>(update);
        self
    }

    settings!("object");

    /// The `sync` hook: the object and its attachments in, the edits and
    /// desired attachments out. The types of its request's attachments are
    /// the controller's attachment types.
    pub fn sync<A, R, MA, MR, S, Out, F>(self, hook: F) -> Self
    where
        T: DeserializeOwned,
        A: ObjectSet<MA>,
        R: ObjectSet<MR>,
        S: Serialize,
        Out: IntoAnswer<DecoratorAnswer<S>>,
        F: Fn(&Decorate<T, A, R>) -> Out + Send + Sync + 'static,
    {
        self.request_hook(HookKind::Sync, hook)
    }

    /// The `finalize` hook, once the object is being deleted.
    pub fn finalize<A, R, MA, MR, S, Out, F>(self, hook: F) -> Self
    where
        T: DeserializeOwned,
        A: ObjectSet<MA>,
        R: ObjectSet<MR>,
        S: Serialize,
        Out: IntoAnswer<DecoratorAnswer<S>>,
        F: Fn(&Decorate<T, A, R>) -> Out + Send + Sync + 'static,
    {
        self.request_hook(HookKind::Finalize, hook)
    }

    fn request_hook<A, R, MA, MR, S, Out, F>(mut self, kind: HookKind, hook: F) -> Self
    where
        T: DeserializeOwned,
        A: ObjectSet<MA>,
        R: ObjectSet<MR>,
        S: Serialize,
        Out: IntoAnswer<DecoratorAnswer<S>>,
        F: Fn(&Decorate<T, A, R>) -> Out + Send + Sync + 'static,
    {
        self.types.read::<A, MA>();
        let handler = handler::<WireDecorate<T, A, R, MA, MR>, DecoratorAnswer<S>, _, _>(hook);
        self.controller.add_hook(kind, handler);
        self
    }

    /// The controller, declared.
    pub fn build(mut self) -> Controller {
        self.types.declare(&mut self.controller, "attachment");
        self.controller
    }
}

impl<T: Object> From<Decorator<T>> for Controller {
    fn from(decorator: Decorator<T>) -> Controller {
        decorator.build()
    }
}
