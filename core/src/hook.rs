//! A hook as a controller holds it: bytes and the time in, bytes out
//! ([`Handler`]), its kinds, and calling it as the service and the driver
//! do, with a panic caught. Apart from the table ([`crate::registry`]), so
//! that [`Controller`](crate::Controller) can hold hooks without knowing
//! how they are looked up.

use crate::decode::{DecodeError, decode};
use jiff::Timestamp;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// A controller's hooks: those Metacontroller (or the driver) calls, and
/// those the API server calls ([`HookKind::called_by_api_server`]): at
/// admission, and to convert between its parent's versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookKind {
    /// `sync`: called whenever the parent or one of its children changes,
    /// and at each resync; answers the status and the desired children.
    Sync,
    /// `finalize`: called instead of `sync` while the parent is being
    /// deleted, until it answers that the parent may go.
    Finalize,
    /// `customize`: which related objects to send with each `sync`; asked
    /// again when the parent's spec changes.
    Customize,
    /// `validate`: asked by the API server before a parent is created,
    /// changed or deleted; answers whether it may be
    /// ([`crate::admission`]).
    Validate,
    /// `default`: asked by the API server before a parent is created or
    /// changed; answers the spec with its defaults filled in, as a patch.
    Default,
    /// `convert`: asked by the API server to convert parents between the
    /// versions the CRD serves; answers each object at the version asked
    /// for ([`crate::conversion`]).
    Convert,
}

impl HookKind {
    /// Every kind of hook.
    pub const ALL: [HookKind; 6] = [
        HookKind::Sync,
        HookKind::Finalize,
        HookKind::Customize,
        HookKind::Validate,
        HookKind::Default,
        HookKind::Convert,
    ];

    /// Its name, as in its path (`/{controller}/sync`) and a manifest's
    /// `spec.hooks`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookKind::Sync => "sync",
            HookKind::Finalize => "finalize",
            HookKind::Customize => "customize",
            HookKind::Validate => "validate",
            HookKind::Default => "default",
            HookKind::Convert => "convert",
        }
    }

    /// Whether it is an admission webhook (`validate`, `default`).
    pub fn is_admission(self) -> bool {
        matches!(self, HookKind::Validate | HookKind::Default)
    }

    /// Whether the API server calls it (an admission or conversion
    /// webhook), not Metacontroller or the driver: it is left out of the
    /// CompositeController's hooks.
    pub fn called_by_api_server(self) -> bool {
        self.is_admission() || self == HookKind::Convert
    }

    /// The kind named `name` (`sync`, `finalize`, `customize`, `validate`,
    /// `default`, `convert`); `None` for any other name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|h| h.as_str() == name)
    }
}

impl fmt::Display for HookKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A hook as a controller holds it: request bytes and the time in,
/// response bytes out.
pub type Handler = Arc<dyn Fn(&[u8], Timestamp) -> Result<Vec<u8>, HookError> + Send + Sync>;

/// What went wrong running a hook on a request.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// The request is not one the hook can read: not JSON, or not of its
    /// types (the service answers 400 or 422).
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The answer could not be encoded as JSON (a map with keys that are
    /// not strings, say).
    #[error("encoding the response failed: {0}")]
    Encode(#[from] serde_json::Error),
    /// The hook returned an error instead of an answer.
    #[error("the hook failed: {message}")]
    Failed {
        /// The error's message.
        message: String,
    },
}

/// Decodes the request, runs the pure hook, encodes the response.
pub fn run<Req, Resp>(
    body: &[u8],
    now: Timestamp,
    hook: fn(&Req, Timestamp) -> Resp,
) -> Result<Vec<u8>, HookError>
where
    Req: DeserializeOwned,
    Resp: Serialize,
{
    let request: Req = decode(body)?;
    let response = hook(&request, now);
    Ok(serde_json::to_vec(&response)?)
}

/// A hook that panicked, with the panic's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the hook panicked: {message}")]
pub struct Panicked {
    /// What `panic!` was given, or a placeholder for a payload that is
    /// not text.
    pub message: String,
}

/// Calls `handler` on `body` at `now`, as the service and the driver do:
/// a panic is caught and returned with its message. The hooks are pure and
/// own nothing shared, so a panic leaves nothing half-changed behind and
/// the caller answers an error and carries on.
pub fn call(
    handler: &Handler,
    body: &[u8],
    now: Timestamp,
) -> Result<Result<Vec<u8>, HookError>, Panicked> {
    catch_unwind(AssertUnwindSafe(|| handler(body, now))).map_err(|panic| Panicked {
        message: panic_message(panic.as_ref()),
    })
}

/// What `panic!` was given: its text, or a placeholder for a payload
/// that is not text.
fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        Timestamp::UNIX_EPOCH
    }

    #[test]
    fn a_panic_is_returned_with_its_message() {
        let literal: Handler = Arc::new(|_, _| panic!("a literal"));
        let formatted: Handler = Arc::new(|body, _| panic!("{} bytes", body.len()));
        let payload: Handler = Arc::new(|_, _| std::panic::panic_any(7_u8));
        assert_eq!(
            call(&literal, b"{}", now()).unwrap_err().message,
            "a literal"
        );
        assert_eq!(
            call(&formatted, b"{}", now()).unwrap_err().message,
            "2 bytes"
        );
        assert_eq!(
            call(&payload, b"{}", now()).unwrap_err().message,
            "a panic without a message"
        );
    }

    #[test]
    fn a_hook_that_returns_is_passed_through() {
        use crate::test_types::{Note, NoteStatus};
        use crate::{Answer, Controller, Request};
        let notes = Controller::composite::<Note>("note")
            .sync(|_: &Request<Note>| Answer::new(NoteStatus::default()))
            .build();
        let sync = notes.hook(HookKind::Sync).unwrap();
        let answer = call(&sync, b"not json", now()).unwrap();
        assert!(matches!(answer, Err(HookError::Decode(_))), "{answer:?}");
    }
}
