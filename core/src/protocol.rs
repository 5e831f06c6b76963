//! Metacontroller's CompositeController hook protocol
//! (docs/metacontroller.md §1).
//!
//! Requests are generic over the parent type and the observed object types so
//! that each controller parses only what it reads; everything else in the
//! (large) request is skipped without being built.
//!
//! Object maps (`children`, `related`) are read by iterating their values:
//! the keys differ between hook versions v1 (`name`) and v2
//! (`namespace/name`), and the objects carry their own names anyway.

pub mod decorator;

use crate::collection::GroupSeed;
use crate::objects::Observed;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::marker::PhantomData;

/// A `customize` response: which related objects Metacontroller should send
/// with each sync of this parent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomizeResponse {
    /// `relatedResources`: the rules; every object one selects is sent in
    /// `related`.
    pub related_resources: Vec<RelatedResourceRule>,
}

/// One related-resource rule (docs/metacontroller.md §1.6). `names` must not
/// be combined with a selector, nor `namespace` with `namespaceSelector`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedResourceRule {
    /// `apiVersion` of the objects: `v1`, `apps/v1`.
    pub api_version: String,
    /// `resource`: their plural resource name, `configmaps`.
    pub resource: String,
    /// `labelSelector`: only objects whose labels it matches (`{}`
    /// matches every one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// `namespaceSelector`: only objects in the namespaces whose labels it
    /// matches (namespaced types only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// `namespace`: only objects in this namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `names`: only objects of these names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names: Option<Vec<String>>,
}

/// Any JSON value, skipped without being built.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IgnoredObject;

/// Skipped objects take no memory, however many.
impl Observed for IgnoredObject {
    const MAX: usize = usize::MAX;
}

impl<'de> Deserialize<'de> for IgnoredObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| IgnoredObject)
    }
}

/// The objects of a request map (`{"Kind.group/version": {"key": object}}`),
/// flattened in the order they appear. Keys are dropped on purpose: see the
/// module documentation. At most [`Observed::MAX`] objects: what a hook
/// builds grows with them (docs/robustness.md).
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectMap<T> {
    objects: Vec<T>,
}

impl<T> ObjectMap<T> {
    /// No objects: a request's `{}`.
    pub fn empty() -> Self {
        Self {
            objects: Vec::new(),
        }
    }

    /// The objects, in the order the request gave them.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.objects.iter()
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

impl<T> FromIterator<T> for ObjectMap<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Self {
            objects: iter.into_iter().collect(),
        }
    }
}

impl<'a, T> IntoIterator for &'a ObjectMap<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.objects.iter()
    }
}

impl<'de, T: Deserialize<'de> + Observed> Deserialize<'de> for ObjectMap<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(GroupsVisitor(PhantomData))
    }
}

/// Visits the outer map (one entry per object type).
struct GroupsVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de> + Observed> Visitor<'de> for GroupsVisitor<T> {
    type Value = ObjectMap<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of object types (\"Kind.group/version\") to maps of objects")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut objects = Vec::new();
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value_seed(GroupSeed {
                into: &mut objects,
                max: T::MAX,
            })?;
        }
        Ok(ObjectMap { objects })
    }
}
