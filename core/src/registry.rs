//! The table of controllers and their hooks: the one place the service, the
//! `render` command and the driver look a hook up. A new controller is one
//! module plus one entry here (and one manifest in `metacontroller/`).

use crate::controller::Controller;
use crate::decode::{DecodeError, decode};
use jiff::Timestamp;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// The hooks Metacontroller calls on a CompositeController.
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
}

impl HookKind {
    /// Every kind of hook.
    pub const ALL: [HookKind; 3] = [HookKind::Sync, HookKind::Finalize, HookKind::Customize];

    /// Its name, as in its path (`/{controller}/sync`) and a manifest's
    /// `spec.hooks`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookKind::Sync => "sync",
            HookKind::Finalize => "finalize",
            HookKind::Customize => "customize",
        }
    }

    /// The kind named `name` (`sync`, `finalize`, `customize`); `None`
    /// for any other name.
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

/// Why a `(controller, hook)` pair names no hook. The messages list what
/// does exist, so a typo is easy to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// No controller has that name.
    #[error("unknown controller {name:?}; known controllers: {known}")]
    UnknownController {
        /// The name asked for.
        name: String,
        /// Every controller's name, comma-separated.
        known: String,
    },
    /// The controller has no hook of that name.
    #[error("controller {controller:?} has no {hook:?} hook; it has: {known}")]
    UnknownHook {
        /// The controller.
        controller: String,
        /// The hook asked for.
        hook: String,
        /// The hooks it has, comma-separated.
        known: String,
    },
}

/// Finds `controller`'s `hook` in `table`.
pub fn lookup<'t>(
    table: &'t [Controller],
    controller: &str,
    hook: &str,
) -> Result<(&'t Controller, HookKind, Handler), LookupError> {
    let found = table
        .iter()
        .find(|c| c.name() == controller)
        .ok_or_else(|| LookupError::UnknownController {
            name: controller.to_owned(),
            known: table
                .iter()
                .map(Controller::name)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    HookKind::parse(hook)
        .and_then(|kind| found.hook(kind).map(|handler| (found, kind, handler)))
        .ok_or_else(|| LookupError::UnknownHook {
            controller: controller.to_owned(),
            hook: hook.to_owned(),
            known: found
                .hook_kinds()
                .map(HookKind::as_str)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Every CRD of every controller of `table`, in its order.
pub fn all_crds(table: &[Controller]) -> Vec<CustomResourceDefinition> {
    table.iter().flat_map(Controller::crds).collect()
}

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
        use crate::{Answer, Request};
        let notes = Controller::composite::<Note>("note")
            .sync(|_: &Request<Note>| Answer::new(NoteStatus::default()))
            .build();
        let sync = notes.hook(HookKind::Sync).unwrap();
        let answer = call(&sync, b"not json", now()).unwrap();
        assert!(matches!(answer, Err(HookError::Decode(_))), "{answer:?}");
    }
}
