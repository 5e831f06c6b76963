//! Hook requests built from typed objects, as Metacontroller sends them,
//! and hooks called as the service calls them: for tests of a hook's
//! answer to a situation a test sets up, snapshot whole with insta.

use crate::review::review;
use jiff::Timestamp;
use metahook_core::HookError;
use metahook_core::admission::Operation;
use metahook_core::registry;
use metahook_core::{Controller, DecodeError, HookKind, ObjectSet, ParentType, Request, Shape};
use metahook_planner::decide::selector::CONTROLLER_UID;
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
/// children and related objects, keyed as a v2 hook's are. For the
/// `validate` and `default` hooks, the AdmissionReview of the parent's
/// create (or, [`replacing`](Situation::replacing) an old one, update).
#[derive(Debug, Clone)]
pub struct Situation {
    parent: Value,
    children: Map<String, Value>,
    related: Map<String, Value>,
    finalizing: bool,
    old: Option<Value>,
}

impl Situation {
    /// `parent` with no children (a typed object or JSON).
    pub fn of(parent: impl Serialize) -> Self {
        Situation {
            parent: serde_json::to_value(parent).unwrap_or(Value::Null),
            children: Map::new(),
            related: Map::new(),
            finalizing: false,
            old: None,
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

    /// The parent as it was stored: the admission hooks are asked about an
    /// update from `old` to the parent, not a create.
    pub fn replacing(mut self, old: impl Serialize) -> Self {
        self.old = serde_json::to_value(old).ok();
        self
    }

    /// The parent is being deleted: the `finalize` hook's request.
    pub fn finalizing(mut self) -> Self {
        self.finalizing = true;
        self
    }

    /// What the engine (Metacontroller or the bundled driver) adds before
    /// `controller`'s hooks see the objects, where the test left it out:
    /// the parent's `uid` (`uid-of-<name>`) and, when the controller has a
    /// finalize hook, its finalizer; on each child of a CompositeController
    /// that generates its selector, the `controller-uid` label and the
    /// parent as controlling owner. A request without them is one the
    /// engine never sends: `render --plan` of it plans a label change on
    /// every child, and no delete on `finalize`.
    ///
    /// ```
    /// # use metahook_core::{Answer, Controller, Request};
    /// # use metahook_core::test_types::{Note, NoteSpec, NoteStatus};
    /// use metahook_testing::Situation;
    /// use serde_json::json;
    ///
    /// # let hook = |_: &Request<Note>| Answer::new(NoteStatus::default());
    /// let notes = Controller::composite::<Note>("note").sync(hook).finalize(hook).build();
    /// let note = json!({"apiVersion": "example.com/v1", "kind": "Note",
    ///                   "metadata": {"name": "hello", "namespace": "default"}});
    /// let sent = Situation::of(note).sent_by(&notes).request_json();
    /// assert_eq!(sent["parent"]["metadata"]["uid"], "uid-of-hello");
    /// assert_eq!(sent["parent"]["metadata"]["finalizers"][0],
    ///            "metacontroller.io/compositecontroller-note");
    /// ```
    pub fn sent_by(mut self, controller: &Controller) -> Self {
        let Value::Object(parent) = &mut self.parent else {
            return self;
        };
        let meta = parent
            .entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        let Some(meta) = meta else { return self };
        let name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let uid = meta
            .entry("uid")
            .or_insert_with(|| Value::String(format!("uid-of-{name}")))
            .clone();
        let owns = matches!(
            controller.shape(),
            Shape::Composite {
                generate_selector: true,
                ..
            }
        );
        if let Some(finalizer) = controller.finalizer()
            && let Some(list) = meta
                .entry("finalizers")
                .or_insert_with(|| json!([]))
                .as_array_mut()
            && !list.iter().any(|f| f == finalizer.as_str())
        {
            list.push(Value::String(finalizer));
        }
        if owns {
            let owner = json!({
                "apiVersion": parent.get("apiVersion"), "kind": parent.get("kind"),
                "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": true,
            });
            let children = self.children.values_mut().filter_map(Value::as_object_mut);
            for child in children.flat_map(|group| group.values_mut()) {
                owned(child, &uid, &owner);
            }
        }
        self
    }

    /// The request decoded as a hook of yours reads it, at `now`: call the
    /// hook's function with it, and read its [`Answer`](metahook_core::Answer)
    /// as types (`status()`, `desired_of::<T>()`).
    pub fn request<P, C, R, MC, MR>(&self, now: Timestamp) -> Result<Request<P, C, R>, DecodeError>
    where
        P: ParentType,
        C: ObjectSet<MC>,
        R: ObjectSet<MR>,
    {
        let body = serde_json::to_vec(&self.request_json()).unwrap_or_default();
        Request::from_json(&body, now)
    }

    /// The request, as Metacontroller sends it.
    pub fn request_json(&self) -> Value {
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
    ///
    /// `validate` and `default` are asked with the AdmissionReview
    /// kube-apiserver sends for the parent's create (its update, with
    /// [`replacing`](Situation::replacing)); the answer is the whole
    /// review, for a snapshot:
    ///
    /// ```
    /// # use metahook_core::{Answer, Controller, HookKind, Request};
    /// # use metahook_core::test_types::{Note, NoteStatus};
    /// use metahook_core::admission::{Admission, Verdict};
    /// use metahook_testing::Situation;
    /// use serde_json::json;
    ///
    /// # let sync = |_: &Request<Note>| Answer::new(NoteStatus::default());
    /// let notes = Controller::composite::<Note>("note")
    ///     .sync(sync)
    ///     .validate(|a: &Admission<Note>| match a.old {
    ///         Some(_) => Verdict::allow().warn("changed"),
    ///         None => Verdict::allow(),
    ///     })
    ///     .build();
    /// let note = |text: &str| json!({"apiVersion": "example.com/v1", "kind": "Note",
    ///     "metadata": {"name": "hello", "namespace": "default"}, "spec": {"text": text}});
    /// let now = "2026-11-22T03:00:00Z".parse()?;
    /// let answer = Situation::of(note("hi"))
    ///     .replacing(note("hello"))
    ///     .answer(&notes, HookKind::Validate, now)?;
    /// assert_eq!(answer["response"]["allowed"], true);
    /// assert_eq!(answer["response"]["warnings"], json!(["changed"]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn answer(
        &self,
        controller: &Controller,
        hook: HookKind,
        now: Timestamp,
    ) -> Result<Value, CallError> {
        let request = match hook {
            HookKind::Validate | HookKind::Default => {
                let operation = match self.old {
                    Some(_) => Operation::Update,
                    None => Operation::Create,
                };
                review(
                    controller,
                    "situation",
                    operation,
                    &self.parent,
                    self.old.as_ref(),
                )
            }
            _ => self.request_json(),
        };
        let body = serde_json::to_vec(&request).map_err(CallError::Answer)?;
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

/// The engine's marks on a child: the `controller-uid` label, and `owner`
/// as its controller unless one is there.
fn owned(child: &mut Value, uid: &Value, owner: &Value) {
    let Some(meta) = child.as_object_mut().and_then(|c| {
        c.entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut()
    }) else {
        return;
    };
    if let Some(labels) = meta
        .entry("labels")
        .or_insert_with(|| json!({}))
        .as_object_mut()
    {
        labels.entry(CONTROLLER_UID).or_insert_with(|| uid.clone());
    }
    if let Some(owners) = meta
        .entry("ownerReferences")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        && !owners.iter().any(|o| o["controller"] == true)
    {
        owners.push(owner.clone());
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
