//! The children's writes: observed children not desired are deleted, then
//! each desired child is created, or updated per its type's update strategy
//! (docs/metacontroller.md §3.3 step 11).

use super::applied::AppliedMemory;
use super::apply::{apply_body, with_fingerprint};
use super::compare::{as_desired, carries, contains, still_as_applied};
use super::desired::Desired;
use super::existing::Existing;
use super::finalizer::is_deleting;
use super::op::{DeleteReason, EventType, Op, Written, target};
use crate::config::UpdateStrategy;
use crate::decide::model::Driven;
use crate::wire::object_json;
use kube::core::DynamicObject;
use std::sync::Arc;

/// Plans the children's writes into `ops`; says whether a child's content
/// changes (one created, updated or recreated: what the parent's summary
/// condition then catches up with), an apply that only refreshes our
/// bookkeeping annotation aside.
pub(super) fn manage_children(
    ctl: &Driven,
    parent: &DynamicObject,
    observed: &[Vec<Arc<DynamicObject>>],
    existing: &(impl Existing + ?Sized),
    desired: &[Desired],
    memory: &dyn AppliedMemory,
    ops: &mut Vec<Op>,
) -> bool {
    let mut content_changes = false;
    let same = |d: &Desired, type_index: usize, obj: &DynamicObject| {
        d.type_index == type_index
            && d.namespace.as_deref()
                == obj
                    .metadata
                    .namespace
                    .as_deref()
                    .filter(|ns| !ns.is_empty())
            && Some(d.name.as_str()) == obj.metadata.name.as_deref()
    };
    // Deletes first, then applies, as Metacontroller orders them.
    for (type_index, objects) in observed.iter().enumerate() {
        for obj in objects {
            if is_deleting(obj) {
                continue;
            }
            if !desired.iter().any(|d| same(d, type_index, obj)) {
                ops.push(Op::DeleteChild {
                    child: target(type_index, obj),
                    reason: DeleteReason::NotDesired,
                });
            }
        }
    }
    for d in desired {
        let found = observed
            .get(d.type_index)
            .and_then(|objs| objs.iter().find(|o| same(d, d.type_index, o)));
        let (body, fingerprint) = with_fingerprint(apply_body(ctl, parent, &d.object));
        let apply = |body| Op::ApplyChild {
            type_index: d.type_index,
            namespace: d.namespace.clone(),
            name: d.name.clone(),
            body,
            fingerprint,
        };
        let Some(obs) = found else {
            // An apply would take over an object that is not ours.
            let taken = existing.holds(d.type_index, d.namespace.as_deref(), &d.name);
            if taken {
                continue;
            }
            // Just created by us, not in the cache yet: its event will
            // queue the parent again.
            if !memory.on_its_way(d.type_index, d.namespace.as_deref(), &d.name, fingerprint) {
                ops.push(apply(body));
            }
            content_changes = true;
            continue;
        };
        if is_deleting(obs) {
            continue;
        }
        // What this process applied last, or else (a restart, a new
        // leader) what the child says was applied last.
        let remembered = memory
            .applied(d.type_index, d.namespace.as_deref(), &d.name)
            .is_some_and(|a| still_as_applied(&a, fingerprint, obs));
        if remembered {
            continue;
        }
        // The live child as JSON, once: both checks below read it.
        let live = object_json(obs);
        if carries(obs, &live, fingerprint, &body) {
            continue;
        }
        // Whether the child itself changes (not only our bookkeeping
        // annotation): what an Event tells people.
        let differs = || !contains(&live, &d.object);
        let kind = &ctl.children[d.type_index].resource.api.kind;
        match ctl.children[d.type_index].strategy {
            UpdateStrategy::OnDelete => {}
            // A rolling child differs only once its revision wants it to
            // (plan/rolling/ replaced the desired object otherwise).
            UpdateStrategy::InPlace | UpdateStrategy::RollingInPlace => {
                if differs() {
                    ops.push(updated(kind, d.type_index, &d.name, "updated"));
                    content_changes = true;
                }
                ops.push(apply(body));
            }
            UpdateStrategy::Recreate | UpdateStrategy::RollingRecreate => {
                // What we applied, with only what the API server added
                // (a Pod's token volume): not a difference worth a delete.
                if !as_desired(obs, &live, fingerprint, &d.object) {
                    content_changes = true;
                    ops.push(Op::DeleteChild {
                        child: target(d.type_index, obs),
                        reason: DeleteReason::Recreate,
                    });
                    ops.push(updated(
                        kind,
                        d.type_index,
                        &d.name,
                        "deleted to be recreated",
                    ));
                }
            }
        }
    }
    content_changes
}

/// A Normal Event: an existing child changed because the hook's answer did.
/// A child created for a new parent is the expected path and gets none.
fn updated(kind: &str, type_index: usize, name: &str, what: &str) -> Op {
    Op::Event {
        kind: EventType::Normal,
        reason: "Updated".to_owned(),
        note: format!("{kind} {name} {what}"),
        after: Some(Written::Child {
            type_index,
            name: name.to_owned(),
        }),
    }
}
