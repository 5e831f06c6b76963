//! A request's objects by type, and the bound that lets a hook read only
//! the types its request names: `req.children.of::<Service>()` compiles
//! for a `Request<_, (ReplicaSet, Service)>` and not for a
//! `Request<_, ReplicaSet>`.

use super::objects::Objects;
use super::set::{OneType, Store};
use crate::object::Object;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

/// The objects of a request's map (`children`, `attachments` or
/// `related`), for each type of the set `C`: `()`, one type, or a tuple.
///
/// One type: the objects themselves, `req.children.get("web")`. A tuple:
/// `req.children.of::<Service>().get("web")`, which compiles only for a
/// type of the tuple.
///
/// ```compile_fail,E0277
/// use k8s_openapi::api::apps::v1::ReplicaSet;
/// use k8s_openapi::api::core::v1::{Secret, Service};
/// use metahook_core::ObjectsBy;
///
/// fn secrets(children: &ObjectsBy<(ReplicaSet, Service)>) -> usize {
///     // Secret is not one of the request's child types.
///     children.of::<Secret>().len()
/// }
/// ```
pub struct ObjectsBy<C> {
    pub(super) store: Store,
    _set: PhantomData<fn() -> C>,
}

impl<C> Default for ObjectsBy<C> {
    fn default() -> Self {
        ObjectsBy {
            store: Store::default(),
            _set: PhantomData,
        }
    }
}

impl<C> fmt::Debug for ObjectsBy<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectsBy")
            .field("types", &self.store.lists.len())
            .finish()
    }
}

impl<C> ObjectsBy<C> {
    pub(super) fn from_store(store: Store) -> Self {
        ObjectsBy {
            store,
            _set: PhantomData,
        }
    }

    /// The objects of type `T`: its methods compile only for a `T` of the
    /// set (`I`, inferred, says where in it).
    pub fn of<T: Object + Send + Sync>(&self) -> Of<'_, C, T> {
        Of {
            by: self,
            _type: PhantomData,
        }
    }

    /// Adds `objects` as type `T`'s, one of the set's (for requests built
    /// by tests).
    pub fn insert<T: Object + Send + Sync, I>(&mut self, objects: impl IntoIterator<Item = T>)
    where
        C: Contains<T, I>,
    {
        self.store.list::<T>().extend(objects);
        self.store.finish::<T>();
    }

    fn objects<T: Object + Send + Sync>(&self) -> &Objects<T> {
        // A type of the set that the request had no object of has no list.
        self.store
            .get::<T>()
            .unwrap_or(const { &Objects { items: Vec::new() } })
    }
}

/// A set of one type reads as that type's objects.
impl<T: Object + Send + Sync> Deref for ObjectsBy<T> {
    type Target = Objects<T>;
    fn deref(&self) -> &Objects<T> {
        self.objects::<T>()
    }
}

/// The objects of type `T` in a set `C` ([`ObjectsBy::of`]).
pub struct Of<'a, C, T> {
    by: &'a ObjectsBy<C>,
    _type: PhantomData<fn() -> T>,
}

impl<'a, C, T: Object + Send + Sync> Of<'a, C, T> {
    /// All of them, sorted by namespace and name.
    pub fn objects<I>(&self) -> &'a Objects<T>
    where
        C: Contains<T, I>,
    {
        self.by.objects::<T>()
    }

    /// The object named `name` ([`Objects::get`]).
    pub fn get<I>(&self, name: &str) -> Option<&'a T>
    where
        C: Contains<T, I>,
    {
        self.objects().get(name)
    }

    /// The object named `name` in `namespace`.
    pub fn get_in<I>(&self, namespace: &str, name: &str) -> Option<&'a T>
    where
        C: Contains<T, I>,
    {
        self.objects().get_in(namespace, name)
    }

    /// The objects, by namespace and name.
    pub fn iter<I>(&self) -> std::slice::Iter<'a, T>
    where
        C: Contains<T, I>,
    {
        self.objects().iter()
    }

    /// How many there are.
    pub fn len<I>(&self) -> usize
    where
        C: Contains<T, I>,
    {
        self.objects().len()
    }

    /// Whether there are none.
    pub fn is_empty<I>(&self) -> bool
    where
        C: Contains<T, I>,
    {
        self.objects().is_empty()
    }
}

/// That `T` is one of the types of the set `Self`, at the place `I`
/// (inferred: one marker for a set of one type, another for each place
/// in a tuple).
#[diagnostic::on_unimplemented(
    message = "`{T}` is not one of the types `{Self}` of this request",
    label = "not among the request's types",
    note = "the types a hook reads are those of its request type: `Request<Parent, (A, B)>`"
)]
pub trait Contains<T, I> {}

/// The place of a type in a tuple set.
#[doc(hidden)]
#[derive(Debug)]
pub enum At<const N: usize> {}

impl<T: Object> Contains<T, OneType> for T {}

macro_rules! contains {
    ($at:literal: $pick:ident in $($t:ident),*) => {
        impl<$($t),*> Contains<$pick, At<$at>> for ($($t,)*) {}
    };
}

contains!(0: T1 in T1);
contains!(0: T1 in T1, T2);
contains!(1: T2 in T1, T2);
contains!(0: T1 in T1, T2, T3);
contains!(1: T2 in T1, T2, T3);
contains!(2: T3 in T1, T2, T3);
contains!(0: T1 in T1, T2, T3, T4);
contains!(1: T2 in T1, T2, T3, T4);
contains!(2: T3 in T1, T2, T3, T4);
contains!(3: T4 in T1, T2, T3, T4);
contains!(0: T1 in T1, T2, T3, T4, T5);
contains!(1: T2 in T1, T2, T3, T4, T5);
contains!(2: T3 in T1, T2, T3, T4, T5);
contains!(3: T4 in T1, T2, T3, T4, T5);
contains!(4: T5 in T1, T2, T3, T4, T5);
contains!(0: T1 in T1, T2, T3, T4, T5, T6);
contains!(1: T2 in T1, T2, T3, T4, T5, T6);
contains!(2: T3 in T1, T2, T3, T4, T5, T6);
contains!(3: T4 in T1, T2, T3, T4, T5, T6);
contains!(4: T5 in T1, T2, T3, T4, T5, T6);
contains!(5: T6 in T1, T2, T3, T4, T5, T6);
contains!(0: T1 in T1, T2, T3, T4, T5, T6, T7);
contains!(1: T2 in T1, T2, T3, T4, T5, T6, T7);
contains!(2: T3 in T1, T2, T3, T4, T5, T6, T7);
contains!(3: T4 in T1, T2, T3, T4, T5, T6, T7);
contains!(4: T5 in T1, T2, T3, T4, T5, T6, T7);
contains!(5: T6 in T1, T2, T3, T4, T5, T6, T7);
contains!(6: T7 in T1, T2, T3, T4, T5, T6, T7);
contains!(0: T1 in T1, T2, T3, T4, T5, T6, T7, T8);
contains!(1: T2 in T1, T2, T3, T4, T5, T6, T7, T8);
contains!(2: T3 in T1, T2, T3, T4, T5, T6, T7, T8);
contains!(3: T4 in T1, T2, T3, T4, T5, T6, T7, T8);
contains!(4: T5 in T1, T2, T3, T4, T5, T6, T7, T8);
contains!(5: T6 in T1, T2, T3, T4, T5, T6, T7, T8);
contains!(6: T7 in T1, T2, T3, T4, T5, T6, T7, T8);
contains!(7: T8 in T1, T2, T3, T4, T5, T6, T7, T8);
