//! What a hook of yours is given: the request Metacontroller (or the
//! bundled driver) sent, decoded into your types, and the time.
//!
//! - [`Request`]: a CompositeController's `sync` or `finalize` — the
//!   parent, its children and related objects by type;
//! - [`Customize`]: a `customize` — the parent alone;
//! - [`Decorate`]: a DecoratorController's `sync` or `finalize` — the
//!   decorated object and its attachments.
//!
//! The parent's spec is read leniently: a spec that does not fit its type
//! is an error for the hook to report in the status (nothing is lost, the
//! user is told why), not a refused request. `now` is read by the server,
//! never by the hook, so the same request always gives the same answer.

use crate::collection::{Nothing, ObjectSet, ObjectsBy};
use crate::conditions::{self, Wanted};
use crate::decode::{DecodeError, decode};
use crate::protocol::IgnoredObject;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::core::object::{HasSpec, HasStatus};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;

pub use crate::objects::{Meta, OwnerRef, ParentMeta, ParentObject, SpecError};

/// A type that can be a CompositeController's parent: a Kubernetes
/// resource with a spec and a status, as `#[derive(CustomResource)]` with
/// `status = "..."` makes one.
pub trait ParentType:
    kube::Resource<DynamicType = ()>
    + HasSpec<Spec = Self::SpecType>
    + HasStatus<Status = Self::StatusType>
    + 'static
{
    /// Its spec: what a hook reads in `req.parent.spec`.
    type SpecType: DeserializeOwned;
    /// Its status: what a hook answers ([`crate::Answer`]), and reads back
    /// in `req.parent.status`.
    type StatusType: DeserializeOwned + Serialize;

    /// The type, as manifests name it.
    fn type_ref() -> crate::TypeRef;
}

impl<K> ParentType for K
where
    K: kube::Resource<DynamicType = ()> + HasSpec + HasStatus + 'static,
    K::Scope: crate::object::Scope,
    K::Spec: DeserializeOwned,
    K::Status: DeserializeOwned + Serialize,
{
    type SpecType = K::Spec;
    type StatusType = K::Status;

    fn type_ref() -> crate::TypeRef {
        crate::TypeRef::of::<K>()
    }
}

/// The parent as a hook reads it: its metadata, its spec (or why it could
/// not be read) and its current status (absent if it has none or it could
/// not be read).
pub type Parent<P> = ParentObject<<P as ParentType>::SpecType, <P as ParentType>::StatusType>;

/// A status that holds conditions: with it, [`Request::conditions`] keeps
/// each condition's transition time while its status does not change.
pub trait HasConditions {
    /// The conditions the status holds now.
    fn conditions(&self) -> &[Condition];
}

/// A `sync` or `finalize` request of a CompositeController whose parent is
/// `P`, with children of the types `C` and related objects of the types
/// `R` (each [`Nothing`], one type, or [`And`](crate::collection::And) of two sets, nested for more).
pub struct Request<P: ParentType, C: ObjectSet = Nothing, R: ObjectSet = Nothing> {
    /// The parent: its metadata, its spec (or why it does not fit its
    /// type) and its current status.
    pub parent: Parent<P>,
    /// The children, by type: `req.children.of::<Deployment>()`.
    pub children: ObjectsBy<C>,
    /// The objects the `customize` hook's rules selected, by type.
    pub related: ObjectsBy<R>,
    /// Whether this is the `finalize` hook's call (the parent is being
    /// deleted).
    pub finalizing: bool,
    /// When the request is answered.
    pub now: Timestamp,
}

/// The request as it arrives (docs/metacontroller.md §1.3).
#[derive(Deserialize)]
#[serde(
    bound(deserialize = "P: ParentType"),
    expecting = "a sync request: an object with parent and children"
)]
pub(crate) struct WireRequest<P: ParentType, C: ObjectSet, R: ObjectSet> {
    #[serde(default)]
    controller: IgnoredObject,
    parent: Parent<P>,
    children: ObjectsBy<C>,
    /// Absent only in hand-written requests; Metacontroller always sends
    /// `{}`.
    #[serde(default)]
    related: ObjectsBy<R>,
    #[serde(default)]
    finalizing: bool,
}

impl<P: ParentType, C: ObjectSet, R: ObjectSet> WireRequest<P, C, R> {
    pub(crate) fn at(self, now: Timestamp) -> Request<P, C, R> {
        let _ = self.controller;
        Request {
            parent: self.parent,
            children: self.children,
            related: self.related,
            finalizing: self.finalizing,
            now,
        }
    }
}

impl<P: ParentType, C: ObjectSet, R: ObjectSet> Request<P, C, R> {
    /// The request in `body`, as Metacontroller sends it, at `now`.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use metahook_core::Request;
    /// # use kube::CustomResource;
    /// # use schemars::JsonSchema;
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
    /// # #[kube(group = "example.com", version = "v1", kind = "Note", namespaced, status = "NoteStatus")]
    /// # pub struct NoteSpec { text: String }
    /// # #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    /// # pub struct NoteStatus {}
    ///
    /// let body = br#"{
    ///     "parent": {
    ///         "apiVersion": "example.com/v1", "kind": "Note",
    ///         "metadata": {"name": "n", "namespace": "ns"}, "spec": {"text": 3}
    ///     },
    ///     "children": {"ConfigMap.v1": {"ns/n": {"metadata": {"name": "n", "namespace": "ns"}}}}
    /// }"#;
    /// let now = "2026-11-22T03:00:00Z".parse()?;
    /// let req = Request::<Note, ConfigMap>::from_json(body, now)?;
    /// assert!(req.children.of::<ConfigMap>().get("n").is_some());
    /// // A spec that does not fit its type is for the hook to report.
    /// let invalid = req.parent.spec.unwrap_err();
    /// assert_eq!(invalid.path, "spec.text");
    /// // A body that is no request is refused, saying where.
    /// let err = Request::<Note, ConfigMap>::from_json(br#"{"parent": 1}"#, now).unwrap_err();
    /// assert!(err.to_string().starts_with("unexpected request shape at `parent`"), "{err}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_json(body: &[u8], now: Timestamp) -> Result<Self, DecodeError> {
        decode::<WireRequest<P, C, R>>(body).map(|wire| wire.at(now))
    }

    /// A request for `parent` with no children nor related objects, at
    /// `now` (for tests: add objects with `children.insert`).
    pub fn new(parent: Parent<P>, now: Timestamp) -> Self {
        Request {
            parent,
            children: ObjectsBy::default(),
            related: ObjectsBy::default(),
            finalizing: false,
            now,
        }
    }

    /// The conditions `wanted`, in that order, as Kubernetes keeps them:
    /// each condition's `lastTransitionTime` is carried over from the
    /// parent's current status while its status is unchanged (now
    /// otherwise), and `observedGeneration` is the parent's generation.
    ///
    /// ```
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
    /// use metahook_core::{HasConditions, Request, Wanted};
    /// # use kube::CustomResource;
    /// # use schemars::JsonSchema;
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
    /// # #[kube(group = "example.com", version = "v1", kind = "Note", namespaced, status = "NoteStatus")]
    /// # pub struct NoteSpec { text: String }
    /// # #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    /// # pub struct NoteStatus { conditions: Vec<Condition> }
    /// impl HasConditions for NoteStatus {
    ///     fn conditions(&self) -> &[Condition] {
    ///         &self.conditions
    ///     }
    /// }
    ///
    /// // Ready since 03:00, as the current status says.
    /// let parent = serde_json::from_value(serde_json::json!({
    ///     "metadata": {"name": "n", "generation": 2},
    ///     "spec": {"text": "hi"},
    ///     "status": {"conditions": [{
    ///         "type": "Ready", "status": "True", "reason": "Copied", "message": "",
    ///         "lastTransitionTime": "2026-11-22T03:00:00Z",
    ///     }]},
    /// }))?;
    /// let req: Request<Note> = Request::new(parent, "2026-11-22T04:00:00Z".parse()?);
    /// let ready = Wanted::new("Ready", true, "Copied", "every copy written".to_owned());
    /// let [ready] = <[Condition; 1]>::try_from(req.conditions([ready])).unwrap();
    /// assert_eq!(ready.last_transition_time.0.to_string(), "2026-11-22T03:00:00Z");
    /// assert_eq!(ready.observed_generation, Some(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn conditions(&self, wanted: impl IntoIterator<Item = Wanted>) -> Vec<Condition>
    where
        P::StatusType: HasConditions,
    {
        let previous = self
            .parent
            .status
            .as_ref()
            .map(HasConditions::conditions)
            .unwrap_or_default();
        conditions::build(
            previous,
            wanted.into_iter().collect(),
            self.parent.metadata.generation,
            self.now,
        )
    }
}

impl<P: ParentType, C: ObjectSet, R: ObjectSet> fmt::Debug for Request<P, C, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("parent", &self.parent.metadata)
            .field("children", &self.children)
            .field("related", &self.related)
            .field("finalizing", &self.finalizing)
            .field("now", &self.now)
            .finish()
    }
}

/// A `customize` request (docs/metacontroller.md §1.6): the parent alone.
pub struct Customize<P: ParentType> {
    /// The parent, as in [`Request::parent`]. The answer must follow from
    /// it alone: it is remembered until the parent's spec changes.
    pub parent: Parent<P>,
    /// When the request is answered.
    pub now: Timestamp,
}

#[derive(Deserialize)]
#[serde(
    bound(deserialize = "P: ParentType"),
    expecting = "a customize request: an object with parent"
)]
pub(crate) struct WireCustomize<P: ParentType> {
    #[serde(default)]
    controller: IgnoredObject,
    parent: Parent<P>,
}

impl<P: ParentType> Customize<P> {
    /// The request in `body`, as Metacontroller sends it, at `now`.
    pub fn from_json(body: &[u8], now: Timestamp) -> Result<Self, DecodeError> {
        decode::<WireCustomize<P>>(body).map(|wire| wire.at(now))
    }
}

impl<P: ParentType> WireCustomize<P> {
    pub(crate) fn at(self, now: Timestamp) -> Customize<P> {
        let _ = self.controller;
        Customize {
            parent: self.parent,
            now,
        }
    }
}

impl<P: ParentType> fmt::Debug for Customize<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Customize")
            .field("parent", &self.parent.metadata)
            .field("now", &self.now)
            .finish()
    }
}

/// A DecoratorController's `sync` or `finalize` request
/// (docs/metacontroller.md §6): the decorated object `T`, whole, and its
/// attachments of the types `A`.
pub struct Decorate<T, A: ObjectSet = Nothing, R: ObjectSet = Nothing> {
    /// The decorated object, whole.
    pub object: T,
    /// The attachments this decorator made for it, by type:
    /// `req.attachments.of::<ConfigMap>()`.
    pub attachments: ObjectsBy<A>,
    /// The objects the `customize` hook's rules selected, by type.
    pub related: ObjectsBy<R>,
    /// Whether this is the `finalize` hook's call (the object is being
    /// deleted).
    pub finalizing: bool,
    /// When the request is answered.
    pub now: Timestamp,
}

#[derive(Deserialize)]
#[serde(
    bound(deserialize = "T: DeserializeOwned"),
    expecting = "a decorator request: an object with object and attachments"
)]
pub(crate) struct WireDecorate<T, A: ObjectSet, R: ObjectSet> {
    #[serde(default)]
    controller: IgnoredObject,
    object: T,
    /// Metacontroller always sends the key, `{}` when there are none.
    #[serde(default)]
    attachments: ObjectsBy<A>,
    #[serde(default)]
    related: ObjectsBy<R>,
    #[serde(default)]
    finalizing: bool,
}

impl<T: DeserializeOwned, A: ObjectSet, R: ObjectSet> Decorate<T, A, R> {
    /// The request in `body`, as Metacontroller sends it, at `now`.
    pub fn from_json(body: &[u8], now: Timestamp) -> Result<Self, DecodeError> {
        decode::<WireDecorate<T, A, R>>(body).map(|wire| wire.at(now))
    }
}

impl<T, A: ObjectSet, R: ObjectSet> WireDecorate<T, A, R> {
    pub(crate) fn at(self, now: Timestamp) -> Decorate<T, A, R> {
        let _ = self.controller;
        Decorate {
            object: self.object,
            attachments: self.attachments,
            related: self.related,
            finalizing: self.finalizing,
            now,
        }
    }
}
