//! A DecoratorController's answer.

use crate::protocol::decorator::DecoratorResponse;
use serde::Serialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::time::Duration;

/// A DecoratorController's answer, with the decorated object's status `S`
/// (`()` to leave it alone).
///
/// ```
/// use metahook_core::DecoratorAnswer;
/// use serde_json::json;
///
/// let answer: DecoratorAnswer = DecoratorAnswer::new()
///     .label("example.com/decorated", "true")
///     .remove_annotation("example.com/stale")
///     .attachment(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-extra"}}));
/// let sent: serde_json::Value = serde_json::from_slice(&answer.to_json()?)?;
/// assert_eq!(
///     sent,
///     json!({
///         "labels": {"example.com/decorated": "true"},
///         "annotations": {"example.com/stale": null},
///         "attachments": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-extra"}}],
///     })
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug)]
pub struct DecoratorAnswer<S = ()> {
    response: DecoratorResponse<S, Box<RawValue>>,
    unencodable: Option<serde_json::Error>,
}

impl<S: Serialize> Default for DecoratorAnswer<S> {
    fn default() -> Self {
        DecoratorAnswer {
            response: DecoratorResponse {
                labels: BTreeMap::new(),
                annotations: BTreeMap::new(),
                status: None,
                attachments: Vec::new(),
                resync_after_seconds: None,
                finalized: None,
            },
            unencodable: None,
        }
    }
}

impl<S: Serialize> DecoratorAnswer<S> {
    /// Changes nothing on the object, and desires no attachment.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets a label on the decorated object.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.response.labels.insert(key.into(), Some(value.into()));
        self
    }

    /// Removes a label from the decorated object.
    pub fn remove_label(mut self, key: impl Into<String>) -> Self {
        self.response.labels.insert(key.into(), None);
        self
    }

    /// Sets an annotation on the decorated object.
    pub fn annotation(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.response
            .annotations
            .insert(key.into(), Some(value.into()));
        self
    }

    /// Removes an annotation from the decorated object.
    pub fn remove_annotation(mut self, key: impl Into<String>) -> Self {
        self.response.annotations.insert(key.into(), None);
        self
    }

    /// Replaces the decorated object's status.
    pub fn status(mut self, status: S) -> Self {
        self.response.status = Some(status);
        self
    }

    /// One more desired attachment.
    pub fn attachment(mut self, attachment: impl Serialize) -> Self {
        match serde_json::value::to_raw_value(&attachment) {
            Ok(raw) => self.response.attachments.push(raw),
            Err(err) => {
                self.unencodable.get_or_insert(err);
            }
        }
        self
    }

    /// Be called again after `after` even if nothing changes.
    pub fn resync_after(mut self, after: Duration) -> Self {
        self.response.resync_after_seconds = Some(after.as_secs_f64());
        self
    }

    /// For `finalize`: whether the object may go now.
    pub fn finalized(mut self, done: bool) -> Self {
        self.response.finalized = Some(done);
        self
    }

    /// The answer as Metacontroller reads it.
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        if let Some(err) = &self.unencodable {
            return Err(serde::ser::Error::custom(err));
        }
        serde_json::to_vec(&self.response)
    }
}
