//! The children a Hikawa desires: a Zundoko for a word, the Kiyoshi, and a
//! child that is not part of the song, held as observed.

use super::crds::{Hikawa, Kiyoshi, KiyoshiSpec, Zundoko, ZundokoSpec};
use super::names::{kiyoshi_name, zundoko_name};
use super::observed::{ObservedWord, SAID_AT};
use super::words::KIYOSHI;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use metahook_core::Parent;
use serde::Serialize;
use std::collections::BTreeMap;

/// A desired child: one of the two kinds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Child {
    Zundoko(Zundoko),
    Kiyoshi(Kiyoshi),
}

fn meta(parent: &Parent<Hikawa>, name: String, said_at: Option<String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: parent.metadata.namespace.clone(),
        annotations: said_at.map(|t| BTreeMap::from([(SAID_AT.to_owned(), t)])),
        ..ObjectMeta::default()
    }
}

pub(super) fn zundoko(
    parent: &Parent<Hikawa>,
    n: u32,
    say: &str,
    said_at: Option<String>,
) -> Child {
    Child::Zundoko(Zundoko {
        metadata: meta(parent, zundoko_name(&parent.metadata.name, n), said_at),
        spec: ZundokoSpec {
            say: say.to_owned(),
        },
    })
}

pub(super) fn kiyoshi(parent: &Parent<Hikawa>, said_at: Option<String>) -> Child {
    Child::Kiyoshi(Kiyoshi {
        metadata: meta(parent, kiyoshi_name(&parent.metadata.name), said_at),
        spec: KiyoshiSpec {
            say: KIYOSHI.to_owned(),
        },
    })
}

/// A child that is not part of this Hikawa's song, desired exactly as
/// observed (its word and said-at), so applying it changes nothing.
pub(super) fn held(parent: &Parent<Hikawa>, observed: &ObservedWord) -> Child {
    let metadata = meta(
        parent,
        observed.metadata.name.clone(),
        observed.metadata.annotations.get(SAID_AT).cloned(),
    );
    let say = observed.spec.say.clone().unwrap_or_default();
    if observed.is("Kiyoshi") {
        Child::Kiyoshi(Kiyoshi {
            metadata,
            spec: KiyoshiSpec { say },
        })
    } else {
        Child::Zundoko(Zundoko {
            metadata,
            spec: ZundokoSpec { say },
        })
    }
}
