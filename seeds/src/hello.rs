//! The Hello controller (from the kube-rs Hello operator article): one
//! Deployment of `nginxdemos/hello` per `Hello`, scaled to `spec.replicas`.
//!
//! - sync: desire the Deployment; report replica counts from the *observed*
//!   one, a `Ready` condition and a `SpecValid` condition.
//! - invalid spec (`replicas` outside 0..=20, an empty image, a name too long
//!   for a label, or a spec that does not parse): hold every observed
//!   Deployment exactly as it is and say why in the status; create nothing.
//! - finalize: desire no children; `finalized` once none is observed.

use crate::children;
use crate::deployment::ObservedDeployment;
use crate::reading;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, ContainerPort};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResource, CustomResourceExt};
use metahook_core::admission::{Admission, FieldError, Verdict};
use metahook_core::conditions::Conditions;
use metahook_core::conditions::{WantedCondition, condition_false};
use metahook_core::{Answer, Controller, Parent};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const DEFAULT_IMAGE: &str = "nginxdemos/hello:0.3-plain-text";
pub const MAX_REPLICAS: i32 = 20;
/// The port `nginxdemos/hello` serves on.
pub const CONTAINER_PORT: i32 = 80;
/// Label values are at most 63 characters, and the Hello's name is one.
const MAX_NAME_LEN: usize = 63;

/// A Hello runs `replicas` copies of a small web server that answers with
/// its own name and address.
// clippy reads two printer columns of the same type as a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "fraim.co.jp",
    version = "v1",
    kind = "Hello",
    singular = "hello",
    plural = "helloes",
    shortname = "hlo",
    category = "metahook",
    namespaced,
    status = "HelloStatus",
    doc = "A Hello runs spec.replicas copies of nginxdemos/hello in one Deployment.",
    printcolumn(name = "Desired", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(
        name = "Available",
        type_ = "integer",
        json_path = ".status.availableReplicas"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct HelloSpec {
    /// How many replicas the Deployment runs (0 to 20).
    #[schemars(range(min = 0, max = 20))]
    pub replicas: i32,
    /// The container image; it must serve HTTP on port 80.
    #[serde(default = "default_image")]
    #[schemars(length(min = 1))]
    pub image: String,
}

fn default_image() -> String {
    DEFAULT_IMAGE.to_owned()
}

/// What the Hello's Deployment reports, and how the Hello is doing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelloStatus {
    /// The `metadata.generation` this status describes; written by
    /// Metacontroller or the driver, never by the hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Pods the Deployment has, from its status.
    #[serde(default)]
    pub replicas: i32,
    /// Pods that are ready.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Pods that have been ready for `minReadySeconds`.
    #[serde(default)]
    pub available_replicas: i32,
    /// `Ready` and `SpecValid`.
    #[serde(default)]
    pub conditions: Conditions,
}

pub type Request = metahook_core::Request<Hello, ObservedDeployment>;

pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![Hello::crd()]
}

/// The Hello controller, declared.
pub fn controller() -> Controller {
    Controller::composite::<Hello>("hello")
        .revision(env!("CARGO_PKG_VERSION"))
        // InPlace: a change of spec.replicas or spec.image must reach the
        // running Deployment; Recreate would take every pod down.
        .sync(sync)
        .finalize(finalize)
        .validate(validate)
        .build()
}

pub fn sync(req: &Request) -> Answer<HelloStatus> {
    let parent = &req.parent;
    let observed = own_deployment(req);
    let spec = valid_spec(parent);
    let children: Vec<Deployment> = match &spec {
        Ok(spec) => vec![deployment(parent, spec.replicas, &spec.image)],
        // Hold what exists, create nothing: see the module documentation.
        Err(_) => deployments(req).map(|d| held(parent, d)).collect(),
    };
    let target = match &spec {
        Ok(spec) => Some(spec.replicas),
        Err(_) => observed.map(|d| d.spec.replicas.unwrap_or(1)),
    };
    let ready = match target {
        Some(want) => crate::conditions::deployment_ready(observed, want, None),
        None => condition_false("Ready", "InvalidSpec")
            .message("no Deployment is created while the spec is invalid"),
    };
    Answer::new(status(req, observed, vec![ready, spec_condition(&spec)])).children(children)
}

pub fn finalize(req: &Request) -> Answer<HelloStatus> {
    let parent = &req.parent;
    let remaining: Vec<&str> = deployments(req).map(|d| d.metadata.name.as_str()).collect();
    let ready = condition_false("Ready", "Deleting").message(if remaining.is_empty() {
        "the Hello is being deleted; its Deployment is gone".to_owned()
    } else {
        format!(
            "the Hello is being deleted; waiting for Deployment {} to go",
            remaining.join(", ")
        )
    });
    let spec = valid_spec(parent);
    Answer::new(status(
        req,
        own_deployment(req),
        vec![ready, spec_condition(&spec)],
    ))
    .finalized(remaining.is_empty())
}

/// Every observed Deployment (there is normally one).
fn deployments(req: &Request) -> impl Iterator<Item = &ObservedDeployment> {
    reading::deployments(&req.children)
}

/// The observed Deployment named like the Hello.
fn own_deployment(req: &Request) -> Option<&ObservedDeployment> {
    deployments(req).find(|d| d.metadata.name == req.parent.metadata.name)
}

/// The spec, if it is valid; otherwise every reason it is not, in one line.
fn valid_spec(parent: &Parent<Hello>) -> Result<&HelloSpec, String> {
    checked_spec(parent).map_err(reading::one_line)
}

/// The spec, if it is valid; otherwise every problem with it. What the
/// schema refuses too (`replicas` out of range, an empty image) is checked
/// here for a Hello stored before the schema said so.
fn checked_spec(parent: &Parent<Hello>) -> Result<&HelloSpec, Vec<FieldError>> {
    reading::checked_spec(&parent.spec, |spec| {
        let mut problems = Vec::new();
        if spec.replicas > MAX_REPLICAS {
            problems.push(FieldError::new(
                "spec.replicas",
                format!("greater than {MAX_REPLICAS}"),
            ));
        }
        if spec.replicas < 0 {
            problems.push(FieldError::new("spec.replicas", "less than 0"));
        }
        if spec.image.is_empty() {
            problems.push(FieldError::new("spec.image", "must not be empty"));
        } else if spec.image.chars().any(char::is_whitespace) {
            problems.push(FieldError::new("spec.image", "must not contain whitespace"));
        }
        if parent.metadata.name.len() > MAX_NAME_LEN {
            problems.push(FieldError::new(
                "metadata.name",
                format!("longer than {MAX_NAME_LEN} characters, too long for a label value"),
            ));
        }
        problems
    })
}

/// The `validate` hook: the API server refuses a Hello whose spec `sync`
/// would report invalid, for the same reasons, before it is stored.
pub fn validate(admission: &Admission<Hello>) -> Verdict {
    reading::verdict(admission.object.as_ref().map(checked_spec))
}

fn spec_condition(spec: &Result<&HelloSpec, String>) -> WantedCondition {
    crate::conditions::spec_valid("Hello", spec.as_ref().err().map(String::as_str))
}

fn status(
    req: &Request,
    observed: Option<&ObservedDeployment>,
    wanted: Vec<WantedCondition>,
) -> HelloStatus {
    let counts = observed.map(|d| d.status.clone()).unwrap_or_default();
    HelloStatus {
        observed_generation: None,
        replicas: counts.replicas,
        ready_replicas: counts.ready_replicas,
        available_replicas: counts.available_replicas,
        conditions: req.conditions(wanted),
    }
}

/// The Deployment metahook desires for an observed one it must not change:
/// built from the observed replicas and image, so it equals what was
/// applied before and applying it again is a no-op.
fn held(parent: &Parent<Hello>, observed: &ObservedDeployment) -> Deployment {
    let mut held = deployment(
        parent,
        observed.spec.replicas.unwrap_or(1),
        observed.first_image().unwrap_or(DEFAULT_IMAGE),
    );
    held.metadata.name = Some(observed.metadata.name.clone());
    held
}

/// The labels on the Deployment, its selector and its pods.
pub fn labels(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), name.to_owned()),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            "metahook".to_owned(),
        ),
        (
            "operator.fraim.co.jp/managed-by".to_owned(),
            "metahook".to_owned(),
        ),
    ])
}

fn deployment(parent: &Parent<Hello>, replicas: i32, image: &str) -> Deployment {
    let name = &parent.metadata.name;
    children::deployment(
        name,
        parent.metadata.namespace.as_deref(),
        labels(name),
        replicas,
        Container {
            name: "hello".to_owned(),
            image: Some(image.to_owned()),
            ports: Some(vec![ContainerPort {
                name: Some("http".to_owned()),
                container_port: CONTAINER_PORT,
                protocol: Some("TCP".to_owned()),
                ..ContainerPort::default()
            }]),
            ..Container::default()
        },
    )
}
