//! What one sync decides, before any object is built: which color the
//! Service selects, and for each ReplicaSet which template it runs and how
//! many pods.
//!
//! - Steady (the active ReplicaSet runs the parent's template, or there is
//!   none yet): it runs `replicas` pods, the other none.
//! - Rolling out (the template changed): the other ReplicaSet is given the
//!   new template and `replicas` pods — once it runs none of its old ones,
//!   since a ReplicaSet never replaces the pods it has — while the active
//!   one keeps its template and its pods. When every new pod is available
//!   the Service moves to the new ReplicaSet; the next sync, steady again,
//!   scales the old one to zero.

use crate::color::Color;
use crate::template_hash::TEMPLATE_HASH_ANNOTATION;
use k8s_openapi::api::apps::v1::ReplicaSet;

/// The template a ReplicaSet is given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Template<'a> {
    /// The parent's, as it is now.
    Parent,
    /// The one this observed ReplicaSet runs, unchanged.
    Kept(&'a ReplicaSet),
}

/// One ReplicaSet as desired.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Set<'a> {
    pub color: Color,
    pub template: Template<'a>,
    pub replicas: i32,
}

/// The whole decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan<'a> {
    /// The color the Service selects.
    pub serving: Color,
    /// Blue, then green.
    pub sets: [Set<'a>; 2],
}

/// The decision, given the parent's `replicas` and template hash, the
/// color the Service selects now, and the observed ReplicaSet of each
/// color.
pub fn plan<'a>(
    replicas: i32,
    hash: &str,
    active: Color,
    observed: impl Fn(Color) -> Option<&'a ReplicaSet>,
) -> Plan<'a> {
    let current = observed(active);
    let steady = current.is_none_or(|rs| runs(rs, hash));
    let (serving, active_set, other_set) = if steady {
        let other = observed(active.other()).map_or(Template::Parent, Template::Kept);
        (
            active,
            Set {
                color: active,
                template: Template::Parent,
                replicas,
            },
            Set {
                color: active.other(),
                template: other,
                replicas: 0,
            },
        )
    } else {
        let next = active.other();
        let candidate = observed(next);
        let (template, next_replicas) = match candidate {
            Some(rs) if !runs(rs, hash) && !drained(rs) => (Template::Kept(rs), 0),
            _ => (Template::Parent, replicas),
        };
        let ready = candidate.is_some_and(|rs| runs(rs, hash) && available(rs, replicas));
        (
            if ready { next } else { active },
            Set {
                color: active,
                template: current.map_or(Template::Parent, Template::Kept),
                replicas,
            },
            Set {
                color: next,
                template,
                replicas: next_replicas,
            },
        )
    };
    let sets = if active_set.color == Color::Blue {
        [active_set, other_set]
    } else {
        [other_set, active_set]
    };
    Plan { serving, sets }
}

/// Whether `rs` was given the template whose hash is `hash`.
pub fn runs(rs: &ReplicaSet, hash: &str) -> bool {
    annotation(rs, TEMPLATE_HASH_ANNOTATION) == Some(hash)
}

fn annotation<'a>(rs: &'a ReplicaSet, key: &str) -> Option<&'a str> {
    rs.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// Whether the ReplicaSet controller has seen `rs`'s latest spec.
fn observed_current(rs: &ReplicaSet) -> bool {
    let seen = rs.status.as_ref().and_then(|s| s.observed_generation);
    seen.is_some() && seen >= rs.metadata.generation
}

/// Whether `rs` asks for no pod and runs none.
fn drained(rs: &ReplicaSet) -> bool {
    let asked = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let running = rs.status.as_ref().map_or(0, |s| s.replicas);
    asked == 0 && running == 0 && observed_current(rs)
}

/// Whether `rs` asks for `replicas` pods and all of them are available.
fn available(rs: &ReplicaSet, replicas: i32) -> bool {
    let asked = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let Some(status) = &rs.status else {
        return false;
    };
    asked == replicas
        && observed_current(rs)
        && status.replicas == replicas
        && status.ready_replicas.unwrap_or(0) == replicas
        && status.available_replicas.unwrap_or(0) == replicas
}

#[cfg(test)]
mod tests;
