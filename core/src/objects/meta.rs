//! The metadata a hook reads of an object ([`Meta`]) and of a parent
//! ([`ParentMeta`]), and the bounds on what they keep.

use super::visitors::{Bounded, Filtered, Firsts, StringMap, bounded, first_where};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;

/// The longest `metadata.name` Kubernetes accepts (a DNS-1123 subdomain).
pub const MAX_NAME_LEN: usize = 253;
/// The longest `metadata.namespace` (a DNS-1123 label).
pub const MAX_NAMESPACE_LEN: usize = 63;
/// Longer than any UID the API server writes (36 characters).
pub const MAX_UID_LEN: usize = 128;

/// How many labels, and how many annotations, a parent's metadata keeps:
/// the first ones; the rest are checked to be strings and not kept.
pub const MAX_KEPT_ENTRIES: usize = 64;

/// Annotations holding a copy of the whole object as last applied, by
/// `kubectl apply` and by Metacontroller on every child. No hook reads them,
/// and unescaping them was most of the cost of decoding a child: they are
/// skipped, not kept.
pub const LAST_APPLIED: [&str; 2] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    "metacontroller.k8s.io/last-applied-configuration",
];

/// Which annotations a [`Meta`] keeps: a view names the ones its hook
/// reads, and the rest are checked to be strings and not kept (what a hook
/// holds must not grow with what a user writes).
pub trait KeptAnnotations {
    /// The keys of the annotations kept.
    const KEYS: &'static [&'static str];
}

/// Keeps no annotation.
impl KeptAnnotations for () {
    const KEYS: &'static [&'static str] = &[];
}

/// The metadata fields a hook reads: name, namespace, uid, generation,
/// the creation and deletion times, the controller owner reference, and
/// the annotations `A` names.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    rename_all = "camelCase",
    default,
    expecting = "object metadata",
    bound(deserialize = "A: KeptAnnotations")
)]
pub struct Meta<A = ()> {
    /// `metadata.name` (refused past [`MAX_NAME_LEN`] bytes).
    #[serde(deserialize_with = "name")]
    pub name: String,
    /// `metadata.namespace`; `None` for a cluster-scoped object.
    #[serde(deserialize_with = "namespace")]
    pub namespace: Option<String>,
    /// `metadata.uid`: the object's identity, which owner references name
    /// (one deleted and made again under the same name has a new one).
    #[serde(deserialize_with = "uid")]
    pub uid: Option<String>,
    /// `metadata.generation`: raised by the API server at each change of
    /// the spec, not of the status.
    pub generation: Option<i64>,
    /// `metadata.creationTimestamp`.
    pub creation_timestamp: Option<Time>,
    /// `metadata.deletionTimestamp`: set once the object is being deleted
    /// (it stays while a finalizer holds it).
    pub deletion_timestamp: Option<Time>,
    /// Read by no hook: checked to be a map of strings, not kept.
    #[serde(rename = "labels")]
    _labels: StringMap,
    /// Only those `A` names; the rest are checked to be strings, but the
    /// last-applied copies of the whole object ([`LAST_APPLIED`]) are
    /// skipped unread.
    #[serde(deserialize_with = "annotations::<A, _>")]
    pub annotations: BTreeMap<String, String>,
    /// The first owner reference marked `controller: true`, the only one a
    /// hook reads; every reference is still checked for its type.
    #[serde(rename = "ownerReferences", deserialize_with = "controller_ref")]
    pub controller: Option<OwnerRef>,
    #[serde(skip)]
    _kept: std::marker::PhantomData<fn() -> A>,
}

impl<A> Default for Meta<A> {
    fn default() -> Self {
        Meta {
            name: String::new(),
            namespace: None,
            uid: None,
            generation: None,
            creation_timestamp: None,
            deletion_timestamp: None,
            _labels: StringMap,
            annotations: BTreeMap::new(),
            controller: None,
            _kept: std::marker::PhantomData,
        }
    }
}

impl<A> Meta<A> {
    /// The owner reference marked `controller: true`, if any.
    pub fn controller(&self) -> Option<&OwnerRef> {
        self.controller.as_ref()
    }

    /// Whether the object's controller is the object with this UID. An
    /// unknown UID controls nothing: when in doubt, the object is not ours.
    pub fn is_controlled_by(&self, uid: Option<&str>) -> bool {
        match (self.controller(), uid) {
            (Some(owner), Some(uid)) => owner.uid == uid,
            _ => false,
        }
    }
}

/// An owner reference (an entry of `metadata.ownerReferences`): the object
/// that owns this one, whose deletion deletes it too.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OwnerRef {
    /// The owner's `apiVersion`.
    pub api_version: String,
    /// The owner's kind.
    pub kind: String,
    /// The owner's name.
    pub name: String,
    /// The owner's UID: which object of that name, so that one made again
    /// under the same name is not taken for the owner.
    pub uid: String,
    /// Whether the owner is the object's controller, the one that manages
    /// it (`controller: true`); an object has at most one.
    pub controller: Option<bool>,
}

/// A parent's metadata as a hook reads it: [`Meta`]'s fields, and its labels
/// and annotations (at most [`MAX_KEPT_ENTRIES`] of each; the last-applied
/// copies of the whole object skipped) — to copy onto children, or to read
/// settings a user puts there.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, expecting = "object metadata")]
pub struct ParentMeta {
    /// `metadata.name` (refused past [`MAX_NAME_LEN`] bytes).
    #[serde(deserialize_with = "name")]
    pub name: String,
    /// `metadata.namespace`; `None` for a cluster-scoped object.
    #[serde(deserialize_with = "namespace")]
    pub namespace: Option<String>,
    /// `metadata.uid`: the object's identity, which owner references name
    /// (one deleted and made again under the same name has a new one).
    #[serde(deserialize_with = "uid")]
    pub uid: Option<String>,
    /// `metadata.generation`: raised by the API server at each change of
    /// the spec, not of the status.
    pub generation: Option<i64>,
    /// `metadata.creationTimestamp`.
    pub creation_timestamp: Option<Time>,
    /// `metadata.deletionTimestamp`: set once the object is being deleted
    /// (it stays while a finalizer holds it).
    pub deletion_timestamp: Option<Time>,
    /// The first [`MAX_KEPT_ENTRIES`] labels, as the request lists them.
    #[serde(deserialize_with = "first_labels")]
    pub labels: BTreeMap<String, String>,
    /// The first [`MAX_KEPT_ENTRIES`] annotations, as the request lists
    /// them, but the last-applied copies of the whole object
    /// ([`LAST_APPLIED`]).
    #[serde(deserialize_with = "first_annotations")]
    pub annotations: BTreeMap<String, String>,
}

fn first_labels<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    d.deserialize_map(Firsts {
        max: MAX_KEPT_ENTRIES,
        skip: &[],
    })
}

fn first_annotations<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    d.deserialize_map(Firsts {
        max: MAX_KEPT_ENTRIES,
        skip: &LAST_APPLIED,
    })
}

fn name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    bounded::<D, MAX_NAME_LEN>(d)
}

fn namespace<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<Bounded<MAX_NAMESPACE_LEN>>::deserialize(d).map(|o| o.map(|b| b.0))
}

fn uid<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<Bounded<MAX_UID_LEN>>::deserialize(d).map(|o| o.map(|b| b.0))
}

fn annotations<'de, A: KeptAnnotations, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    d.deserialize_map(Filtered {
        keep: A::KEYS,
        skip: &LAST_APPLIED,
    })
}

fn controller_ref<'de, D: Deserializer<'de>>(d: D) -> Result<Option<OwnerRef>, D::Error> {
    first_where(d, |owner: &OwnerRef| owner.controller == Some(true))
}
