//! Metacontroller's DecoratorController hook protocol
//! (docs/metacontroller.md §6): what a decorator's `sync` and `finalize`
//! hooks answer (what they receive is [`crate::Decorate`]).
//!
//! The request names the decorated object `object` and its children
//! `attachments` (an object map as a composite's `children`, grouped by
//! `Kind.group/version`); the answer edits the object's labels and
//! annotations key by key (`null` removes one) rather than replacing them,
//! replaces its status only when it gives one, and lists the complete
//! desired attachments.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
