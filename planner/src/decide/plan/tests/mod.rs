//! Planner tests: one per rule of docs/metacontroller.md §3 the driver
//! implements, each on small built objects, in a file per part of the plan;
//! `pipeline.rs` feeds the real Hello hook through the planner. The helpers
//! below are the tests' shared vocabulary; the objects come from
//! `test_support/`.

mod children;
mod claim;
mod decorator;
mod desired;
mod finalizer;
mod pipeline;
mod rolling;
mod status;

use super::*;
use crate::config::UpdateStrategy;
use crate::test_support::{Demo, FINALIZER, Obj};
use serde_json::{Value, json};

/// No cached object takes any desired name.
const UNCACHED: &[Vec<Arc<DynamicObject>>] = &[];

/// The plan after the hook, for the common case: nothing related, nothing
/// remembered from an earlier apply.
fn planned(
    ctl: &Driven,
    parent: &DynamicObject,
    observed: &[Vec<Arc<DynamicObject>>],
    response: HookResponse,
) -> Result<Plan, PlanError> {
    after_hook(
        ctl,
        parent,
        observed,
        UNCACHED,
        response,
        &NoMemory,
        StatusPace::Now,
    )
}

/// One pass after the hook, as these tests vary it: nothing cached but
/// the observed children of the first type (none of the second), nothing
/// remembered and the status written at once, unless the test says.
struct Pass<'a> {
    ctl: &'a Driven,
    parent: &'a DynamicObject,
    memory: &'a dyn AppliedMemory,
    pace: StatusPace,
}

impl<'a> Pass<'a> {
    fn new(ctl: &'a Driven, parent: &'a DynamicObject) -> Self {
        Pass {
            ctl,
            parent,
            memory: &NoMemory,
            pace: StatusPace::Now,
        }
    }

    fn remembering(self, memory: &'a dyn AppliedMemory) -> Self {
        Pass { memory, ..self }
    }

    fn at(self, pace: StatusPace) -> Self {
        Pass { pace, ..self }
    }

    /// The plan when the hook answers `response`, `observed` the first
    /// type's children.
    fn plan(&self, observed: Vec<Arc<DynamicObject>>, response: HookResponse) -> Plan {
        after_hook(
            self.ctl,
            self.parent,
            &[observed, vec![]],
            UNCACHED,
            response,
            self.memory,
            self.pace,
        )
        .unwrap()
    }
}

/// The `demo` controller with Deployments (strategy given) and ConfigMaps.
fn controller(strategy: UpdateStrategy, finalize: bool, generate_selector: bool) -> Driven {
    Demo {
        strategy,
        finalize,
        generate_selector,
        config_maps: true,
    }
    .build()
}

/// The plan applies the child `name`, writes the status, and does nothing
/// else.
fn assert_applies_only(plan: &Plan, name: &str) {
    assert_eq!(kinds(&plan.ops), ["ApplyChild", "WriteStatus"]);
    let Op::ApplyChild { name: applied, .. } = &plan.ops[0] else {
        unreachable!()
    };
    assert_eq!(applied, name);
}

fn hello_like() -> Driven {
    controller(UpdateStrategy::InPlace, true, true)
}

/// A child of `p1` under generateSelector.
fn child(name: &str) -> Obj {
    Obj::deployment(name)
        .owned_by("p1")
        .label("controller-uid", "p1")
}

fn desired(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": name}, "spec": {"replicas": replicas}})
}

fn response(children: Vec<Value>) -> HookResponse {
    HookResponse {
        status: Some(serde_json::Map::from_iter([("ok".to_owned(), json!(true))])),
        children,
        ..HookResponse::default()
    }
}

fn kinds(ops: &[Op]) -> Vec<&'static str> {
    ops.iter()
        .map(|op| match op {
            Op::AddFinalizer { .. } => "AddFinalizer",
            Op::RemoveFinalizer { .. } => "RemoveFinalizer",
            Op::VerifyParent => "VerifyParent",
            Op::Adopt { .. } => "Adopt",
            Op::Release { .. } => "Release",
            Op::DeleteChild { .. } => "DeleteChild",
            Op::ApplyChild { .. } => "ApplyChild",
            Op::Revision(RevisionWrite::Create { .. }) => "CreateRevision",
            Op::Revision(RevisionWrite::Update { .. }) => "UpdateRevision",
            Op::Revision(RevisionWrite::Delete { .. }) => "DeleteRevision",
            Op::Revision(RevisionWrite::SetOwners { adopt: true, .. }) => "AdoptRevision",
            Op::Revision(RevisionWrite::SetOwners { adopt: false, .. }) => "ReleaseRevision",
            Op::WriteStatus { .. } => "WriteStatus",
            Op::PatchObject { .. } => "PatchObject",
            Op::Event { .. } => "Event",
        })
        .collect()
}

fn observed_of(p: &Prelude) -> &Vec<Vec<Arc<DynamicObject>>> {
    match &p.next {
        Next::CallHook { observed, .. } => observed,
        Next::Stop => panic!("expected a hook call"),
    }
}

fn hook_of(p: &Prelude) -> HookKind {
    match &p.next {
        Next::CallHook { hook, .. } => *hook,
        Next::Stop => panic!("expected a hook call"),
    }
}
