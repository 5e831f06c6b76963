//! What the hook reads of a request: the Hikawa's previous conditions, each
//! observed Zundoko or Kiyoshi, and those children sorted into the song.

use super::crds::{API_VERSION, Hikawa, MAX_MAX_ZUNDOKOS};
use super::names::{kiyoshi_name, zundoko_number};
use super::words::{Word, word};
use metahook_core::objects::{KeptAnnotations, Meta};
use metahook_core::{Object, TypeRef};
use serde::Deserialize;
use std::collections::BTreeMap;

/// What the hook is given: a Hikawa, its Zundokos and its Kiyoshi.
pub type Request = metahook_core::Request<Hikawa, ObservedWord>;

/// When a word was said (RFC 3339, sub-second precision), on every child.
pub const SAID_AT: &str = "zundokokiyoshi.kaitoy.github.com/said-at";

/// An observed Zundoko or Kiyoshi, as far as the hook reads it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObservedWord {
    pub api_version: String,
    pub kind: String,
    pub metadata: Meta<SaidAtOnly>,
    pub spec: ObservedSay,
}

/// The one annotation the hook reads of a word: when it was said.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SaidAtOnly;

impl KeptAnnotations for SaidAtOnly {
    const KEYS: &'static [&'static str] = &[SAID_AT];
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ObservedSay {
    pub say: Option<String>,
}

/// Zundokos and Kiyoshis both: one type, as the hook reads them the same
/// way and sorts them into the song itself.
impl Object for ObservedWord {
    fn type_ref() -> TypeRef {
        TypeRef::new(API_VERSION, "Zundoko", "zundokos")
    }

    /// Both are the controller's child types.
    fn type_refs() -> Vec<TypeRef> {
        vec![
            Self::type_ref(),
            TypeRef::new(API_VERSION, "Kiyoshi", "kiyoshis"),
        ]
    }

    fn accepts(kind: &str, api_version: &str) -> bool {
        api_version == API_VERSION && (kind == "Zundoko" || kind == "Kiyoshi")
    }

    /// The longest song, its Kiyoshi, and a thousand children adopted by
    /// label.
    const MAX: usize = MAX_MAX_ZUNDOKOS as usize + 1 + 1000;

    fn name(&self) -> &str {
        &self.metadata.name
    }

    fn namespace(&self) -> Option<&str> {
        self.metadata.namespace.as_deref()
    }
}

impl ObservedWord {
    pub(super) fn is(&self, kind: &str) -> bool {
        self.kind == kind && self.api_version == API_VERSION
    }
}

/// The observed children, sorted out.
pub(super) struct Song<'a> {
    /// This Hikawa's Zundokos by number: the song, in order.
    pub(super) zundokos: BTreeMap<u32, &'a ObservedWord>,
    /// This Hikawa's Kiyoshi.
    pub(super) kiyoshi: Option<&'a ObservedWord>,
    /// Children that are not named like this Hikawa's (adopted by label):
    /// held as they are, not part of the song.
    pub(super) others: Vec<&'a ObservedWord>,
}

impl<'a> Song<'a> {
    pub(super) fn read(req: &'a Request) -> Self {
        let hikawa = req.parent.metadata.name.as_str();
        let kiyoshi_name = kiyoshi_name(hikawa);
        let mut song = Song {
            zundokos: BTreeMap::new(),
            kiyoshi: None,
            others: Vec::new(),
        };
        for child in req.children.iter() {
            let name = child.metadata.name.as_str();
            match zundoko_number(hikawa, name) {
                Some(n) if child.is("Zundoko") => {
                    song.zundokos.insert(n, child);
                }
                _ if child.is("Kiyoshi") && name == kiyoshi_name => song.kiyoshi = Some(child),
                _ => song.others.push(child),
            }
        }
        song.others
            .sort_by(|a, b| (&a.kind, &a.metadata.name).cmp(&(&b.kind, &b.metadata.name)));
        song
    }

    pub(super) fn words(&self, uid: &str) -> Vec<Word> {
        self.zundokos.keys().map(|&n| word(uid, n)).collect()
    }
}
