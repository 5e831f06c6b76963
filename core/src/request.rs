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

use crate::collection::{ObjectSet, ObjectsBy, WireObjects};
use crate::conditions::{self, Conditions, WantedCondition};
use crate::decode::{DecodeError, decode};
use crate::protocol::IgnoredObject;
use jiff::Timestamp;
use kube::core::object::{HasSpec, HasStatus};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;

pub use crate::objects::{Meta, ParentMeta, ParentObject, SpecError};

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

/// A `sync` or `finalize` request of a CompositeController whose parent is
/// `P`, with children of the types `C` and related objects of the types
/// `R`: each `()`, one type, or a tuple (`(ReplicaSet, Service)`). The
/// child types are the controller's: a controller declared with this hook
/// owns children of exactly these types.
pub struct Request<P: ParentType, C = (), R = ()> {
    /// The parent: its metadata, its spec (or why it does not fit its
    /// type) and its current status.
    pub parent: Parent<P>,
    /// The children, by type: `req.children.get("web")` for one type,
    /// `req.children.of::<Service>().get("web")` in a tuple.
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
    bound(deserialize = "P: ParentType, C: ObjectSet<MC>, R: ObjectSet<MR>"),
    expecting = "a sync request: an object with parent and children"
)]
pub(crate) struct WireRequest<P: ParentType, C, R, MC, MR> {
    #[serde(default)]
    controller: IgnoredObject,
    parent: Parent<P>,
    children: WireObjects<C, MC>,
    /// Absent only in hand-written requests; Metacontroller always sends
    /// `{}`.
    #[serde(default)]
    related: WireObjects<R, MR>,
    #[serde(default)]
    finalizing: bool,
}

impl<P: ParentType, C, R, MC, MR> WireRequest<P, C, R, MC, MR> {
    pub(crate) fn at(self, now: Timestamp) -> Request<P, C, R> {
        let _ = self.controller;
        Request {
            parent: self.parent,
            children: self.children.0,
            related: self.related.0,
            finalizing: self.finalizing,
            now,
        }
    }
}

impl<P: ParentType, C, R> Request<P, C, R> {
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
    pub fn from_json<MC, MR>(body: &[u8], now: Timestamp) -> Result<Self, DecodeError>
    where
        C: ObjectSet<MC>,
        R: ObjectSet<MR>,
    {
        decode::<WireRequest<P, C, R, MC, MR>>(body).map(|wire| wire.at(now))
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
    /// use metahook_core::conditions::{Conditions, condition_true};
    /// use metahook_core::Request;
    /// # use kube::CustomResource;
    /// # use schemars::JsonSchema;
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
    /// # #[kube(group = "example.com", version = "v1", kind = "Note", namespaced, status = "NoteStatus")]
    /// # pub struct NoteSpec { text: String }
    /// #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    /// pub struct NoteStatus {
    ///     conditions: Conditions,
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
    /// let status = NoteStatus {
    ///     conditions: req.conditions([condition_true("Ready", "Copied").message("every copy written")]),
    /// };
    /// let ready = status.conditions.get("Ready").ok_or("Ready")?;
    /// assert_eq!(ready.last_transition_time.0.to_string(), "2026-11-22T03:00:00Z");
    /// assert_eq!(ready.observed_generation, Some(2));
    /// assert_eq!(ready.message, "every copy written");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn conditions(&self, wanted: impl IntoIterator<Item = WantedCondition>) -> Conditions {
        conditions::build(
            &self.parent.conditions,
            wanted.into_iter().collect(),
            self.parent.metadata.generation,
            self.now,
        )
        .into()
    }
}

impl<P: ParentType, C, R> fmt::Debug for Request<P, C, R> {
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
pub struct Decorate<T, A = (), R = ()> {
    /// The decorated object, whole.
    pub object: T,
    /// The attachments this decorator made for it, by type:
    /// `req.attachments.get("web")` for one type, `.of::<ConfigMap>()` in
    /// a tuple.
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
    bound(deserialize = "T: DeserializeOwned, A: ObjectSet<MA>, R: ObjectSet<MR>"),
    expecting = "a decorator request: an object with object and attachments"
)]
pub(crate) struct WireDecorate<T, A, R, MA, MR> {
    #[serde(default)]
    controller: IgnoredObject,
    object: T,
    /// Metacontroller always sends the key, `{}` when there are none.
    #[serde(default)]
    attachments: WireObjects<A, MA>,
    #[serde(default)]
    related: WireObjects<R, MR>,
    #[serde(default)]
    finalizing: bool,
}

impl<T: DeserializeOwned, A, R> Decorate<T, A, R> {
    /// The request in `body`, as Metacontroller sends it, at `now`.
    pub fn from_json<MA, MR>(body: &[u8], now: Timestamp) -> Result<Self, DecodeError>
    where
        A: ObjectSet<MA>,
        R: ObjectSet<MR>,
    {
        decode::<WireDecorate<T, A, R, MA, MR>>(body).map(|wire| wire.at(now))
    }
}

impl<T, A, R, MA, MR> WireDecorate<T, A, R, MA, MR> {
    pub(crate) fn at(self, now: Timestamp) -> Decorate<T, A, R> {
        let _ = self.controller;
        Decorate {
            object: self.object,
            attachments: self.attachments.0,
            related: self.related.0,
            finalizing: self.finalizing,
            now,
        }
    }
}
