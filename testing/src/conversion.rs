//! The round trip of a controller's conversions: objects generated at one
//! version of its parent, converted to another by the controller's own
//! `convert` hook (the ConversionReview handler the API server calls) and
//! back, must come back as they went, metadata included. A failure is
//! shrunk (proptest) to the smallest object that fails, and names the
//! fields that changed, as paths from the object's top:
//! `spec.deployment.replicas: 3 → absent`.
//!
//! Objects are generated from a [`Strategy`] of the spec (and, if given,
//! of the status): `any::<Spec>()` where the spec is
//! [`Arbitrary`](proptest::arbitrary::Arbitrary), or a few lines of
//! `prop_map` where it is not. A strategy is the spec's own type, so every
//! value it makes is one the hooks can meet; values generated from the
//! CRD's JSON schema would also be ones its type refuses (a pattern, a
//! format) or never makes.
//!
//! ## Example
//!
//! ```
//! # use kube::CustomResource;
//! # use metahook_core::{Answer, Controller, Request};
//! # use schemars::JsonSchema;
//! # use serde::{Deserialize, Serialize};
//! use metahook_testing::conversion::round_trips;
//! use metahook_testing::proptest::prelude::*;
//!
//! /// The hub: `v1` (`text`).
//! #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Note", namespaced, status = "NoteStatus")]
//! pub struct NoteSpec { text: String }
//! # #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
//! # pub struct NoteStatus { copies: usize }
//!
//! /// `v2` puts the text in a body.
//! #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
//! #[kube(group = "example.com", version = "v2", kind = "Note", root = "NoteV2", namespaced, status = "NoteStatus")]
//! pub struct NoteV2Spec { body: Body }
//! #[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
//! pub struct Body { text: String }
//!
//! impl From<NoteV2Spec> for NoteSpec {
//!     fn from(v2: NoteV2Spec) -> Self { NoteSpec { text: v2.body.text } }
//! }
//! impl From<NoteSpec> for NoteV2Spec {
//!     fn from(hub: NoteSpec) -> Self { NoteV2Spec { body: Body { text: hub.text } } }
//! }
//!
//! let notes = Controller::composite::<Note>("note")
//!     .sync(|_: &Request<Note>| Answer::new(NoteStatus::default()))
//!     .version::<NoteV2>()
//!     .build();
//! // v1 → v2 → v1, and v2 → v1 → v2.
//! round_trips::<Note, NoteV2>(&notes, any::<String>().prop_map(|text| NoteSpec { text }))?;
//! round_trips::<NoteV2, Note>(&notes, any::<String>().prop_map(|text| NoteV2Spec { body: Body { text } }))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod changes;

pub use changes::FieldChange;

use changes::{differences, join};
use jiff::Timestamp;
use metahook_core::{Controller, Handler, HookKind, ParentType, TypeRef, registry};
use proptest::strategy::{BoxedStrategy, LazyJust, Strategy};
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use serde::Serialize;
use serde_json::{Value, json};
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;

/// Checks that objects of version `Start`, with specs from `specs`, come
/// back from `Via` as they went, through `controller`'s `convert` hook:
/// [`RoundTrip::new`] and [`RoundTrip::check`] in one call, without
/// statuses and with proptest's number of cases (256, or
/// `PROPTEST_CASES`).
pub fn round_trips<Start, Via>(
    controller: &Controller,
    specs: impl Strategy<Value = Start::SpecType> + 'static,
) -> Result<(), RoundTripError>
where
    Start: ParentType,
    Start::SpecType: Serialize + fmt::Debug + 'static,
    Start::StatusType: fmt::Debug + 'static,
    Via: ParentType,
{
    RoundTrip::<Start, Via>::new(controller, specs).check()
}

/// The round trip `Start → Via → Start` of generated objects, through a
/// controller's `convert` hook, to set up and [`check`](RoundTrip::check).
///
/// `Start` and `Via` are two versions of the controller's parent: its
/// own type (the hub) and one it declares with
/// [`Composite::version`](metahook_core::Composite::version), either way
/// round. Hub → version → hub checks every stored object reads and writes
/// back through that version; version → hub → version checks that a value
/// only that version can hold is not lost on the way to storage.
pub struct RoundTrip<Start: ParentType, Via> {
    controller: Controller,
    specs: BoxedStrategy<Start::SpecType>,
    statuses: Option<BoxedStrategy<Start::StatusType>>,
    cases: Option<u32>,
    _via: PhantomData<fn() -> Via>,
}

impl<Start, Via> RoundTrip<Start, Via>
where
    Start: ParentType,
    Start::SpecType: Serialize + fmt::Debug + 'static,
    Start::StatusType: fmt::Debug + 'static,
    Via: ParentType,
{
    /// Objects of `Start` with specs from `specs`, and no status, through
    /// `controller`'s `convert` hook.
    pub fn new(
        controller: &Controller,
        specs: impl Strategy<Value = Start::SpecType> + 'static,
    ) -> Self {
        RoundTrip {
            controller: controller.clone(),
            specs: specs.boxed(),
            statuses: None,
            cases: None,
            _via: PhantomData,
        }
    }

    /// A status from `statuses` on every object too: the statuses' `From`
    /// conversions are checked beside the specs'.
    pub fn statuses(
        mut self,
        statuses: impl Strategy<Value = Start::StatusType> + 'static,
    ) -> Self {
        self.statuses = Some(statuses.boxed());
        self
    }

    /// How many objects to generate (default proptest's: 256, or
    /// `PROPTEST_CASES`).
    pub fn cases(mut self, cases: u32) -> Self {
        self.cases = Some(cases);
        self
    }

    /// Generates the objects and converts each there and back; the first
    /// that does not come back as it went is shrunk to the smallest that
    /// still fails, and returned with what changed.
    pub fn check(self) -> Result<(), RoundTripError> {
        let trip = Trip {
            hook: self.controller.hook(HookKind::Convert).ok_or_else(|| {
                RoundTripError::NoConvertHook {
                    controller: self.controller.name().to_owned(),
                }
            })?,
            start: Start::type_ref(),
            via: Via::type_ref(),
        };
        let mut config = Config {
            // A failure is reported, shrunk, in the error: nothing is
            // written beside the user's test files.
            failure_persistence: None,
            ..Config::default()
        };
        if let Some(cases) = self.cases {
            config.cases = cases;
        }
        // The error of the last failing object: proptest hands back only
        // its message, and the last to fail is the smallest it found.
        let failed = RefCell::new(None);
        let objects = match self.statuses {
            Some(statuses) => (self.specs, statuses.prop_map(Some)).boxed(),
            None => (self.specs, LazyJust::new(|| None)).boxed(),
        };
        let outcome = TestRunner::new(config).run(&objects, |(spec, status)| {
            trip.once(&spec, status.as_ref()).map_err(|e| {
                let message = e.to_string();
                failed.replace(Some(e));
                TestCaseError::fail(message)
            })
        });
        match outcome {
            Ok(()) => Ok(()),
            Err(TestError::Fail(reason, _)) => Err(failed
                .into_inner()
                .unwrap_or_else(|| RoundTripError::GaveUp(reason.to_string()))),
            Err(TestError::Abort(reason)) => Err(RoundTripError::GaveUp(reason.to_string())),
        }
    }
}

/// Why a round trip failed: what changed, or why an object was not
/// converted at all. Its message names the smallest object proptest found
/// that fails, at each step.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum RoundTripError {
    /// The controller has no `convert` hook: it declares no version of its
    /// parent beside the hub's.
    #[error(
        "the {controller} controller has no convert hook: it declares no other version of its parent (Composite::version)"
    )]
    NoConvertHook {
        /// The controller's name.
        controller: String,
    },
    /// A generated spec or status could not be written as JSON.
    #[error("a generated object could not be written as JSON: {0}")]
    Encode(#[source] serde_json::Error),
    /// The hook did not convert the object: it answered the review with a
    /// failure, gave no answer, or panicked (a `From` that did), as the
    /// API server would see it.
    #[error(
        "the convert hook did not convert an object from {from} to {to} ({at}): {why}\n  {}",
        parts(object)
    )]
    NotConverted {
        /// The version converted from.
        from: String,
        /// The version asked for.
        to: String,
        /// `the way there` or `the way back`.
        at: &'static str,
        /// Why: the review's message, or the hook's error.
        why: String,
        /// The object sent.
        object: Value,
    },
    /// The object came back changed: each field that differs.
    #[error(transparent)]
    Changed(Box<Changed>),
    /// proptest stopped before a result (its message says why).
    #[error("the round trip was not checked: {0}")]
    GaveUp(String),
}

/// The message: a test that returns this error (`?`) or unwraps it prints
/// `Debug`, and the objects' JSON as Rust's `Debug` writes it would bury
/// the field that changed.
impl fmt::Debug for RoundTripError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl RoundTripError {
    /// The paths of the fields that changed (`spec.deployment.replicas`);
    /// none when the object was not converted at all.
    pub fn fields(&self) -> Vec<&str> {
        match self {
            RoundTripError::Changed(changed) => {
                changed.fields.iter().map(|c| c.field.as_str()).collect()
            }
            _ => Vec::new(),
        }
    }
}

/// An object a round trip changed: each field that differs, and the
/// object at each step.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "{start} → {via} → {start} changed {}\n  sent: {}\n  at {via}: {}\n  back: {}",
    fields.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "),
    parts(sent), parts(there), parts(back)
)]
pub struct Changed {
    /// The version the object started at and came back to.
    pub start: String,
    /// The version it was converted to.
    pub via: String,
    /// The fields that changed, by path from the object's top.
    pub fields: Vec<FieldChange>,
    /// The object as sent.
    pub sent: Value,
    /// The object at `via`.
    pub there: Value,
    /// The object as it came back.
    pub back: Value,
}

/// One round trip's hook and versions.
struct Trip {
    hook: Handler,
    start: TypeRef,
    via: TypeRef,
}

impl Trip {
    /// One object, with `spec` and `status`, there and back.
    fn once<S: Serialize, T: Serialize>(
        &self,
        spec: &S,
        status: Option<&T>,
    ) -> Result<(), RoundTripError> {
        let mut sent = json!({
            "apiVersion": self.start.api_version,
            "kind": self.start.kind,
            "metadata": metadata(self.start.namespaced),
            "spec": serde_json::to_value(spec).map_err(RoundTripError::Encode)?,
        });
        if let Some(status) = status {
            sent["status"] = serde_json::to_value(status).map_err(RoundTripError::Encode)?;
        }
        let there = self.convert(&sent, &self.via, "the way there")?;
        let back = self.convert(&there, &self.start, "the way back")?;
        // What the API server itself refuses on the way there: a changed
        // kind or metadata (but labels and annotations).
        let mut changes = differences(&sent, &back);
        for field in ["kind", "metadata"] {
            changes.extend(
                differences(&sent[field], &there[field])
                    .into_iter()
                    .map(|c| FieldChange {
                        field: join(&format!("{field} (at {})", self.via.api_version), &c.field),
                        ..c
                    }),
            );
        }
        if changes.is_empty() {
            return Ok(());
        }
        Err(RoundTripError::Changed(Box::new(Changed {
            start: self.start.api_version.to_string(),
            via: self.via.api_version.to_string(),
            fields: changes,
            sent,
            there,
            back,
        })))
    }

    /// `object` converted to `to` by the hook, as the API server asks and
    /// reads the answer.
    fn convert(
        &self,
        object: &Value,
        to: &TypeRef,
        at: &'static str,
    ) -> Result<Value, RoundTripError> {
        let from = object["apiVersion"].as_str().unwrap_or_default();
        let not_converted = |why: String| RoundTripError::NotConverted {
            from: from.to_owned(),
            to: to.api_version.to_string(),
            at,
            why,
            object: object.clone(),
        };
        let uid = "6c1f9a52-round-trip";
        // As kube-apiserver sends it: an empty response beside the request
        // (fixtures/foo/conversion/).
        let review = json!({
            "kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1",
            "request": {"uid": uid, "desiredAPIVersion": to.api_version, "objects": [object]},
            "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
        });
        let now = Timestamp::from_second(1_795_316_400).unwrap_or(Timestamp::UNIX_EPOCH);
        let answer = match registry::call(&self.hook, review.to_string().as_bytes(), now) {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => return Err(not_converted(format!("the hook failed: {e}"))),
            Err(panicked) => return Err(not_converted(panicked.to_string())),
        };
        let answer: Value = serde_json::from_slice(&answer)
            .map_err(|e| not_converted(format!("the answer is not JSON: {e}")))?;
        let response = &answer["response"];
        if response["result"]["status"] != "Success" {
            return Err(not_converted(format!(
                "the review failed: {}",
                response["result"]["message"]
                    .as_str()
                    .unwrap_or("(no message)")
            )));
        }
        // The API server's own checks of an answer.
        if response["uid"] != uid {
            return Err(not_converted(format!(
                "the answer's uid is {}, not {uid}",
                response["uid"]
            )));
        }
        let converted = match response["convertedObjects"].as_array().map(Vec::as_slice) {
            Some([converted]) => converted.clone(),
            _ => {
                return Err(not_converted(format!(
                    "one object sent, convertedObjects is {}",
                    response["convertedObjects"]
                )));
            }
        };
        if converted["apiVersion"] != to.api_version.as_ref() {
            return Err(not_converted(format!(
                "the object came back at {}",
                converted["apiVersion"]
            )));
        }
        Ok(converted)
    }
}

/// The metadata of every object sent: as the API server sends a stored
/// object (no resourceVersion: etcd keeps it outside the object), so a
/// hook that touches any of it is caught.
fn metadata(namespaced: bool) -> Value {
    let mut metadata = json!({
        "name": "round-trip",
        "uid": "9a7e3c1b-2d4f-4a8e-9c6b-5e1d0f2a3b47",
        "generation": 2,
        "creationTimestamp": "2026-11-22T02:59:00Z",
        "labels": {"app.kubernetes.io/name": "round-trip"},
        "annotations": {"example.com/kept": "as sent"},
        "finalizers": ["example.com/round-trip"],
        "managedFields": [{
            "manager": "kubectl-client-side-apply",
            "operation": "Update",
            "time": "2026-11-22T02:59:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {}},
        }],
    });
    if namespaced {
        metadata["namespace"] = json!("default");
    }
    metadata
}

/// An object's spec and status, for a message (its metadata is always
/// the same).
fn parts(object: &Value) -> String {
    let mut parts = vec![format!("spec {}", object["spec"])];
    if let Some(status) = object.get("status") {
        parts.push(format!("status {status}"));
    }
    parts.join(", ")
}
