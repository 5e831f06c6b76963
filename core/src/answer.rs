//! What a hook of yours answers.
//!
//! - [`Answer`]: a CompositeController's `sync` or `finalize` — the
//!   parent's whole new status, the complete set of desired children (any
//!   observed child missing from it is deleted), when to be called again,
//!   and for `finalize` whether the parent may go;
//! - [`CustomizeAnswer`]: which related objects to send with each sync;
//! - [`DecoratorAnswer`]: edits to the decorated object's labels and
//!   annotations, its status, and its complete desired attachments.
//!
//! A hook may return its answer or a `Result` of one: an `Err` is answered
//! as a failure (HTTP 500 with its message), which Metacontroller and the
//! driver retry with backoff and report in a Warning Event; nothing is
//! written.

use crate::protocol::decorator::DecoratorResponse;
use crate::protocol::{CustomizeResponse, RelatedResourceRule};
use serde::Serialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::fmt::Display;
use std::time::Duration;

/// A `sync` or `finalize` answer with the parent's status `S`.
#[derive(Debug)]
pub struct Answer<S> {
    status: S,
    children: Vec<Box<RawValue>>,
    resync_after_seconds: Option<f64>,
    finalized: Option<bool>,
    unencodable: Option<serde_json::Error>,
}

impl<S: Serialize> Answer<S> {
    /// The parent's new status (replacing the whole of it), and no
    /// children yet.
    pub fn new(status: S) -> Self {
        Answer {
            status,
            children: Vec::new(),
            resync_after_seconds: None,
            finalized: None,
            unencodable: None,
        }
    }

    /// One more desired child: any Kubernetes object (a `Deployment`, a
    /// custom resource of yours, JSON).
    pub fn child(mut self, child: impl Serialize) -> Self {
        self.push(&child);
        self
    }

    /// More desired children, in order.
    pub fn children<I>(mut self, children: I) -> Self
    where
        I: IntoIterator,
        I::Item: Serialize,
    {
        for child in children {
            self.push(&child);
        }
        self
    }

    fn push(&mut self, child: &impl Serialize) {
        match serde_json::value::to_raw_value(child) {
            Ok(raw) => self.children.push(raw),
            Err(err) => {
                self.unencodable.get_or_insert(err);
            }
        }
    }

    /// Be called again after `after` even if nothing changes (a
    /// `resyncAfterSeconds`): for a controller that acts on time.
    pub fn resync_after(self, after: Duration) -> Self {
        self.resync_after_seconds(after.as_secs_f64())
    }

    /// [`Answer::resync_after`] in seconds, as the protocol writes it.
    pub fn resync_after_seconds(mut self, seconds: f64) -> Self {
        self.resync_after_seconds = Some(seconds);
        self
    }

    /// For `finalize`: whether the parent may go now (its finalizer is
    /// removed); until then the hook is called again.
    pub fn finalized(mut self, done: bool) -> Self {
        self.finalized = Some(done);
        self
    }

    /// The status it answers.
    pub fn status(&self) -> &S {
        &self.status
    }

    /// The desired children, each as the JSON it is sent as.
    pub fn desired(&self) -> &[Box<RawValue>] {
        &self.children
    }

    /// When to be called again, if set.
    pub fn resync_after_secs(&self) -> Option<f64> {
        self.resync_after_seconds
    }

    /// For `finalize`: whether the parent may go, if said.
    pub fn is_finalized(&self) -> Option<bool> {
        self.finalized
    }

    /// The answer as Metacontroller reads it: `status`, `children`, and
    /// `resyncAfterSeconds` and `finalized` when set.
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        if let Some(err) = &self.unencodable {
            return Err(serde::ser::Error::custom(err));
        }
        serde_json::to_vec(&WireAnswer {
            status: &self.status,
            children: &self.children,
            resync_after_seconds: self.resync_after_seconds,
            finalized: self.finalized,
        })
    }
}

/// [`crate::protocol::SyncResponse`], borrowed: the same keys in the same
/// order, so the same bytes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireAnswer<'a, S> {
    status: &'a S,
    children: &'a [Box<RawValue>],
    #[serde(skip_serializing_if = "Option::is_none")]
    resync_after_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    finalized: Option<bool>,
}

/// A `customize` answer: the rules selecting the related objects sent
/// with each sync of this parent.
pub type CustomizeAnswer = CustomizeResponse;

impl CustomizeResponse {
    /// No related objects.
    pub fn none() -> Self {
        CustomizeResponse {
            related_resources: Vec::new(),
        }
    }

    /// One more rule.
    pub fn rule(mut self, rule: RelatedResourceRule) -> Self {
        self.related_resources.push(rule);
        self
    }
}

/// A DecoratorController's answer, with the decorated object's status `S`
/// (`()` to leave it alone).
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

/// What a hook may return: its answer, or a `Result` of one whose error
/// says why it could not answer.
pub trait IntoAnswer<A> {
    fn into_answer(self) -> Result<A, String>;
}

impl<S> IntoAnswer<Answer<S>> for Answer<S> {
    fn into_answer(self) -> Result<Answer<S>, String> {
        Ok(self)
    }
}

impl<S> IntoAnswer<DecoratorAnswer<S>> for DecoratorAnswer<S> {
    fn into_answer(self) -> Result<DecoratorAnswer<S>, String> {
        Ok(self)
    }
}

impl IntoAnswer<CustomizeAnswer> for CustomizeAnswer {
    fn into_answer(self) -> Result<CustomizeAnswer, String> {
        Ok(self)
    }
}

impl<A, E: Display> IntoAnswer<A> for Result<A, E>
where
    A: IntoAnswer<A>,
{
    fn into_answer(self) -> Result<A, String> {
        self.map_err(|err| err.to_string())
    }
}
