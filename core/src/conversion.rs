//! Conversion: the API server asks a controller's `convert` hook to turn
//! its parents from one served version into another. A controller declares
//! the other versions of its parent with
//! [`Composite::version`](crate::Composite::version), each converted to and
//! from the parent type (the hub: the version every other hook sees and the
//! API server stores) by `From` impls between their specs and statuses.
//! The hook answers a ConversionReview (`apiextensions.k8s.io/v1`) for any
//! list of objects: each goes through the hub, its metadata kept as sent.
//! [`Controller::crds_with_conversion`](crate::Controller::crds_with_conversion)
//! writes the CRD with every version and the webhook that converts them.
//!
//! ## Example
//!
//! ```
//! use kube::CustomResource;
//! use metahook_core::{Answer, Controller, HookKind, Request};
//! use metahook_core::conversion::ConversionWebhook;
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! /// The hub: what the hooks read, and what is stored.
//! #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Note", namespaced, status = "NoteStatus")]
//! pub struct NoteSpec { text: String }
//!
//! #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
//! pub struct NoteStatus { copies: usize }
//!
//! /// v2 puts the text in a body (`root`: the type's name, beside v1's).
//! #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
//! #[kube(group = "example.com", version = "v2", kind = "Note", root = "NoteV2", namespaced, status = "NoteStatus")]
//! pub struct NoteV2Spec { body: Body }
//!
//! #[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
//! pub struct Body { text: String }
//!
//! impl From<NoteV2Spec> for NoteSpec {
//!     fn from(v2: NoteV2Spec) -> Self { NoteSpec { text: v2.body.text } }
//! }
//! impl From<NoteSpec> for NoteV2Spec {
//!     fn from(hub: NoteSpec) -> Self { NoteV2Spec { body: Body { text: hub.text } } }
//! }
//! // Both versions share the status type: `From<T> for T` converts it.
//!
//! let notes = Controller::composite::<Note>("note")
//!     .sync(|_: &Request<Note>| Answer::new(NoteStatus::default()))
//!     .version::<NoteV2>()
//!     .build();
//! let review = serde_json::json!({
//!     "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
//!     "request": {
//!         "uid": "c-1", "desiredAPIVersion": "example.com/v2",
//!         "objects": [{
//!             "apiVersion": "example.com/v1", "kind": "Note",
//!             "metadata": {"name": "n", "namespace": "ns"},
//!             "spec": {"text": "hi"},
//!         }],
//!     },
//! });
//! let convert = notes.hook(HookKind::Convert).ok_or("a convert hook")?;
//! let answer = convert(review.to_string().as_bytes(), "2026-11-22T03:00:00Z".parse()?)?;
//! let answer: serde_json::Value = serde_json::from_slice(&answer)?;
//! assert_eq!(answer["response"]["result"]["status"], "Success");
//! assert_eq!(answer["response"]["convertedObjects"][0]["spec"]["body"]["text"], "hi");
//!
//! // The CRD with both versions, v1 stored, converted by the hook service.
//! let crds = notes.crds_with_conversion(&ConversionWebhook::url("https://hooks.example.com"))?;
//! assert_eq!(crds[0].spec.versions.len(), 2);
//! let webhook = crds[0].spec.conversion.as_ref().and_then(|c| c.webhook.as_ref());
//! let url = webhook.and_then(|w| w.client_config.as_ref()).and_then(|c| c.url.as_deref());
//! assert_eq!(url, Some("https://hooks.example.com/note/convert"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod review;
mod versions;
mod webhook;

pub use webhook::ConversionWebhook;

pub(crate) use review::convert_handler;
pub(crate) use versions::Version;

#[cfg(test)]
mod tests;
