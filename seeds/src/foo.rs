//! The Foo controller (after the Kubernetes sample-controller): a `Foo`
//! runs one Deployment of `nginx:latest`, named `spec.deploymentName` and
//! scaled to `spec.replicas`, and refuses to touch a Deployment of that name
//! that it does not control.
//!
//! - customize: ask for the Deployment named `spec.deploymentName` in the
//!   Foo's namespace as a related object. Related objects arrive whoever owns
//!   them; `children` only ever holds what this Foo controls, so this is how
//!   sync sees a same-named Deployment that belongs to someone else.
//! - sync: desire that Deployment (labels `app: nginx`, `controller: <foo>`);
//!   report `availableReplicas` from the *observed* one, a `Ready` condition
//!   and a `SpecValid` condition.
//! - a Deployment of that name exists and its controller owner reference is
//!   not this Foo: desire nothing in its place, so Metacontroller never
//!   touches it, and say so: `Ready=False`, reason `ErrResourceExists`, the
//!   sample-controller's message.
//! - invalid spec (an empty or malformed `deploymentName`, negative
//!   `replicas`, a spec that does not parse): create nothing;
//!   `SpecValid=False`, reason `InvalidSpec`.
//! - in both of those cases every Deployment the Foo already runs is held
//!   exactly as it is: nothing is deleted or changed until the Foo can be
//!   reconciled again.
//! - renaming (`spec.deploymentName` changed): the new Deployment is desired
//!   and the old one is not, so Metacontroller creates the new one and deletes
//!   the old one in the same reconcile. It is a replacement, not a hand-over:
//!   the old pods stop while the new ones start. If the new name is taken by a
//!   Deployment the Foo does not control, the old one is held instead.
//! - default: a Foo without `spec.deploymentName` gets its own name there,
//!   at admission ([`defaults`]); one stored without it is invalid.
//! - versions: `v1alpha1` is the hub (what the hooks read, what is stored);
//!   `v1` ([`v1`]) puts the Deployment's name and replicas under
//!   `spec.deployment`, converted by the `convert` hook.

use crate::children;
use crate::deployment::ObservedDeployment;
use crate::reading;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Container;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResource, CustomResourceExt};
use metahook_core::admission::{Admission, FieldError, Verdict};
use metahook_core::conditions::{WantedCondition, condition_false};
use metahook_core::protocol::RelatedResourceRule;
use metahook_core::{Answer, Controller, Customize, CustomizeAnswer, Parent, ParentMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The sample-controller's image.
pub const IMAGE: &str = "nginx:latest";
/// What a Deployment runs when `spec.replicas` is absent (the API default).
pub const DEFAULT_REPLICAS: i32 = 1;
pub use metahook_core::names::{DNS_SUBDOMAIN_MAX_LEN, DNS_SUBDOMAIN_PATTERN, check_dns_subdomain};
/// The sample-controller's reason for a Deployment the Foo does not control.
pub const ERR_RESOURCE_EXISTS: &str = "ErrResourceExists";
/// The Foo's name is the `controller` label's value, and label values are at
/// most 63 characters.
const MAX_LABEL_VALUE_LEN: usize = 63;

/// A Foo runs `replicas` copies of nginx in the Deployment it names.
// Each `printcolumn(...)` repeats the same keys; clippy reads that as a
// duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "samplecontroller.k8s.io",
    version = "v1alpha1",
    kind = "Foo",
    singular = "foo",
    plural = "foos",
    category = "metahook",
    namespaced,
    status = "FooStatus",
    // `*.k8s.io` groups are reserved for APIs reviewed by Kubernetes; the
    // API server refuses a CRD in one without this annotation. The
    // sample-controller says the same ("unapproved": not reviewed).
    annotation(
        "api-approved.kubernetes.io",
        "unapproved, experimental-only; the group of kubernetes/sample-controller's example"
    ),
    doc = "A Foo runs spec.replicas copies of nginx in the Deployment named spec.deploymentName.",
    printcolumn(
        name = "Deployment",
        type_ = "string",
        json_path = ".spec.deploymentName"
    ),
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
pub struct FooSpec {
    /// The name of the Deployment the Foo runs (a DNS-1123 subdomain). A
    /// Deployment of this name that the Foo does not control is left alone
    /// and reported. Changing it replaces the old Deployment with a new one.
    /// Absent, it is set to the Foo's own name at admission (where the
    /// admission webhooks are installed); a Foo stored without it is
    /// reported invalid, as the sample-controller does.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(min = 1, max = 253), pattern(DNS_SUBDOMAIN_PATTERN))]
    pub deployment_name: String,
    /// How many pods the Deployment runs; 1 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub replicas: Option<i32>,
}

pub type FooParent = Parent<Foo>;
/// Children and related objects are both Deployments.
pub type Request = metahook_core::Request<Foo, ObservedDeployment, ObservedDeployment>;

pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![Foo::crd()]
}

/// The Foo controller, declared.
pub fn controller() -> Controller {
    Controller::composite::<Foo>("foo")
        .revision(env!("CARGO_PKG_VERSION"))
        .customize(customize)
        .sync(sync)
        .validate(validate)
        .defaults(defaults)
        .version::<v1::Foo>()
        .build()
}

/// Asks for the Deployment named `spec.deploymentName` in the Foo's
/// namespace. The namespace is always given: a v2 rule without one would look
/// in every namespace, and a v1 rule may name no other
/// (docs/metacontroller.md §1.6), so the rule means the same under both. An
/// invalid spec asks for nothing: sync then creates nothing and needs no
/// related object.
pub fn customize(req: &Customize<Foo>) -> CustomizeAnswer {
    let parent = &req.parent;
    let related_resources = match (valid_spec(parent), &parent.metadata.namespace) {
        (Ok(spec), Some(namespace)) => vec![
            RelatedResourceRule::of::<Deployment>()
                .in_namespace(namespace.clone())
                .named([spec.deployment_name.clone()]),
        ],
        _ => Vec::new(),
    };
    CustomizeAnswer::rules(related_resources)
}

pub fn sync(req: &Request) -> Answer<FooStatus> {
    let parent = &req.parent;
    let (children, counted, wanted) = match decide(req) {
        Ok(run) => (
            vec![deployment(parent, run.name, run.replicas, IMAGE)],
            run.observed.into_iter().collect(),
            vec![
                crate::conditions::deployment_ready(
                    run.observed,
                    run.replicas,
                    Some(&format!("Deployment \"{}\"", run.name)),
                ),
                crate::conditions::spec_valid("Foo", None),
            ],
        ),
        Err(blocked) => {
            // Hold what exists, create nothing: see the module documentation.
            let kept: Vec<&ObservedDeployment> = deployments(req).collect();
            let children = kept.iter().map(|d| held(parent, d)).collect();
            let wanted = blocked.conditions(&kept);
            (children, kept, wanted)
        }
    };
    Answer::new(status(req, &counted, wanted)).children::<Vec<Deployment>>(children)
}

/// The Deployment a sync desires, when it may desire one.
struct Run<'a> {
    name: &'a str,
    replicas: i32,
    /// The observed child of that name, if it exists yet.
    observed: Option<&'a ObservedDeployment>,
}

/// Why a sync desires no new Deployment and holds the ones it has.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Blocked {
    /// Every reason the spec is invalid, in one line.
    InvalidSpec(String),
    /// A Deployment of this name exists and this Foo does not control it.
    ResourceExists(String),
}

impl Blocked {
    /// `Ready` and `SpecValid` while blocked; `kept` are the held Deployments.
    fn conditions(&self, kept: &[&ObservedDeployment]) -> Vec<WantedCondition> {
        match self {
            Blocked::InvalidSpec(why) => {
                let kept = match kept_names(kept) {
                    Some(names) => format!("Deployment {names} is kept as it is"),
                    None => "no Deployment is created".to_owned(),
                };
                vec![
                    condition_false("Ready", "InvalidSpec")
                        .message(format!("{kept} while the spec is invalid")),
                    crate::conditions::spec_valid("Foo", Some(why.as_str())),
                ]
            }
            Blocked::ResourceExists(name) => vec![
                condition_false("Ready", ERR_RESOURCE_EXISTS)
                    .message(message_resource_exists(name)),
                crate::conditions::spec_valid("Foo", None),
            ],
        }
    }
}

/// The sample-controller's `MessageResourceExists`.
pub fn message_resource_exists(name: &str) -> String {
    format!("Resource \"{name}\" already exists and is not managed by Foo")
}

/// `"a", "b"`, or `None` when there are none.
fn kept_names(kept: &[&ObservedDeployment]) -> Option<String> {
    let names: Vec<String> = kept
        .iter()
        .map(|d| format!("\"{}\"", d.metadata.name))
        .collect();
    (!names.is_empty()).then(|| names.join(", "))
}

fn decide(req: &Request) -> Result<Run<'_>, Blocked> {
    let parent = &req.parent;
    let spec = valid_spec(parent).map_err(Blocked::InvalidSpec)?;
    let name = spec.deployment_name.as_str();
    if let Some(foreign) = req
        .related
        .of::<ObservedDeployment>()
        .iter()
        .find(|d| is_foreign(parent, d, name))
    {
        return Err(Blocked::ResourceExists(foreign.metadata.name.clone()));
    }
    Ok(Run {
        name,
        replicas: spec.replicas.unwrap_or(DEFAULT_REPLICAS),
        observed: deployments(req).find(|d| d.metadata.name == name),
    })
}

/// A related object in the Foo's way: named like the Deployment the Foo
/// wants, in its namespace, and not controlled by this Foo (owned by nothing,
/// or by another controller). Related objects are only what customize asked
/// for, so their kind is not checked: when in doubt, refuse.
fn is_foreign(parent: &FooParent, related: &ObservedDeployment, name: &str) -> bool {
    related.metadata.name == name
        && related
            .metadata
            .namespace
            .as_deref()
            .is_none_or(|ns| Some(ns) == parent.metadata.namespace.as_deref())
        && !related
            .metadata
            .is_controlled_by(parent.metadata.uid.as_deref())
}

/// Every observed child Deployment; normally at most one.
fn deployments(req: &Request) -> impl Iterator<Item = &ObservedDeployment> {
    reading::deployments(&req.children)
}

/// The spec, if it is valid; otherwise every reason it is not, in one line.
fn valid_spec(parent: &FooParent) -> Result<&FooSpec, String> {
    checked_spec(parent).map_err(reading::one_line)
}

/// The spec, if it is valid; otherwise every problem with it.
fn checked_spec(parent: &FooParent) -> Result<&FooSpec, Vec<FieldError>> {
    reading::checked_spec(&parent.spec, |spec| {
        let mut problems = Vec::new();
        if let Err(why) = check_dns_subdomain(&spec.deployment_name) {
            problems.push(FieldError::new("spec.deploymentName", why));
        }
        if spec.replicas.is_some_and(|r| r < 0) {
            problems.push(FieldError::new("spec.replicas", "less than 0"));
        }
        if parent.metadata.name.len() > MAX_LABEL_VALUE_LEN {
            problems.push(FieldError::new(
                "metadata.name",
                format!(
                    "longer than {MAX_LABEL_VALUE_LEN} characters, too long for the controller label"
                ),
            ));
        }
        if parent.metadata.namespace.is_none() {
            problems.push(FieldError::new(
                "metadata.namespace",
                "missing; a Foo is namespaced",
            ));
        }
        problems
    })
}

/// The `validate` hook: the API server refuses a Foo whose spec `sync`
/// would report invalid, for the same reasons, and warns the client that
/// a new `deploymentName` replaces the running Deployment (its pods stop
/// while the new ones start).
pub fn validate(admission: &Admission<Foo>) -> Verdict {
    let verdict = reading::verdict(admission.object.as_ref().map(checked_spec));
    let name = |parent: &Option<FooParent>| {
        parent
            .as_ref()
            .and_then(|f| f.spec.as_ref().ok())
            .map(|s| s.deployment_name.clone())
    };
    match (name(&admission.old), name(&admission.object)) {
        (Some(old), Some(new)) if old != new => verdict.warn(message_replaces(&old, &new)),
        _ => verdict,
    }
}

/// The `default` hook: a Foo created (or changed) without a
/// `deploymentName` runs a Deployment named after itself (a schema's
/// `default` cannot name the object). A Foo made with `generateName` has
/// no name yet when this is asked, and is refused by `validate` instead.
pub fn defaults(meta: &ParentMeta, spec: &mut FooSpec) {
    if spec.deployment_name.is_empty() {
        spec.deployment_name.clone_from(&meta.name);
    }
}

/// The warning a change of `deploymentName` gets at admission.
pub fn message_replaces(old: &str, new: &str) -> String {
    format!(
        "spec.deploymentName: changing it from {old:?} to {new:?} replaces Deployment {old} with a new one: its pods stop while the new ones start"
    )
}

/// `counted` are the Deployments whose pods the status reports: the one the
/// spec names, or the held ones.
fn status(
    req: &Request,
    counted: &[&ObservedDeployment],
    wanted: Vec<WantedCondition>,
) -> FooStatus {
    FooStatus {
        observed_generation: None,
        available_replicas: counted
            .iter()
            .fold(0, |sum, d| sum.saturating_add(d.status.available_replicas)),
        conditions: req.conditions(wanted),
    }
}

/// The Deployment desired for an observed one that must not change: rebuilt
/// from the observed name, replicas and image, so it equals what was applied
/// before and applying it again is a no-op.
fn held(parent: &FooParent, observed: &ObservedDeployment) -> Deployment {
    deployment(
        parent,
        &observed.metadata.name,
        observed.replicas(),
        observed.first_image().unwrap_or(IMAGE),
    )
}

/// The sample-controller's labels, on the Deployment, its selector and its pods.
pub fn labels(foo_name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app".to_owned(), "nginx".to_owned()),
        ("controller".to_owned(), foo_name.to_owned()),
    ])
}

/// The sample-controller's `newDeployment`. The controller owner reference
/// and the `controller-uid` label are Metacontroller's to add.
fn deployment(parent: &FooParent, name: &str, replicas: i32, image: &str) -> Deployment {
    children::deployment(
        name,
        parent.metadata.namespace.as_deref(),
        labels(&parent.metadata.name),
        replicas,
        Container {
            name: "nginx".to_owned(),
            image: Some(image.to_owned()),
            ..Container::default()
        },
    )
}

mod convert;
mod status;
pub mod v1;

pub use status::FooStatus;

#[cfg(test)]
mod tests;
