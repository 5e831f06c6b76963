//! Tests of a metahook controller with no cluster and no Docker: a
//! dev-dependency.
//!
//! - [`Situation`]: a request built from typed objects (the parent, the
//!   children with the status the test wants), and the hook's answer as
//!   JSON — snapshot it whole with insta;
//! - [`Recorded`]: requests recorded as Metacontroller sends them, a
//!   directory of them, answered the same way;
//! - [`disagreements`]: a controller's declaration against the manifest
//!   of a CompositeController written by hand;
//! - [`Converge`]: the controller driven pass after pass by the bundled
//!   driver's own planner over an in-memory cluster, until a pass writes
//!   nothing; it fails, naming the object and the field, when the
//!   controller never settles (a timestamp in the status, a field the API
//!   server defaults otherwise) or settles only after more passes than the
//!   test allows; and it runs a deletion through `finalize` to the end.
//!   The parent goes through the controller's own `default` and
//!   `validate` hooks on its create and on every change, as the API
//!   server sends it: a refusal is [`ConvergeError::Refused`], with the
//!   hook's message and fields; warnings are on [`Converged::warnings`];
//! - [`conversion`]: the round trip of a controller's versions (one to
//!   another and back, through its `convert` hook) checked on generated
//!   objects, failing with the smallest that comes back changed and the
//!   fields that did (`spec.deployment.replicas: 3 → absent`);
//! - [`kubernetes`]: what the API server and the controllers of common
//!   child types do to them (a Deployment's defaults, a Deployment
//!   becoming available).
//!
//! ```
//! use k8s_openapi::api::apps::v1::Deployment;
//! use metahook_testing::{Converge, kubernetes};
//! # use metahook_core::{Answer, Controller, Request, UpdateStrategy};
//! # use kube::CustomResource;
//! # use schemars::JsonSchema;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "Web", namespaced, status = "WebStatus")]
//! # pub struct WebSpec { replicas: i32 }
//! # #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
//! # pub struct WebStatus { available: i32 }
//! # fn sync(req: &Request<Web, Deployment>) -> Answer<WebStatus> {
//! #     let name = &req.parent.metadata.name;
//! #     let replicas = req.parent.spec.as_ref().map(|s| s.replicas).unwrap_or(0);
//! #     let available = req.children.get(name)
//! #         .and_then(|d| d.status.as_ref()?.available_replicas).unwrap_or(0);
//! #     Answer::new(WebStatus { available }).child(serde_json::json!({
//! #         "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
//! #         "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
//! #                  "template": {"metadata": {"labels": {"app": name}},
//! #                               "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}))
//! # }
//! # let web = Controller::composite::<Web>("web").sync(sync).build();
//!
//! let settled = Converge::new(web)?
//!     .parent(serde_json::json!({
//!         "apiVersion": "example.com/v1", "kind": "Web",
//!         "metadata": {"name": "shop", "namespace": "default"},
//!         "spec": {"replicas": 3},
//!     }))
//!     .defaults::<Deployment>(kubernetes::deployment_defaults)
//!     .moves::<Deployment>(kubernetes::deployment_becomes_available)
//!     .run()?;
//! assert!(settled.passes() <= 3);
//! assert_eq!(settled.parent().unwrap()["status"]["available"], 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod converge;
pub mod conversion;
mod declared;
pub mod kubernetes;
mod recorded;
mod requests;
mod review;
mod store;

pub use converge::{Converge, ConvergeError, Converged, NotSettled, Pass, Refused};
pub use declared::disagreements;
pub use recorded::{Recorded, RecordedError};
pub use requests::{CallError, Situation};

/// The proptest [`conversion`]'s checks take strategies of: a test builds
/// its strategies with this one, and needs no dependency of its own.
pub use proptest;
