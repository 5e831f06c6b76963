//! How the views decode what they bound: a string no longer than
//! Kubernetes allows, a map of strings of which only some entries are kept,
//! a list of which only one element is.

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::fmt;

/// Visits a map of strings, keeping the first `max` entries but those in
/// `skip` (skipped unread), and checking the rest are strings.
pub(super) struct Firsts {
    pub(super) max: usize,
    pub(super) skip: &'static [&'static str],
}

impl<'de> Visitor<'de> for Firsts {
    type Value = BTreeMap<String, String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            if self.skip.contains(&key.as_str()) {
                map.next_value::<IgnoredAny>()?;
            } else if out.len() < self.max {
                out.insert(key, map.next_value()?);
            } else {
                map.next_value::<IgnoredString>()?;
            }
        }
        Ok(out)
    }
}

/// A string at most `N` bytes long, refused otherwise.
pub(super) fn bounded<'de, D: Deserializer<'de>, const N: usize>(d: D) -> Result<String, D::Error> {
    let text = String::deserialize(d)?;
    if text.len() > N {
        return Err(serde::de::Error::custom(format_args!(
            "{} bytes long; Kubernetes allows at most {N}",
            text.len()
        )));
    }
    Ok(text)
}

/// [`bounded`] as a type, for inside an `Option`.
pub(super) struct Bounded<const N: usize>(pub(super) String);

impl<'de, const N: usize> Deserialize<'de> for Bounded<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        bounded::<D, N>(d).map(Bounded)
    }
}

/// A map of strings, checked and not kept.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct StringMap;

impl<'de> Deserialize<'de> for StringMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(Filtered {
            keep: &[],
            skip: &[],
        })
        .map(|_| StringMap)
    }
}

/// A string, checked and not kept.
struct IgnoredString;

impl<'de> Deserialize<'de> for IgnoredString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(IgnoredString)
    }
}

impl Visitor<'_> for IgnoredString {
    type Value = IgnoredString;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<IgnoredString, E> {
        Ok(IgnoredString)
    }
}

/// What [`Filtered`] does with an entry, by its key (read without copying).
enum Entry {
    Keep(&'static str),
    Skip,
    Check,
}

struct EntryOf<'a>(&'a Filtered);

impl<'de> serde::de::DeserializeSeed<'de> for EntryOf<'_> {
    type Value = Entry;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Entry, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for EntryOf<'_> {
    type Value = Entry;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Entry, E> {
        Ok(match self.0.keep.iter().find(|k| **k == key) {
            Some(kept) => Entry::Keep(kept),
            None if self.0.skip.contains(&key) => Entry::Skip,
            None => Entry::Check,
        })
    }
}

/// Visits a map of strings, keeping the entries whose keys are in `keep`,
/// skipping the values of those in `skip` unread, and checking the others
/// are strings without keeping them.
pub(super) struct Filtered {
    pub(super) keep: &'static [&'static str],
    pub(super) skip: &'static [&'static str],
}

impl<'de> Visitor<'de> for Filtered {
    type Value = BTreeMap<String, String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = BTreeMap::new();
        while let Some(entry) = map.next_key_seed(EntryOf(&self))? {
            match entry {
                Entry::Keep(key) => {
                    out.insert(key.to_owned(), map.next_value()?);
                }
                Entry::Skip => {
                    map.next_value::<IgnoredAny>()?;
                }
                Entry::Check => {
                    map.next_value::<IgnoredString>()?;
                }
            }
        }
        Ok(out)
    }
}

/// The first element of a list for which `keep` holds; every element is
/// decoded (and so checked), one at a time, and the others dropped: a view
/// that reads one entry of a list (`deserialize_with`) holds one, however
/// long the list a request sends.
pub fn first_where<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    keep: fn(&T) -> bool,
) -> Result<Option<T>, D::Error> {
    struct First<T>(fn(&T) -> bool);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for First<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some(element) = seq.next_element::<T>()? {
                if found.is_none() && (self.0)(&element) {
                    found = Some(element);
                }
            }
            Ok(found)
        }
    }
    d.deserialize_seq(First(keep))
}
