//! What a rollout waits on: the children the latest revision claims are
//! there, as it wants them, have seen their latest spec
//! (`RollingInPlace`) and pass their status checks; only then does the
//! next child move.

use super::history::Revision;
use crate::config::{ConditionCheck, UpdateStrategy, UpdateStrategyExt};
use crate::decide::model::Driven;
use crate::decide::plan::apply::{apply_body, with_fingerprint};
use crate::decide::plan::compare::as_desired;
use crate::decide::plan::desired::check_desired;
use crate::wire::{HookResponse, object_json};
use kube::core::DynamicObject;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A child of a rolling type, as `(apiGroup, kind, name)`.
pub(super) type ChildKey = (String, String, String);

/// A rolling child type's strategy and status checks, by group and kind.
pub(super) fn strategy<'a>(
    ctl: &'a Driven,
    group: &str,
    kind: &str,
) -> Option<(UpdateStrategy, &'a [ConditionCheck])> {
    ctl.children
        .iter()
        .zip(&ctl.config.children)
        .find(|(t, _)| t.resource.api.group == group && t.resource.api.kind == kind)
        .filter(|(t, _)| t.strategy.is_rolling())
        .map(|(t, c)| (t.strategy, c.status_checks.as_slice()))
}

/// The observed child of this group, kind and name.
pub(super) fn find<'a>(
    ctl: &Driven,
    observed: &'a [Vec<Arc<DynamicObject>>],
    group: &str,
    kind: &str,
    name: &str,
) -> Option<&'a DynamicObject> {
    ctl.children
        .iter()
        .zip(observed)
        .filter(|(t, _)| t.resource.api.group == group && t.resource.api.kind == kind)
        .flat_map(|(_, objs)| objs.iter())
        .find(|o| o.metadata.name.as_deref() == Some(name))
        .map(Arc::as_ref)
}

/// The latest revision's children as the plan applies them (defaulted)
/// with the fingerprint each apply carries, by child: to tell whether an
/// observed child already is what the latest revision wants.
pub(super) struct Latest(BTreeMap<ChildKey, (Value, u64)>);

impl Latest {
    pub(super) fn new(ctl: &Driven, parent: &DynamicObject, answer: &HookResponse) -> Self {
        // An answer the plan refuses leaves nothing to compare: no child is
        // as it wants (and the plan fails later, naming the problem). Keyed
        // by child, not by the answer's index: of two with one name the
        // later counts, so the checked list can be shorter.
        let checked = check_desired(ctl, parent, &answer.children).unwrap_or_default();
        Latest(
            checked
                .into_iter()
                .map(|d| {
                    let api = &ctl.children[d.type_index].resource.api;
                    let (_, fingerprint) = with_fingerprint(apply_body(ctl, parent, &d.object));
                    let key = (api.group.clone(), api.kind.clone(), d.name);
                    (key, (d.object, fingerprint))
                })
                .collect(),
        )
    }

    /// Whether `obs` (`live` as JSON) is what the latest revision wants of
    /// child `key`.
    pub(super) fn has(&self, key: &ChildKey, obs: &DynamicObject, live: &Value) -> bool {
        self.0
            .get(key)
            .is_some_and(|(object, fingerprint)| as_desired(obs, live, *fingerprint, object))
    }
}

/// Whether every child the latest revision claims is there, as it wants
/// it, has seen its latest spec (`RollingInPlace`, when it says) and
/// passes its status checks; if not, why.
pub(super) fn all_well(
    ctl: &Driven,
    latest: &Revision,
    wanted: &Latest,
    observed: &[Vec<Arc<DynamicObject>>],
) -> Result<(), String> {
    for claims in &latest.children {
        let (group, kind) = (&claims.api_group, &claims.kind);
        let Some((method, checks)) = strategy(ctl, group, kind) else {
            continue;
        };
        for name in &claims.names {
            let Some(child) = find(ctl, observed, group, kind, name) else {
                return Err(format!("missing child {kind} {name}"));
            };
            let live = object_json(child);
            let key = (group.clone(), kind.clone(), name.clone());
            if !wanted.has(&key, child, &live) {
                return Err(format!("child {kind} {name} is not updated yet"));
            }
            if method == UpdateStrategy::RollingInPlace {
                // Only a child that reports observedGeneration is held to it.
                let seen = live
                    .pointer("/status/observedGeneration")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                if seen > 0 && seen < child.metadata.generation.unwrap_or(0) {
                    return Err(format!(
                        "child {kind} {name} with RollingInPlace update strategy hasn't observed latest spec"
                    ));
                }
            }
            status_checks(checks, &live)
                .map_err(|why| format!("child {kind} {name} failed status check: {why}"))?;
        }
    }
    Ok(())
}

/// `statusChecks.conditions`, each against the child's `status.conditions`.
fn status_checks(checks: &[ConditionCheck], child: &Value) -> Result<(), String> {
    let conditions = child
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for check in checks {
        let field = |c: &Value, key: &str| c.get(key).and_then(Value::as_str).map(str::to_owned);
        let Some(found) = conditions
            .iter()
            .find(|c| field(c, "type").as_deref() == Some(check.type_.as_str()))
        else {
            return Err(format!(
                "required condition type missing: {:?}",
                check.type_
            ));
        };
        for (key, want) in [("status", &check.status), ("reason", &check.reason)] {
            let Some(want) = want else { continue };
            let got = field(found, key).unwrap_or_default();
            if &got != want {
                return Err(format!(
                    "{:?} condition {key} is {got:?} (want {want:?})",
                    check.type_
                ));
            }
        }
    }
    Ok(())
}
