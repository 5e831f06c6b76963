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

use crate::object::Object;
use serde::Serialize;
use std::fmt::Display;
use std::time::Duration;

mod customize;
mod decorator;

pub use customize::CustomizeAnswer;
pub use decorator::DecoratorAnswer;

/// A `sync` or `finalize` answer with the parent's status `S`.
#[derive(Debug)]
pub struct Answer<S> {
    status: S,
    /// The children, already encoded, comma-separated: one buffer, not an
    /// allocation per child (the hot path of every hook).
    children: Vec<u8>,
    /// Where each child ends in `children`.
    ends: Vec<usize>,
    resync_after_seconds: Option<f64>,
    finalized: Option<bool>,
    unencodable: Option<serde_json::Error>,
}

impl<S: Serialize> Answer<S> {
    /// The parent's new status (replacing the whole of it), and no
    /// children yet.
    ///
    /// ```
    /// use metahook_core::Answer;
    /// use serde_json::json;
    ///
    /// // No child desired: any the parent has is deleted.
    /// let answer = Answer::new(json!({"phase": "Idle"}));
    /// assert_eq!(answer.to_json()?, br#"{"status":{"phase":"Idle"},"children":[]}"#);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new(status: S) -> Self {
        Answer {
            status,
            children: Vec::new(),
            ends: Vec::new(),
            resync_after_seconds: None,
            finalized: None,
            unencodable: None,
        }
    }

    /// One more desired child: any Kubernetes object (a `Deployment`, a
    /// custom resource of yours, JSON).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    /// use metahook_core::Answer;
    /// use serde_json::json;
    ///
    /// let settings = ConfigMap {
    ///     metadata: ObjectMeta { name: Some("web-settings".into()), ..Default::default() },
    ///     data: Some([("greeting".to_owned(), "hi".to_owned())].into()),
    ///     ..Default::default()
    /// };
    /// let answer = Answer::new(json!({})).child(settings);
    /// let sent: serde_json::Value = serde_json::from_str(answer.desired()[0])?;
    /// assert_eq!(sent["kind"], "ConfigMap");
    /// assert_eq!(sent["data"]["greeting"], "hi");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
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
        let start = self.children.len();
        if !self.ends.is_empty() {
            self.children.push(b',');
        }
        match serde_json::to_writer(&mut self.children, child) {
            Ok(()) => self.ends.push(self.children.len()),
            Err(err) => {
                self.children.truncate(start);
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
    /// removed); until then the hook is called again. Children desired in
    /// the answer that says `true` are not applied: say it once the
    /// children are as they should be at the end (usually none).
    ///
    /// ```
    /// use metahook_core::Answer;
    /// use serde_json::json;
    ///
    /// // Children still there: desire none, and be called again.
    /// let waiting = Answer::new(json!({"phase": "Deleting"})).finalized(false);
    /// assert_eq!(waiting.is_finalized(), Some(false));
    /// let sent: serde_json::Value = serde_json::from_slice(&waiting.to_json()?)?;
    /// assert_eq!(sent["finalized"], false);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn finalized(mut self, done: bool) -> Self {
        self.finalized = Some(done);
        self
    }

    /// The status it answers.
    pub fn status(&self) -> &S {
        &self.status
    }

    /// The status to answer, to change (a test's, or a hook that wraps
    /// another's).
    pub fn status_mut(&mut self) -> &mut S {
        &mut self.status
    }

    /// The same answer with its status made `S2` by `f`: another hook's
    /// answer in this one's status type, or a test's change to it.
    ///
    /// ```
    /// use metahook_core::Answer;
    /// use serde_json::json;
    ///
    /// let answer = Answer::new(2).child(json!({"kind": "ConfigMap"})).finalized(true);
    /// let doubled = answer.map_status(|copies| json!({"copies": copies * 2}));
    /// assert_eq!(doubled.status()["copies"], 4);
    /// assert_eq!((doubled.desired().len(), doubled.is_finalized()), (1, Some(true)));
    /// ```
    pub fn map_status<S2: Serialize>(self, f: impl FnOnce(S) -> S2) -> Answer<S2> {
        Answer {
            status: f(self.status),
            children: self.children,
            ends: self.ends,
            resync_after_seconds: self.resync_after_seconds,
            finalized: self.finalized,
            unencodable: self.unencodable,
        }
    }

    /// The desired children of type `T` (by its kind and apiVersion),
    /// decoded as `T`: what a test reads of the hook's answer. Children of
    /// other types are left out.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    /// use metahook_core::Answer;
    ///
    /// let named = |name: &str| ObjectMeta { name: Some(name.into()), ..Default::default() };
    /// let answer = Answer::new(())
    ///     .child(ConfigMap { metadata: named("settings"), ..Default::default() })
    ///     .child(Secret { metadata: named("password"), ..Default::default() });
    /// let [settings] = &answer.desired_of::<ConfigMap>()?[..] else { panic!() };
    /// assert_eq!(settings.metadata.name.as_deref(), Some("settings"));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn desired_of<T: Object>(&self) -> Result<Vec<T>, serde_json::Error> {
        /// What a child's type is read from.
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct TypeOf {
            #[serde(default)]
            api_version: String,
            #[serde(default)]
            kind: String,
        }
        let mut out = Vec::new();
        for child in self.desired() {
            let of: TypeOf = serde_json::from_str(child)?;
            if T::accepts(&of.kind, &of.api_version) {
                out.push(serde_json::from_str(child)?);
            }
        }
        Ok(out)
    }

    /// The desired children, each as the JSON it is sent as.
    pub fn desired(&self) -> Vec<&str> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&end| {
                let child = self.children.get(start..end).unwrap_or_default();
                start = end + 1;
                std::str::from_utf8(child.strip_prefix(b",").unwrap_or(child)).unwrap_or_default()
            })
            .collect()
    }

    /// The `resyncAfterSeconds` it answers: when to be called again, if set
    /// ([`Answer::resync_after`], [`Answer::resync_after_seconds`]).
    pub fn resync_seconds(&self) -> Option<f64> {
        self.resync_after_seconds
    }

    /// For `finalize`: whether the parent may go, if said.
    pub fn is_finalized(&self) -> Option<bool> {
        self.finalized
    }

    /// The answer as Metacontroller reads it: `status`, `children`, and
    /// `resyncAfterSeconds` and `finalized` when set, in that order
    /// (docs/metacontroller.md §1.4, §1.5).
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        if let Some(err) = &self.unencodable {
            return Err(serde::ser::Error::custom(err));
        }
        let mut out = Vec::with_capacity(self.children.len() + 1024);
        out.extend_from_slice(br#"{"status":"#);
        serde_json::to_writer(&mut out, &self.status)?;
        out.extend_from_slice(br#","children":["#);
        out.extend_from_slice(&self.children);
        out.push(b']');
        if let Some(seconds) = self.resync_after_seconds {
            out.extend_from_slice(br#","resyncAfterSeconds":"#);
            serde_json::to_writer(&mut out, &seconds)?;
        }
        if let Some(finalized) = self.finalized {
            out.extend_from_slice(br#","finalized":"#);
            serde_json::to_writer(&mut out, &finalized)?;
        }
        out.push(b'}');
        Ok(out)
    }
}

/// What a hook may return: its answer, or a `Result` of one whose error
/// says why it could not answer.
pub trait IntoAnswer<A> {
    /// The answer, or the message of the failure to answer instead (HTTP
    /// 500, retried with backoff).
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

#[cfg(test)]
mod tests;
