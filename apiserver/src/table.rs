//! Server-side printing: reconciles as a `meta.k8s.io` `Table`, the columns
//! `kubectl get reconciles` shows (`-o wide` adds those of priority 1).
//! Each row carries the object's metadata (namespace, labels), or the whole
//! object, or nothing, as `includeObject` asks.

use crate::object::Reconcile;
use jiff::Timestamp;
use serde_json::{Value, json};
use std::time::Duration;

/// `?includeObject=`: what each row carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    /// The default: `PartialObjectMetadata`.
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(value: Option<&str>) -> Result<Self, String> {
        match value {
            None | Some("" | "Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => Err(format!(
                "includeObject must be None, Metadata or Object, not {other:?}"
            )),
        }
    }
}

const COLUMNS: &[(&str, &str, &str, u8, &str)] = &[
    // name, type, format, priority, description
    ("Name", "string", "name", 0, "<controller>.<parent name>."),
    (
        "Controller",
        "string",
        "",
        0,
        "The CompositeController that reconciled the parent.",
    ),
    ("Parent", "string", "", 0, "The parent's kind and name."),
    ("Outcome", "string", "", 0, "How the last reconcile ended."),
    (
        "Revision",
        "string",
        "",
        0,
        "The revision of the hooks that last answered for the parent.",
    ),
    (
        "Age",
        "string",
        "",
        0,
        "How long ago the last reconcile ended.",
    ),
    (
        "Duration",
        "string",
        "",
        0,
        "How long the last reconcile took.",
    ),
    (
        "Message",
        "string",
        "",
        0,
        "Why: the error, a condition the hook reported as not True, or what was written.",
    ),
    (
        "Generation",
        "integer",
        "",
        1,
        "The parent's metadata.generation when reconciled.",
    ),
    (
        "Children",
        "string",
        "",
        1,
        "Children the hook asked for / children observed.",
    ),
    ("Hook", "string", "", 1, "How long the hook took to answer."),
];

/// The Table of `objects` in `meta.k8s.io/<version>`, as of `now`.
pub fn table(
    objects: &[Reconcile],
    version: &str,
    include: IncludeObject,
    now: Timestamp,
) -> Value {
    let columns: Vec<Value> = COLUMNS
        .iter()
        .map(|(name, type_, format, priority, description)| {
            json!({"name": name, "type": type_, "format": format,
                   "description": description, "priority": priority})
        })
        .collect();
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut row = json!({"cells": cells(o, now)});
            match include {
                IncludeObject::None => {}
                IncludeObject::Metadata => row["object"] = partial_metadata(o, version),
                IncludeObject::Object => {
                    row["object"] = serde_json::to_value(o).unwrap_or(Value::Null)
                }
            }
            row
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": {},
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// `PartialObjectMetadata` of `object` in `meta.k8s.io/<version>`.
pub fn partial_metadata(object: &Reconcile, version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": object.metadata,
    })
}

fn cells(o: &Reconcile, now: Timestamp) -> Vec<Value> {
    let r = &o.status;
    let age = r
        .last_run
        .parse::<Timestamp>()
        .ok()
        .and_then(|then| Duration::try_from(now.duration_since(then)).ok())
        .map(human)
        .unwrap_or_else(|| "<unknown>".to_owned());
    let children = format!(
        "{}/{}",
        r.children
            .desired
            .map(|d| d.to_string())
            .unwrap_or_else(|| "-".to_owned()),
        r.children.observed
    );
    vec![
        json!(o.name()),
        json!(r.controller),
        json!(format!("{}/{}", r.parent.kind, r.parent.name)),
        json!(r.outcome),
        json!(r.revision.as_deref().unwrap_or("-")),
        json!(age),
        json!(took(r.duration_seconds)),
        json!(o.message()),
        json!(r.parent.generation),
        json!(children),
        json!(r.hook_seconds.map(took).unwrap_or_else(|| "-".to_owned())),
    ]
}

/// An age as kubectl prints one: `45s`, `3m12s`, `17m`, `5h3m`, `2d4h`, `40d`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    let (m, h, days) = (s / 60, s / 3600, s / 86_400);
    match s {
        0..120 => format!("{s}s"),
        120..600 => format!("{m}m{}s", s % 60),
        600..10_800 => format!("{m}m"),
        10_800..28_800 => format!("{h}h{}m", m % 60),
        28_800..172_800 => format!("{h}h"),
        172_800..691_200 => format!("{days}d{}h", h % 24),
        _ => format!("{days}d"),
    }
}

/// A short duration: `850µs`, `12ms`, `1.2s`.
fn took(seconds: f64) -> String {
    if seconds < 0.001 {
        format!("{:.0}µs", seconds * 1e6)
    } else if seconds < 1.0 {
        format!("{:.0}ms", seconds * 1e3)
    } else {
        format!("{seconds:.1}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::tests::record;

    #[test]
    fn rows_carry_our_columns_and_the_objects_metadata() {
        let object = Reconcile::of(record("hello", "shop", "web")).unwrap();
        let now: Timestamp = "2026-11-23T10:03:12Z".parse().unwrap();
        let t = table(
            std::slice::from_ref(&object),
            "v1",
            IncludeObject::Metadata,
            now,
        );
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["priority"] == 0)
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "Name",
                "Controller",
                "Parent",
                "Outcome",
                "Revision",
                "Age",
                "Duration",
                "Message"
            ]
        );
        let row = &t["rows"][0];
        assert_eq!(
            row["cells"],
            json!([
                "hello.web",
                "hello",
                "Hello/web",
                "Succeeded",
                "0.2.0",
                "3m12s",
                "12ms",
                "nothing to change",
                2,
                "1/1",
                "100µs"
            ])
        );
        assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(row["object"]["metadata"]["namespace"], "shop");
        assert_eq!(row["object"]["metadata"]["labels"]["team"], "web");
        let whole = table(
            std::slice::from_ref(&object),
            "v1beta1",
            IncludeObject::Object,
            now,
        );
        assert_eq!(whole["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(whole["rows"][0]["object"]["kind"], "Reconcile");
        let bare = table(&[object], "v1", IncludeObject::None, now);
        assert!(bare["rows"][0].get("object").is_none());
    }

    #[test]
    fn ages_read_like_kubectls() {
        let cases = [
            (5, "5s"),
            (119, "119s"),
            (192, "3m12s"),
            (1020, "17m"),
            (18_180, "5h3m"),
            (90_000, "25h"),
            (187_200, "2d4h"),
            (3_456_000, "40d"),
        ];
        for (secs, want) in cases {
            assert_eq!(human(Duration::from_secs(secs)), want, "{secs}");
        }
        assert!(IncludeObject::parse(Some("Bogus")).is_err());
    }
}
