//! A request's objects by type: the children (or attachments, or related
//! objects) of each type a hook reads, decoded straight into that type and
//! kept in a fixed order.
//!
//! A request groups its objects as `{"Kind.apiVersion": {"key": object}}`.
//! Each group goes to the first type of the set that accepts it
//! ([`Object::accepts`]); a group no type accepts is skipped without being
//! built. The keys are not read (hook versions v1 and v2 key objects
//! differently, and each object carries its own name): a type's objects
//! are sorted by namespace and name, so that whoever sent the request —
//! Metacontroller or the bundled driver — the hook sees the same order and
//! answers the same bytes.

use crate::object::Object;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::any::{Any, TypeId};
use std::fmt;
use std::marker::PhantomData;

/// The objects of one type, sorted by namespace and name.
#[derive(Debug, Clone, PartialEq)]
pub struct Objects<T> {
    items: Vec<T>,
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

fn sort<T: Object>(items: &mut [T]) {
    items.sort_by(|a, b| {
        (a.namespace().unwrap_or_default(), a.name())
            .cmp(&(b.namespace().unwrap_or_default(), b.name()))
    });
}

/// The types of object a hook reads from one of a request's maps:
/// [`Nothing`], one type, or several joined by [`And`]
/// (`And<Zundoko, Kiyoshi>`, `And<A, And<B, C>>`).
pub trait ObjectSet: 'static {
    /// Each member's type, in order.
    fn members() -> Vec<Member>;

    /// Whether a member takes the objects of the group `kind`/`api_version`.
    fn accepts(kind: &str, api_version: &str) -> bool;

    /// Decodes an accepted group (the map's next value) into the first
    /// member that accepts it.
    #[doc(hidden)]
    fn read_group<'de, M: MapAccess<'de>>(
        kind: &str,
        api_version: &str,
        map: &mut M,
        store: &mut Store,
    ) -> Result<(), M::Error>;

    /// Sorts each member's objects, and gives each member a list.
    #[doc(hidden)]
    fn finish(store: &mut Store);
}

/// One type of an [`ObjectSet`].
#[derive(Debug, Clone)]
pub struct Member {
    /// The type's id: which of a request's lists holds its objects.
    pub type_id: TypeId,
    /// The type's Rust name, for messages (a hook reading a type no
    /// declared child is of).
    pub type_name: &'static str,
    /// [`Object::accepts`] of the type.
    pub accepts: fn(&str, &str) -> bool,
}

impl Member {
    fn of<T: Object>() -> Self {
        Member {
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
            accepts: T::accepts,
        }
    }
}

/// The decoded objects of each member of a set.
#[doc(hidden)]
#[derive(Default)]
pub struct Store {
    lists: Vec<(TypeId, Box<dyn Any + Send + Sync>)>,
}

impl Store {
    fn list<T: Object + Send + Sync>(&mut self) -> &mut Vec<T> {
        let id = TypeId::of::<T>();
        let at = match self.lists.iter().position(|(t, _)| *t == id) {
            Some(at) => at,
            None => {
                self.lists.push((id, Box::new(Objects::<T>::default())));
                self.lists.len() - 1
            }
        };
        match self.lists[at].1.downcast_mut::<Objects<T>>() {
            Some(objects) => &mut objects.items,
            None => unreachable!("a store's list is of the type its id names"),
        }
    }

    fn finish<T: Object + Send + Sync>(&mut self) {
        sort(self.list::<T>());
    }
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

/// No type: every object of the map is skipped unread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nothing {}

impl ObjectSet for Nothing {
    fn members() -> Vec<Member> {
        Vec::new()
    }

    fn accepts(_: &str, _: &str) -> bool {
        false
    }

    fn read_group<'de, M: MapAccess<'de>>(
        _: &str,
        _: &str,
        map: &mut M,
        _: &mut Store,
    ) -> Result<(), M::Error> {
        map.next_value::<IgnoredAny>().map(|_| ())
    }

    fn finish(_: &mut Store) {}
}

impl<T: Object + Send + Sync> ObjectSet for T {
    fn members() -> Vec<Member> {
        vec![Member::of::<T>()]
    }

    fn accepts(kind: &str, api_version: &str) -> bool {
        T::accepts(kind, api_version)
    }

    fn read_group<'de, M: MapAccess<'de>>(
        _: &str,
        _: &str,
        map: &mut M,
        store: &mut Store,
    ) -> Result<(), M::Error> {
        map.next_value_seed(GroupSeed {
            into: store.list::<T>(),
            max: T::MAX,
        })
    }

    fn finish(store: &mut Store) {
        store.finish::<T>();
    }
}

/// The types of `A` and then those of `B`: a group goes to `A` if one of
/// its types accepts it.
pub struct And<A, B>(PhantomData<fn() -> (A, B)>);

impl<A: ObjectSet, B: ObjectSet> ObjectSet for And<A, B> {
    fn members() -> Vec<Member> {
        let mut members = A::members();
        members.extend(B::members());
        members
    }

    fn accepts(kind: &str, api_version: &str) -> bool {
        A::accepts(kind, api_version) || B::accepts(kind, api_version)
    }

    fn read_group<'de, M: MapAccess<'de>>(
        kind: &str,
        api_version: &str,
        map: &mut M,
        store: &mut Store,
    ) -> Result<(), M::Error> {
        if A::accepts(kind, api_version) {
            A::read_group(kind, api_version, map, store)
        } else {
            B::read_group(kind, api_version, map, store)
        }
    }

    fn finish(store: &mut Store) {
        A::finish(store);
        B::finish(store);
    }
}

/// The objects of a request's map (`children`, `attachments` or
/// `related`), for each type of the set `S`.
pub struct ObjectsBy<S> {
    store: Store,
    _set: PhantomData<fn() -> S>,
}

impl<S: ObjectSet> Default for ObjectsBy<S> {
    fn default() -> Self {
        let mut store = Store::default();
        S::finish(&mut store);
        ObjectsBy {
            store,
            _set: PhantomData,
        }
    }
}

impl<S> fmt::Debug for ObjectsBy<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectsBy")
            .field("types", &self.store.lists.len())
            .finish()
    }
}

impl<S: ObjectSet> ObjectsBy<S> {
    /// The objects of type `T`, one of the set's.
    ///
    /// # Panics
    ///
    /// If `T` is not one of the set's types: a mistake in the hook, which
    /// a test of it finds (a panicking hook is answered with a 500).
    #[track_caller]
    pub fn of<T: Object + Send + Sync>(&self) -> &Objects<T> {
        let id = TypeId::of::<T>();
        match self
            .store
            .lists
            .iter()
            .find(|(t, _)| *t == id)
            .and_then(|(_, list)| list.downcast_ref::<Objects<T>>())
        {
            Some(objects) => objects,
            None => panic!(
                "{} is not one of the request's object types ({})",
                std::any::type_name::<T>(),
                S::members()
                    .iter()
                    .map(|m| m.type_name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// Puts `objects` in as type `T`'s (for requests built by tests).
    pub fn insert<T: Object + Send + Sync>(&mut self, objects: impl IntoIterator<Item = T>) {
        let list = self.store.list::<T>();
        list.extend(objects);
        self.store.finish::<T>();
    }
}

impl<'de, S: ObjectSet> serde::Deserialize<'de> for ObjectsBy<S> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(GroupsVisitor::<S>(PhantomData))
    }
}

/// Visits the outer map, one entry per type.
struct GroupsVisitor<S>(PhantomData<fn() -> S>);

impl<'de, S: ObjectSet> Visitor<'de> for GroupsVisitor<S> {
    type Value = ObjectsBy<S>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of object types (\"Kind.group/version\") to maps of objects")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut store = Store::default();
        while let Some(key) = map.next_key::<GroupKey>()? {
            if S::accepts(&key.kind, &key.api_version) {
                S::read_group(&key.kind, &key.api_version, &mut map, &mut store)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        S::finish(&mut store);
        Ok(ObjectsBy {
            store,
            _set: PhantomData,
        })
    }
}

/// `Kind.apiVersion`, split at the first dot (kinds have none).
struct GroupKey {
    kind: String,
    api_version: String,
}

impl<'de> serde::Deserialize<'de> for GroupKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = GroupKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object type, \"Kind.group/version\"")
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<GroupKey, E> {
                let (kind, api_version) = key.split_once('.').unwrap_or((key, ""));
                Ok(GroupKey {
                    kind: kind.to_owned(),
                    api_version: api_version.to_owned(),
                })
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}
