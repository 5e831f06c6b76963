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
    /// The controller has no hook of this kind.
    #[error("the controller has no {0} hook")]
    NoHook(HookKind),
    /// The request is not one the hook reads, or the hook failed.
    #[error(transparent)]
    Hook(#[from] HookError),
    /// The hook panicked, saying this.
    #[error("the hook panicked: {0}")]
    Panicked(String),
    /// The request could not be encoded, or the answer is not JSON.
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
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use metahook_core::{Answer, Controller, HookKind, Request, UpdateStrategy};
    /// use metahook_testing::Situation;
    /// use serde_json::json;
    /// # use kube::CustomResource;
    /// # use schemars::JsonSchema;
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
    /// # #[kube(group = "example.com", version = "v1", kind = "Note", namespaced, status = "NoteStatus")]
    /// # pub struct NoteSpec { text: String }
    /// # #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    /// # pub struct NoteStatus { copies: usize }
    ///
    /// fn sync(req: &Request<Note, ConfigMap>) -> Answer<NoteStatus> {
    ///     let copies = req.children.len();
    ///     Answer::new(NoteStatus { copies }).child(json!({
    ///         "apiVersion": "v1", "kind": "ConfigMap",
    ///         "metadata": {"name": req.parent.metadata.name},
    ///     }))
    /// }
    /// let notes = Controller::composite::<Note>("note")
    ///     .sync(sync)
    ///     .build();
    ///
    /// let mut note = Note::new("hello", NoteSpec { text: "hi".to_owned() });
    /// note.metadata.namespace = Some("default".to_owned());
    /// let copy = json!({
    ///     "apiVersion": "v1", "kind": "ConfigMap",
    ///     "metadata": {"name": "hello", "namespace": "default"},
    /// });
    /// let answer = Situation::of(note)
    ///     .child(copy)
    ///     .answer(&notes, HookKind::Sync, "2026-11-22T03:00:00Z".parse()?)?;
    /// assert_eq!(answer["status"]["copies"], 1);
    /// assert_eq!(answer["children"][0]["metadata"]["name"], "hello");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn answer(
        &self,
        controller: &Controller,
        hook: HookKind,
        now: Timestamp,
    ) -> Result<Value, CallError> {
        let body = serde_json::to_vec(&self.request()).map_err(CallError::Answer)?;
        call(controller, hook, &body, now)
    }
}

/// `controller`'s `hook` called on the request `body` at `now`, as the
/// service calls it (a panic caught), and its answer as JSON.
pub(crate) fn call(
    controller: &Controller,
    hook: HookKind,
    body: &[u8],
    now: Timestamp,
) -> Result<Value, CallError> {
    let handler = controller.hook(hook).ok_or(CallError::NoHook(hook))?;
    let answer =
        registry::call(&handler, body, now).map_err(|p| CallError::Panicked(p.message))??;
    serde_json::from_slice(&answer).map_err(CallError::Answer)
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
