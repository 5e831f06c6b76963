//! Hook requests built from typed objects, as Metacontroller sends them,
//! and hooks called as the service calls them: for tests of a hook's
//! answer to a situation a test sets up, snapshot whole with insta.

use jiff::Timestamp;
use metahook_core::registry::{self, HookError};
use metahook_core::{Controller, HookKind};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// Why a hook gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("the controller has no {0} hook")]
    NoHook(HookKind),
    #[error(transparent)]
    Hook(#[from] HookError),
    #[error("the hook panicked: {0}")]
    Panicked(String),
    #[error("the answer is not JSON")]
    Answer(#[source] serde_json::Error),
}

/// A `sync` (or `finalize`, or `customize`) request: a parent, its
/// children and related objects, keyed as a v2 hook's are.
#[derive(Debug, Clone)]
pub struct Situation {
    parent: Value,
    children: Map<String, Value>,
    related: Map<String, Value>,
    finalizing: bool,
}

impl Situation {
    /// `parent` with no children (a typed object or JSON).
    pub fn of(parent: impl Serialize) -> Self {
        Situation {
            parent: serde_json::to_value(parent).unwrap_or(Value::Null),
            children: Map::new(),
            related: Map::new(),
            finalizing: false,
        }
    }

    /// One more observed child, with whatever status the test gives it.
    pub fn child(mut self, child: impl Serialize) -> Self {
        insert(&mut self.children, child);
        self
    }

    /// One more related object.
    pub fn related(mut self, object: impl Serialize) -> Self {
        insert(&mut self.related, object);
        self
    }

    /// The parent is being deleted: the `finalize` hook's request.
    pub fn finalizing(mut self) -> Self {
        self.finalizing = true;
        self
    }

    /// The request, as Metacontroller sends it.
    pub fn request(&self) -> Value {
        json!({
            "controller": {"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController"},
            "parent": self.parent,
            "children": self.children,
            "related": self.related,
            "finalizing": self.finalizing,
        })
    }

    /// `controller`'s `hook` on this request at `now`: its answer.
    pub fn answer(
        &self,
        controller: &Controller,
        hook: HookKind,
        now: Timestamp,
    ) -> Result<Value, CallError> {
        let handler = controller.hook(hook).ok_or(CallError::NoHook(hook))?;
        let body = serde_json::to_vec(&self.request()).map_err(CallError::Answer)?;
        let answer =
            registry::call(&handler, &body, now).map_err(|p| CallError::Panicked(p.message))??;
        serde_json::from_slice(&answer).map_err(CallError::Answer)
    }
}

/// Files `object` under `Kind.apiVersion` and `namespace/name`.
fn insert(map: &mut Map<String, Value>, object: impl Serialize) {
    let object = serde_json::to_value(object).unwrap_or(Value::Null);
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let group = format!("{}.{}", text(&object["kind"]), text(&object["apiVersion"]));
    let meta = &object["metadata"];
    let key = match meta["namespace"].as_str() {
        Some(ns) => format!("{ns}/{}", text(&meta["name"])),
        None => text(&meta["name"]),
    };
    if let Value::Object(inner) = map.entry(group).or_insert_with(|| json!({})) {
        inner.insert(key, object);
    }
}
