//! The objects of one type, in a fixed order, and how a group of them is
//! read bounded.

use crate::object::Object;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::fmt;

/// The objects of one type, sorted by namespace and name.
#[derive(Debug, Clone, PartialEq)]
pub struct Objects<T> {
    pub(super) items: Vec<T>,
}

impl<T> Default for Objects<T> {
    fn default() -> Self {
        Objects { items: Vec::new() }
    }
}

impl<T: Object> Objects<T> {
    /// `objects`, sorted.
    pub fn new(objects: impl IntoIterator<Item = T>) -> Self {
        let mut items: Vec<T> = objects.into_iter().collect();
        sort(&mut items);
        Objects { items }
    }

    /// The object named `name` (the first, in a set spanning namespaces).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    /// use metahook_core::Objects;
    ///
    /// let map = |namespace: &str, name: &str| ConfigMap {
    ///     metadata: ObjectMeta {
    ///         name: Some(name.to_owned()),
    ///         namespace: Some(namespace.to_owned()),
    ///         ..Default::default()
    ///     },
    ///     ..Default::default()
    /// };
    /// let maps = Objects::new([map("shop", "web"), map("blog", "web"), map("shop", "db")]);
    /// let namespace = |m: &ConfigMap| m.metadata.namespace.clone();
    /// assert_eq!(maps.get("db").and_then(namespace).as_deref(), Some("shop"));
    /// // Two are named web: the first by namespace.
    /// assert_eq!(maps.get("web").and_then(namespace).as_deref(), Some("blog"));
    /// assert!(maps.get_in("shop", "web").is_some());
    /// assert!(maps.get("api").is_none());
    /// ```
    pub fn get(&self, name: &str) -> Option<&T> {
        self.items.iter().find(|o| o.name() == name)
    }

    /// The object named `name` in `namespace`.
    pub fn get_in(&self, namespace: &str, name: &str) -> Option<&T> {
        self.items
            .binary_search_by(|o| {
                (o.namespace().unwrap_or_default(), o.name()).cmp(&(namespace, name))
            })
            .ok()
            .map(|i| &self.items[i])
    }
}

impl<T> Objects<T> {
    /// The objects, by namespace and name.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

impl<'a, T> IntoIterator for &'a Objects<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

pub(super) fn sort<T: Object>(items: &mut [T]) {
    items.sort_by(|a, b| {
        (a.namespace().unwrap_or_default(), a.name())
            .cmp(&(b.namespace().unwrap_or_default(), b.name()))
    });
}

/// Appends one group's objects (`{"key": object}`) to a list, at most `max`
/// in all: what a hook builds grows with them, so a request with more is
/// refused. [`crate::protocol::ObjectMap`] reads its groups with it too.
pub(crate) struct GroupSeed<'a, T> {
    /// The list, shared by every group of a type.
    pub(crate) into: &'a mut Vec<T>,
    /// The type's bound.
    pub(crate) max: usize,
}

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for GroupSeed<'_, T> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for GroupSeed<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of object keys (\"name\" or \"namespace/name\") to objects")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key::<IgnoredAny>()?.is_some() {
            if self.into.len() == self.max {
                return Err(serde::de::Error::custom(format_args!(
                    "more than {} objects of this type; no parent of this controller has that many",
                    self.max
                )));
            }
            self.into.push(map.next_value()?);
        }
        Ok(())
    }
}
