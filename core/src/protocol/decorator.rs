//! Metacontroller's DecoratorController hook protocol
//! (docs/metacontroller.md §6): what a decorator's `sync` and `finalize`
//! hooks receive and answer, so that a decorator is a pure function too.
//!
//! The request names the decorated object `object` and its children
//! `attachments` (an object map as a composite's `children`, grouped by
//! `Kind.group/version`); the answer edits the object's labels and
//! annotations key by key (`null` removes one) rather than replacing them,
//! replaces its status only when it gives one, and lists the complete
//! desired attachments.

use super::{IgnoredObject, ObjectMap};
use crate::objects::Observed;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A decorator's `sync` or `finalize` request; `finalizing` tells them
/// apart.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    bound(
        deserialize = "O: DeserializeOwned, A: DeserializeOwned + Observed, R: DeserializeOwned + Observed"
    ),
    expecting = "a decorator request: an object with object and attachments"
)]
pub struct DecoratorRequest<O, A, R = IgnoredObject> {
    /// The DecoratorController itself.
    #[serde(default)]
    pub controller: IgnoredObject,
    /// The decorated object.
    pub object: O,
    /// The attachments this decorator owns (Metacontroller always sends the
    /// key, `{}` when there are none).
    #[serde(default = "ObjectMap::empty")]
    pub attachments: ObjectMap<A>,
    /// The objects the customize hook's rules selected.
    #[serde(default = "ObjectMap::empty")]
    pub related: ObjectMap<R>,
    /// `true` for the finalize hook (the object is being deleted), `false`
    /// for sync.
    #[serde(default)]
    pub finalizing: bool,
}

/// A decorator's answer. Only these six keys: a v2 hook's response is
/// decoded strictly.
///
/// `labels` and `annotations` are edits: a key with a string sets it, a key
/// with `None` (`null`) removes it, keys not named stay as they are.
/// `status: None` leaves the object's status alone. `attachments` is the
/// complete desired set: an owned attachment missing from it is deleted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecoratorResponse<S, A> {
    /// `labels`: label edits on the object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, Option<String>>,
    /// `annotations`: annotation edits on the object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, Option<String>>,
    /// `status`: the object's whole new status, or `None` to leave it.
    #[serde(default = "Option::default", skip_serializing_if = "Option::is_none")]
    pub status: Option<S>,
    /// `attachments`: every attachment the object should have.
    #[serde(default = "Vec::new")]
    pub attachments: Vec<A>,
    /// `resyncAfterSeconds`: call the hook again after this many seconds,
    /// even if nothing changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resync_after_seconds: Option<f64>,
    /// `finalized`: for finalize, `true` lets the object go (the
    /// decorator's finalizer is removed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finalized: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// An attachment as a test reads it: its name.
    #[derive(Debug, Deserialize)]
    struct Named {
        metadata: Meta,
    }
    #[derive(Debug, Deserialize)]
    struct Meta {
        name: String,
    }
    impl Observed for Named {
        const MAX: usize = 10;
    }

    #[test]
    fn a_request_reads_object_and_attachments_of_every_type() {
        let body = json!({
            "controller": {"kind": "DecoratorController"},
            "object": {"metadata": {"name": "web-0"}},
            "attachments": {
                "Service.v1": {"web-0": {"metadata": {"name": "web-0"}}},
                "ConfigMap.v1": {"shop/a": {"metadata": {"name": "a"}}},
            },
            "related": {},
            "finalizing": true,
        });
        let req: DecoratorRequest<Value, Named> = serde_json::from_value(body).unwrap();
        assert_eq!(req.object["metadata"]["name"], "web-0");
        let names: Vec<_> = req
            .attachments
            .iter()
            .map(|a| a.metadata.name.as_str())
            .collect();
        assert_eq!(names.len(), 2);
        assert!(names.contains(&"web-0") && names.contains(&"a"));
        assert!(req.finalizing);
    }

    #[test]
    fn a_request_without_object_is_refused() {
        let err =
            serde_json::from_value::<DecoratorRequest<Value, Named>>(json!({"attachments": {}}))
                .unwrap_err();
        assert!(err.to_string().contains("missing field `object`"), "{err}");
    }

    #[test]
    fn a_response_removes_a_label_with_null_and_leaves_status_out_when_unset() {
        let mut labels = BTreeMap::new();
        labels.insert("keep".to_owned(), Some("yes".to_owned()));
        labels.insert("drop".to_owned(), None);
        let response: DecoratorResponse<Value, Value> = DecoratorResponse {
            labels,
            attachments: vec![json!({"kind": "Service"})],
            ..DecoratorResponse::default()
        };
        assert_eq!(
            serde_json::to_value(&response).unwrap(),
            json!({
                "labels": {"drop": null, "keep": "yes"},
                "attachments": [{"kind": "Service"}],
            })
        );
    }
}
