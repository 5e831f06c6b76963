//! What the driver holds for each parent and child, structure by structure,
//! as heap bytes counted by dhat's allocator (exact, not sampled: the same
//! on a busy machine as on a quiet one), for N Hellos and their Deployments
//! as the API server sends them (`fixtures/hello/ready.json` without
//! `managedFields`, each with a name and UID of its own). Prints the table
//! docs/performance.md ("Memory") quotes and fails when a structure grows
//! past the budget stated there. One test in this file: dhat counts every
//! thread's allocations, so nothing else may run beside it.

#![forbid(unsafe_code)]

use kube::api::DynamicObject;
use kube::runtime::reflector::ObjectRef;
use metahook_driver::controller::cache::{CachedObject, SharedType, TypeCache};
use metahook_driver::decide::model::ResolvedType;
use metahook_driver::observe::records::{
    ChildCount, Condition, Outcome, ParentRef, Record, Records, Requeue,
};
use metahook_driver::write::memory::ApplyMemory;
use serde_json::Value;
use std::time::Duration;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const N: usize = 1_000;

/// The budget per parent (or per child), in bytes, of each structure:
/// a Hello and its Deployment as the caches hold them (object and
/// bookkeeping: store entry, key, owners index), a record, a last apply.
const CACHED_PAIR: u64 = 8_000;
const RECORD: u64 = 1_280;
const APPLIED: u64 = 400;

fn heap() -> u64 {
    dhat::HeapStats::get().curr_bytes as u64
}

/// The fixture's parent and child, the `i`th of each: own names and UIDs,
/// the child controlled by the parent.
fn pair(fixture: &Value, i: usize) -> (DynamicObject, DynamicObject) {
    let mut parent = fixture["parent"].clone();
    let mut child = fixture["children"]["Deployment.apps/v1"]["default/hello"].clone();
    let (name, uid) = (
        format!("hello-{i}"),
        format!("3f1b6c7e-2a4d-4c8e-9b1f-{i:012}"),
    );
    parent["metadata"]["name"] = name.clone().into();
    parent["metadata"]["uid"] = uid.clone().into();
    child["metadata"]["name"] = name.into();
    child["metadata"]["uid"] = format!("9a8b7c6d-5e4f-4a3b-8c2d-{i:012}").into();
    child["metadata"]["labels"]["controller-uid"] = uid.clone().into();
    child["metadata"]["ownerReferences"][0]["uid"] = uid.into();
    for obj in [&mut parent, &mut child] {
        if let Some(meta) = obj["metadata"].as_object_mut() {
            meta.remove("managedFields");
        }
    }
    let decode = |v: Value| serde_json::from_value::<DynamicObject>(v).expect("an object");
    (decode(parent), decode(child))
}

fn record(parent: &DynamicObject) -> Record {
    Record {
        controller: "hello".to_owned(),
        parent: ParentRef {
            api_version: "fraim.co.jp/v1".to_owned(),
            kind: "Hello".to_owned(),
            namespace: parent.metadata.namespace.clone(),
            name: parent.metadata.name.clone().unwrap_or_default(),
            uid: parent.metadata.uid.clone().unwrap_or_default(),
            generation: parent.metadata.generation,
            labels: parent.metadata.labels.clone().unwrap_or_default(),
        },
        last_run: "2026-11-27T12:00:00.123456789Z".to_owned(),
        outcome: Outcome::Unchanged,
        duration_seconds: 0.001,
        hook_seconds: Some(0.0005),
        plan: Vec::new(),
        error: None,
        requeue: Some(Requeue::new(Duration::from_secs(1800), "resync")),
        children: ChildCount {
            desired: Some(1),
            observed: 1,
        },
        conditions: Condition::read(parent.data["status"].get("conditions")),
        trace_id: None,
        revision: Some("0.1.0".to_owned()),
    }
}

fn per(bytes: u64) -> u64 {
    bytes / N as u64
}

#[test]
fn each_structure_kept_per_parent_stays_within_its_budget() {
    let fixture: Value =
        serde_json::from_slice(include_bytes!("../../fixtures/hello/ready.json")).expect("JSON");
    let _profiler = dhat::Profiler::builder().testing().build();

    let (parents, children): (Vec<_>, Vec<_>) = (0..N).map(|i| pair(&fixture, i)).unzip();
    let json_bytes = |objects: &[DynamicObject]| {
        objects
            .iter()
            .map(|o| serde_json::to_vec(o).map_or(0, |v| v.len() as u64))
            .sum::<u64>()
    };
    let (parent_json, child_json) = (json_bytes(&parents), json_bytes(&children));
    let statuses: Vec<(String, Value)> = parents
        .iter()
        .map(|p| {
            (
                p.metadata.uid.clone().unwrap_or_default(),
                p.data["status"].clone(),
            )
        })
        .collect();
    let for_records = parents.clone();
    let keys: Vec<_> = parents
        .iter()
        .map(|p| {
            ObjectRef::<CachedObject>::new_with(
                p.metadata.name.as_deref().unwrap_or_default(),
                SharedType::of(
                    &ResolvedType::new("fraim.co.jp", "v1", "Hello", "helloes", true).api,
                ),
            )
            .within("default")
        })
        .collect();
    let applied: Vec<DynamicObject> = children.clone();

    // The caches: what grows is the cached objects and their bookkeeping
    // (the decoded objects they are filled from stay where they are).
    let hello = ResolvedType::new("fraim.co.jp", "v1", "Hello", "helloes", true);
    let deployment = ResolvedType::new("apps", "v1", "Deployment", "deployments", true);
    let before = heap();
    let parent_cache = TypeCache::filled(&hello, &parents);
    let parents_held = heap().saturating_sub(before);
    let before = heap();
    let child_cache = TypeCache::filled(&deployment, &children);
    let children_held = heap().saturating_sub(before);
    drop((parents, children));
    // The same objects decoded, as the caches held them before: the
    // comparison the table shows.
    let before = heap();
    let bare: Vec<_> = (0..N).map(|i| pair(&fixture, i)).collect();
    let bare_pairs = heap().saturating_sub(before);
    drop(bare);

    // A record per parent, as a reconcile leaves it.
    let before = heap();
    let records = Records::default();
    for (key, parent) in keys.iter().zip(&for_records) {
        records.put(key, record(parent));
    }
    let records_held = heap().saturating_sub(before);

    // What the executor remembers: an apply per child, the status written
    // per parent until the cache shows it.
    let memory = ApplyMemory::new();
    let before = heap();
    for (i, child) in applied.iter().enumerate() {
        memory.record(0, Some("default"), &format!("hello-{i}"), 7, child);
    }
    let applied_held = heap().saturating_sub(before);
    let before = heap();
    for (uid, status) in &statuses {
        memory.record_status(uid, "4007", status.clone());
    }
    let statuses_held = heap().saturating_sub(before);
    for (uid, _) in &statuses {
        memory.parent_seen(uid, "4008");
    }
    let statuses_after_seen = heap().saturating_sub(before);

    println!("Per parent+child pair, N = {N} Hellos and their Deployments:");
    println!("| what | bytes per parent |");
    println!("|---|---|");
    println!(
        "| JSON as sent, no managedFields (Hello + Deployment) | {} + {} |",
        per(parent_json),
        per(child_json)
    );
    println!(
        "| the same decoded as `DynamicObject`s (Hello + Deployment), for comparison | {} |",
        per(bare_pairs)
    );
    println!(
        "| the caches, objects and bookkeeping (store entry, key, owners index): Hello + Deployment | {} + {} |",
        per(parents_held),
        per(children_held)
    );
    println!(
        "| record (`/debug/driver/reconciles`) | {} |",
        per(records_held)
    );
    println!("| last apply per child | {} |", per(applied_held));
    println!(
        "| status written, until the cache shows it | {} (then {}) |",
        per(statuses_held),
        per(statuses_after_seen)
    );

    assert!(
        per(parents_held + children_held) <= CACHED_PAIR,
        "a cached Hello and Deployment: {} + {} bytes",
        per(parents_held),
        per(children_held)
    );
    assert!(
        per(records_held) <= RECORD,
        "a record: {} bytes",
        per(records_held)
    );
    assert!(
        per(applied_held) <= APPLIED,
        "a last apply: {} bytes",
        per(applied_held)
    );
    assert!(
        statuses_after_seen < statuses_held / 100,
        "a written status is dropped once the cache shows a later version: {statuses_after_seen} of {statuses_held} bytes kept"
    );
    assert_eq!(
        child_cache.candidates(Some("default"), "none").len(),
        0,
        "every Deployment has its controller"
    );
    assert_eq!(
        parent_cache.candidates(Some("default"), "none").len(),
        N,
        "no Hello has one"
    );
    assert_eq!(
        child_cache
            .candidates(Some("default"), "3f1b6c7e-2a4d-4c8e-9b1f-000000000007")
            .len(),
        1,
        "the index finds a parent's child"
    );
}
