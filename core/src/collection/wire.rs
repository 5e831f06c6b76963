//! A request's map of objects as it arrives, `{"Kind.apiVersion": {"key":
//! object}}`, decoded into the types of a set.

use super::by_type::ObjectsBy;
use super::set::{ObjectSet, Store};
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::marker::PhantomData;

/// The objects of the set `C` (its [`ObjectSet`] marker `M`), decoded.
pub(crate) struct WireObjects<C, M>(pub(crate) ObjectsBy<C>, PhantomData<fn() -> M>);

impl<C, M> Default for WireObjects<C, M> {
    fn default() -> Self {
        WireObjects(ObjectsBy::default(), PhantomData)
    }
}

impl<'de, C: ObjectSet<M>, M> Deserialize<'de> for WireObjects<C, M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(GroupsVisitor::<C, M>(PhantomData))
    }
}

/// Visits the outer map, one entry per type.
struct GroupsVisitor<C, M>(PhantomData<fn() -> (C, M)>);

impl<'de, C: ObjectSet<M>, M> Visitor<'de> for GroupsVisitor<C, M> {
    type Value = WireObjects<C, M>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of object types (\"Kind.group/version\") to maps of objects")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut store = Store::default();
        while let Some(key) = map.next_key::<GroupKey>()? {
            if C::accepts(&key.kind, &key.api_version) {
                C::read_group(&key.kind, &key.api_version, &mut map, &mut store)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        C::finish(&mut store);
        Ok(WireObjects(ObjectsBy::from_store(store), PhantomData))
    }
}

/// `Kind.apiVersion`, split at the first dot (kinds have none).
struct GroupKey {
    kind: String,
    api_version: String,
}

impl<'de> Deserialize<'de> for GroupKey {
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
