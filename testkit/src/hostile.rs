//! Hostile hook requests: valid JSON (mostly) built to make decoding build
//! far more than the body's size, for the memory-bound test
//! (`seeds/tests/memory_bound.rs`) and `bench/memory.sh` (through
//! `examples/gen_request.rs`).
//!
//! A request is an ordinary one of a hook ([`HOOKS`]) with one [`Place`] in
//! it (a field that hook decodes, or skips) filled with one [`Shape`]
//! repeated until the body has the size asked for.

use crate::requests::{self, HIKAWA_API};
use serde_json::{Value, json};
use std::fmt::Write;

/// A hook and the ordinary request the hostile ones start from.
#[derive(Debug, Clone, Copy)]
pub struct Hook {
    /// The path, and what is special about the request if anything.
    pub name: &'static str,
    /// `controller/hook`, the service's path without the leading slash.
    pub path: &'static str,
    base: fn() -> Value,
    /// The group key of the children map, for a sync request.
    children: Option<&'static str>,
    /// The smallest child (or related object) the hook keeps: its kind.
    kept: (&'static str, &'static str),
    related: bool,
}

const DEPLOYMENT: (&str, &str) = ("apps/v1", "Deployment");

pub const HOOKS: [Hook; 7] = [
    Hook {
        name: "hello/sync",
        path: "hello/sync",
        base: || requests::hello(1),
        children: Some("Deployment.apps/v1"),
        kept: DEPLOYMENT,
        related: false,
    },
    Hook {
        name: "hello/sync, invalid spec",
        path: "hello/sync",
        // Every observed Deployment is held: the answer grows with them.
        base: || {
            let mut request = requests::hello(1);
            request["parent"]["spec"]["replicas"] = json!(21);
            request
        },
        children: Some("Deployment.apps/v1"),
        kept: DEPLOYMENT,
        related: false,
    },
    Hook {
        name: "hello/finalize",
        path: "hello/finalize",
        base: || {
            let mut request = requests::hello(1);
            request["finalizing"] = json!(true);
            request
        },
        children: Some("Deployment.apps/v1"),
        kept: DEPLOYMENT,
        related: false,
    },
    Hook {
        name: "hikawa/sync",
        path: "hikawa/sync",
        base: || requests::hikawa(1),
        children: Some("Zundoko.zundokokiyoshi.kaitoy.github.com/v1beta1"),
        kept: (HIKAWA_API, "Zundoko"),
        related: false,
    },
    Hook {
        name: "foo/customize",
        path: "foo/customize",
        base: requests::foo_customize,
        children: None,
        kept: DEPLOYMENT,
        related: false,
    },
    Hook {
        name: "foo/sync",
        path: "foo/sync",
        base: requests::foo_sync,
        children: Some("Deployment.apps/v1"),
        kept: DEPLOYMENT,
        related: true,
    },
    Hook {
        name: "foo/sync, invalid spec",
        path: "foo/sync",
        base: || {
            let mut request = requests::foo_sync();
            request["parent"]["spec"]["deploymentName"] = json!("Not_A_Name");
            request
        },
        children: Some("Deployment.apps/v1"),
        kept: DEPLOYMENT,
        related: true,
    },
];

/// What fills a place, repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `{}`: every field of a typed element defaulted.
    EmptyObjects,
    /// `[]`.
    EmptyArrays,
    /// 100 levels of `[[[…]]]` per element (serde_json refuses past 128).
    DeepNesting,
    /// One element whose key takes the whole body.
    LongKeys,
    /// `"a"`, and in maps `"key":"a"` with keys all different.
    TinyStrings,
    /// `0`.
    Numbers,
    /// The smallest element the hook reads and keeps: a child or related
    /// object of the kind it wants, a condition, an owner reference.
    MinimalObjects,
}

pub const SHAPES: [Shape; 7] = [
    Shape::EmptyObjects,
    Shape::EmptyArrays,
    Shape::DeepNesting,
    Shape::LongKeys,
    Shape::TinyStrings,
    Shape::Numbers,
    Shape::MinimalObjects,
];

impl Shape {
    pub fn name(self) -> &'static str {
        match self {
            Shape::EmptyObjects => "empty-objects",
            Shape::EmptyArrays => "empty-arrays",
            Shape::DeepNesting => "deep-nesting",
            Shape::LongKeys => "long-keys",
            Shape::TinyStrings => "tiny-strings",
            Shape::Numbers => "numbers",
            Shape::MinimalObjects => "minimal-objects",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        SHAPES.into_iter().find(|s| s.name() == name)
    }
}

/// Where in the request the shape goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    ParentOwnerReferences,
    ParentLabels,
    ParentAnnotations,
    /// A field of the spec the spec type does not have.
    ParentSpec,
    ParentConditions,
    /// The children map's objects.
    Children,
    ChildOwnerReferences,
    ChildLabels,
    ChildAnnotations,
    ChildContainers,
    /// The related map's objects (Foo's sync).
    Related,
    /// A field of the CompositeController, which no hook reads.
    Controller,
}

pub const PLACES: [Place; 12] = [
    Place::ParentOwnerReferences,
    Place::ParentLabels,
    Place::ParentAnnotations,
    Place::ParentSpec,
    Place::ParentConditions,
    Place::Children,
    Place::ChildOwnerReferences,
    Place::ChildLabels,
    Place::ChildAnnotations,
    Place::ChildContainers,
    Place::Related,
    Place::Controller,
];

impl Place {
    pub fn name(self) -> &'static str {
        match self {
            Place::ParentOwnerReferences => "parent.metadata.ownerReferences",
            Place::ParentLabels => "parent.metadata.labels",
            Place::ParentAnnotations => "parent.metadata.annotations",
            Place::ParentSpec => "parent.spec.*",
            Place::ParentConditions => "parent.status.conditions",
            Place::Children => "children",
            Place::ChildOwnerReferences => "child.metadata.ownerReferences",
            Place::ChildLabels => "child.metadata.labels",
            Place::ChildAnnotations => "child.metadata.annotations",
            Place::ChildContainers => "child.spec.template.spec.containers",
            Place::Related => "related",
            Place::Controller => "controller.*",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        PLACES.into_iter().find(|p| p.name() == name)
    }

    /// Maps (`{"key": …}`) rather than lists.
    fn is_map(self) -> bool {
        matches!(
            self,
            Place::ParentLabels
                | Place::ParentAnnotations
                | Place::Children
                | Place::ChildLabels
                | Place::ChildAnnotations
                | Place::Related
        )
    }
}

impl Hook {
    pub fn find(name: &str) -> Option<Hook> {
        HOOKS.into_iter().find(|h| h.name == name)
    }

    /// The places this hook's request has.
    pub fn places(&self) -> Vec<Place> {
        PLACES
            .into_iter()
            .filter(|p| match p {
                Place::Children | Place::ChildOwnerReferences => self.children.is_some(),
                Place::ChildLabels | Place::ChildAnnotations => self.children.is_some(),
                Place::ChildContainers => self.children.is_some() && self.kept == DEPLOYMENT,
                Place::Related => self.related,
                _ => true,
            })
            .collect()
    }

    /// A request of about `bytes` bytes (at least the ordinary request's
    /// size) with `place` filled with `shape`.
    pub fn body(&self, shape: Shape, place: Place, bytes: usize) -> Vec<u8> {
        const MARK: &str = "@@hostile@@";
        let mut request = (self.base)();
        let group = self.children.unwrap_or_default();
        let child_key = request["children"][group]
            .as_object()
            .and_then(|m| m.keys().next().cloned())
            .unwrap_or_default();
        let path: Vec<&str> = match place {
            Place::ParentOwnerReferences => vec!["parent", "metadata", "ownerReferences"],
            Place::ParentLabels => vec!["parent", "metadata", "labels"],
            Place::ParentAnnotations => vec!["parent", "metadata", "annotations"],
            Place::ParentSpec => vec!["parent", "spec", "hostile"],
            Place::ParentConditions => vec!["parent", "status", "conditions"],
            Place::Children => vec!["children", group],
            Place::ChildOwnerReferences => {
                vec!["children", group, &child_key, "metadata", "ownerReferences"]
            }
            Place::ChildLabels => vec!["children", group, &child_key, "metadata", "labels"],
            Place::ChildAnnotations => {
                vec!["children", group, &child_key, "metadata", "annotations"]
            }
            Place::ChildContainers => vec![
                "children",
                group,
                &child_key,
                "spec",
                "template",
                "spec",
                "containers",
            ],
            Place::Related => vec!["related", "Deployment.apps/v1"],
            Place::Controller => vec!["controller", "spec", "hostile"],
        };
        let mut slot = &mut request;
        for key in path {
            slot = &mut slot[key];
        }
        *slot = json!(MARK);
        let text = requests::bytes(&request);
        let Some(at) = find(&text, format!("\"{MARK}\"").as_bytes()) else {
            return text;
        };
        let room = bytes.saturating_sub(text.len());
        let fill = self.fill(shape, place, room);
        let mut body = Vec::with_capacity(text.len() + fill.len());
        body.extend_from_slice(&text[..at]);
        body.extend_from_slice(fill.as_bytes());
        body.extend_from_slice(&text[at + MARK.len() + 2..]);
        body
    }

    /// `room` bytes (about) of `shape` as a list or map, as `place` holds.
    fn fill(&self, shape: Shape, place: Place, room: usize) -> String {
        let map = place.is_map();
        let element = match shape {
            Shape::EmptyObjects => "{}".to_owned(),
            Shape::EmptyArrays => "[]".to_owned(),
            Shape::DeepNesting => format!("{}{}", "[".repeat(100), "]".repeat(100)),
            Shape::LongKeys => {
                let key = "k".repeat(room.saturating_sub(16).max(1));
                return if map {
                    format!("{{\"{key}\":\"\"}}")
                } else {
                    format!("[{{\"{key}\":\"\"}}]")
                };
            }
            Shape::TinyStrings => "\"a\"".to_owned(),
            Shape::Numbers => "0".to_owned(),
            Shape::MinimalObjects => match place {
                Place::Children | Place::Related => {
                    let (api_version, kind) = self.kept;
                    format!("{{\"apiVersion\":\"{api_version}\",\"kind\":\"{kind}\"}}")
                }
                Place::ParentConditions => {
                    "{\"lastTransitionTime\":\"2026-11-22T02:00:00Z\"}".to_owned()
                }
                Place::ParentOwnerReferences | Place::ChildOwnerReferences => {
                    "{\"controller\":true}".to_owned()
                }
                Place::ParentLabels
                | Place::ParentAnnotations
                | Place::ChildLabels
                | Place::ChildAnnotations => "\"\"".to_owned(),
                _ => "{}".to_owned(),
            },
        };
        let mut out = String::with_capacity(room + 64);
        out.push(if map { '{' } else { '[' });
        let mut n: u64 = 0;
        while out.len() + element.len() + 16 < room || n == 0 {
            if n > 0 {
                out.push(',');
            }
            if map {
                // Short keys, all different (labels and annotations are
                // maps: a repeated key would only replace the last one).
                let _ = write!(out, "\"{n:x}\":");
            }
            out.push_str(&element);
            n += 1;
        }
        out.push(if map { '}' } else { ']' });
        out
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_body_is_json_of_about_the_size_asked() {
        for hook in HOOKS {
            for place in hook.places() {
                for shape in SHAPES {
                    let body = hook.body(shape, place, 200_000);
                    let value: Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
                        panic!("{} {} {}: {e}", hook.name, place.name(), shape.name())
                    });
                    assert!(value.get("parent").is_some());
                    assert!(
                        (190_000..=201_000).contains(&body.len()),
                        "{} {} {}: {} bytes",
                        hook.name,
                        place.name(),
                        shape.name(),
                        body.len()
                    );
                }
            }
        }
    }
}
