//! The types of object a hook reads from one of a request's maps, as its
//! request type names them: `()` for none, one type, or a tuple of types
//! (`(ReplicaSet, Service)`).

use crate::object::{Object, TypeRef};
use serde::de::{IgnoredAny, MapAccess};
use std::any::{Any, TypeId};

use super::objects::{GroupSeed, Objects, sort};

/// The types of object a hook reads from one of a request's maps: `()`,
/// one type, or a tuple of up to eight (`(ReplicaSet, Service)`). `M` only
/// tells a single type from a tuple (Rust cannot implement one trait for
/// both without it); it is always inferred.
pub trait ObjectSet<M>: 'static {
    /// Each member's type, in order.
    fn members() -> Vec<Member>;

    /// Whether a member takes the objects of the group `kind`/`api_version`.
    fn accepts(kind: &str, api_version: &str) -> bool;

    /// Decodes an accepted group (the map's next value) into the first
    /// member that accepts it.
    #[doc(hidden)]
    fn read_group<'de, A: MapAccess<'de>>(
        kind: &str,
        api_version: &str,
        map: &mut A,
        store: &mut Store,
    ) -> Result<(), A::Error>;

    /// Sorts each member's objects, and gives each member a list.
    #[doc(hidden)]
    fn finish(store: &mut Store);
}

/// [`ObjectSet`]'s `M` for a single type.
#[doc(hidden)]
#[derive(Debug)]
pub enum OneType {}

/// [`ObjectSet`]'s `M` for `()` and tuples.
#[doc(hidden)]
#[derive(Debug)]
pub enum Tuple {}

/// One type of an [`ObjectSet`].
#[derive(Debug, Clone)]
pub struct Member {
    /// The type's id: which of a request's lists holds its objects.
    pub type_id: TypeId,
    /// [`Object::accepts`] of the type.
    pub accepts: fn(&str, &str) -> bool,
    /// [`Object::type_refs`] of the type: the Kubernetes types it reads.
    pub type_refs: fn() -> Vec<TypeRef>,
}

impl Member {
    fn of<T: Object>() -> Self {
        Member {
            type_id: TypeId::of::<T>(),
            accepts: T::accepts,
            type_refs: T::type_refs,
        }
    }
}

/// The decoded objects of each member of a set. Keyed by type at run time;
/// which types a hook may ask for is checked when it compiles
/// ([`super::Contains`]).
#[doc(hidden)]
#[derive(Default)]
pub struct Store {
    pub(super) lists: Vec<(TypeId, Box<dyn Any + Send + Sync>)>,
}

impl Store {
    pub(super) fn list<T: Object + Send + Sync>(&mut self) -> &mut Vec<T> {
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

    pub(super) fn get<T: 'static>(&self) -> Option<&Objects<T>> {
        let id = TypeId::of::<T>();
        self.lists
            .iter()
            .find(|(t, _)| *t == id)
            .and_then(|(_, list)| list.downcast_ref::<Objects<T>>())
    }

    pub(super) fn finish<T: Object + Send + Sync>(&mut self) {
        sort(self.list::<T>());
    }

    fn read<'de, T: Object + Send + Sync, A: MapAccess<'de>>(
        &mut self,
        map: &mut A,
    ) -> Result<(), A::Error> {
        map.next_value_seed(GroupSeed {
            into: self.list::<T>(),
            max: T::MAX,
        })
    }
}

impl<T: Object + Send + Sync> ObjectSet<OneType> for T {
    fn members() -> Vec<Member> {
        vec![Member::of::<T>()]
    }

    fn accepts(kind: &str, api_version: &str) -> bool {
        T::accepts(kind, api_version)
    }

    fn read_group<'de, A: MapAccess<'de>>(
        _: &str,
        _: &str,
        map: &mut A,
        store: &mut Store,
    ) -> Result<(), A::Error> {
        store.read::<T, A>(map)
    }

    fn finish(store: &mut Store) {
        store.finish::<T>();
    }
}

/// `ObjectSet<Tuple>` for `()` and each tuple of the types given: a group
/// goes to the first member that accepts it.
macro_rules! tuple_sets {
    ($($t:ident),*) => {
        impl<$($t: Object + Send + Sync),*> ObjectSet<Tuple> for ($($t,)*) {
            fn members() -> Vec<Member> {
                vec![$(Member::of::<$t>()),*]
            }

            fn accepts(_kind: &str, _api_version: &str) -> bool {
                false $(|| $t::accepts(_kind, _api_version))*
            }

            fn read_group<'de, A: MapAccess<'de>>(
                _kind: &str,
                _api_version: &str,
                map: &mut A,
                _store: &mut Store,
            ) -> Result<(), A::Error> {
                $(if $t::accepts(_kind, _api_version) {
                    return _store.read::<$t, A>(map);
                })*
                map.next_value::<IgnoredAny>().map(|_| ())
            }

            fn finish(_store: &mut Store) {
                $(_store.finish::<$t>();)*
            }
        }
    };
}

tuple_sets!();
tuple_sets!(T1);
tuple_sets!(T1, T2);
tuple_sets!(T1, T2, T3);
tuple_sets!(T1, T2, T3, T4);
tuple_sets!(T1, T2, T3, T4, T5);
tuple_sets!(T1, T2, T3, T4, T5, T6);
tuple_sets!(T1, T2, T3, T4, T5, T6, T7);
tuple_sets!(T1, T2, T3, T4, T5, T6, T7, T8);
