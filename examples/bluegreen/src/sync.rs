//! The sync hook: the plan ([`crate::plan`]) for what is observed, as
//! objects, and the status saying which color serves.

use crate::children::{self, Parent};
use crate::color::{COLOR_LABEL, Color};
use crate::plan::plan;
use crate::resource::{BlueGreenDeployment, BlueGreenDeploymentStatus, ReplicaCounts};
use crate::template_hash::template_hash;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Service;
use metahook::Answer;
use metahook::SpecError;
use std::fmt;

/// A sync of a BlueGreenDeployment, whose children are a Service and
/// ReplicaSets (in the order of the example's manifest).
pub type Request = metahook::Request<BlueGreenDeployment, (Service, ReplicaSet)>;

/// Why a sync cannot answer: nothing is written, the engine retries and
/// reports the message in a Warning Event.
#[derive(Debug)]
pub enum SyncError {
    /// The spec does not fit the type (the CRD should have refused it).
    Spec(SpecError),
    /// The pod template could not be serialized to be hashed.
    Template(serde_json::Error),
}

impl fmt::Display for SyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncError::Spec(e) => write!(f, "the spec cannot be read: {e}"),
            SyncError::Template(e) => write!(f, "the pod template cannot be hashed: {e}"),
        }
    }
}

impl std::error::Error for SyncError {}

pub fn sync(req: &Request) -> Result<Answer<BlueGreenDeploymentStatus>, SyncError> {
    let spec = req
        .parent
        .spec
        .as_ref()
        .map_err(|e| SyncError::Spec(e.clone()))?;
    let hash = template_hash(&spec.template).map_err(SyncError::Template)?;
    let parent = Parent {
        name: &req.parent.metadata.name,
        namespace: req.parent.metadata.namespace.as_deref(),
        spec,
        hash: &hash,
    };
    let replica_sets = req.children.of::<ReplicaSet>();
    let observed = |color: Color| replica_sets.get(&children::replica_set_name(parent.name, color));
    let plan = plan(spec.replicas, &hash, active_color(req), observed);
    let counts = |color: Color| observed(color).and_then(|rs| rs.status.as_ref());
    let status = BlueGreenDeploymentStatus {
        active_color: Some(plan.serving),
        active: counts(plan.serving).map(ReplicaCounts::from),
        inactive: counts(plan.serving.other()).map(ReplicaCounts::from),
        replicas: Color::BOTH
            .into_iter()
            .filter_map(counts)
            .fold(0, |sum, s| sum.saturating_add(s.replicas)),
        ready_replicas: Color::BOTH
            .into_iter()
            .filter_map(counts)
            .fold(0, |sum, s| {
                sum.saturating_add(s.ready_replicas.unwrap_or(0))
            }),
        observed_generation: None,
    };
    Ok(Answer::new(status)
        .children(
            plan.sets
                .iter()
                .map(|set| children::replica_set(&parent, set)),
        )
        .child(children::service(&parent, plan.serving)))
}

/// The color the Service selects now: the observed Service's selector is
/// what routes traffic; the parent's status stands in while there is no
/// Service (blue for a new parent).
fn active_color(req: &Request) -> Color {
    let Ok(spec) = &req.parent.spec else {
        return Color::Blue;
    };
    let name = children::service_name(&req.parent.metadata.name, spec);
    let selected = req
        .children
        .of::<Service>()
        .get(&name)
        .and_then(|s| s.spec.as_ref()?.selector.as_ref()?.get(COLOR_LABEL))
        .and_then(|c| Color::parse(c));
    selected
        .or_else(|| req.parent.status.as_ref().and_then(|s| s.active_color))
        .unwrap_or(Color::Blue)
}
