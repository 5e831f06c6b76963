//! The cache's share of the driver's CPU, per parent, for
//! `bench/driver-callgrind.sh` (which counts its instructions under
//! callgrind): N Hellos and their Deployments, from
//! `fixtures/hello/ready.json` with their `managedFields`, as watch events
//! bring them, each
//!
//! 1. decoded into the cache (a watch event each),
//! 2. read by the parent's reconcile as the planner and the hooks read it,
//! 3. sent to the sync hook (the request body built from them),
//!
//! held either as `DynamicObject`s (`decoded`: the driver's caches before
//! `CachedObject`), as the caches hold them now (`compact`), or not at all
//! (`none`: the fixture alone, the baseline to subtract). `events` stops
//! after step 1, `reconcile` goes through step 3.
//!
//!   cache_cost decoded|compact|none events|reconcile N

#![forbid(unsafe_code)]

use kube::api::DynamicObject;
use metahook_driver::config::HookVersion;
use metahook_driver::controller::cache::CachedObject;
use metahook_driver::decide::model::ResolvedType;
use metahook_driver::hook::wire::{self, TypedObjects};
use serde_json::Value;
use std::process::ExitCode;
use std::sync::Arc;

/// The watch events' objects, the `i`th pair: own names and UIDs.
fn events(fixture: &Value, n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let mut parent = fixture["parent"].clone();
            let mut child = fixture["children"]["Deployment.apps/v1"]["default/hello"].clone();
            parent["metadata"]["name"] = format!("hello-{i}").into();
            parent["metadata"]["uid"] = format!("p-{i:08}").into();
            child["metadata"]["name"] = format!("hello-{i}").into();
            child["metadata"]["ownerReferences"][0]["uid"] = format!("p-{i:08}").into();
            let bytes = |v: &Value| serde_json::to_vec(v).unwrap_or_default();
            (bytes(&parent), bytes(&child))
        })
        .collect()
}

/// The hook request for one parent and its child.
fn request(controller: &Value, parent: &DynamicObject, child: Arc<DynamicObject>) -> usize {
    let deployments = ResolvedType::new("apps", "v1", "Deployment", "deployments", true);
    let child = [child];
    let children = wire::object_map(
        &[TypedObjects {
            resource: &deployments,
            objects: &child,
        }],
        HookVersion::V2,
        parent.metadata.namespace.as_deref(),
    );
    wire::sync_request(controller, parent, &children, &Default::default(), false)
        .map_or(0, |b| b.len())
}

/// The events decoded into a cache of `T`s, each as `keep` leaves it.
type Cache<T> = Vec<(Arc<T>, Arc<T>)>;

fn fill<T: serde::de::DeserializeOwned>(
    events: &[(Vec<u8>, Vec<u8>)],
    keep: impl Fn(T) -> T,
) -> Result<Cache<T>, serde_json::Error> {
    let decode = |bytes: &[u8]| serde_json::from_slice(bytes).map(|o| Arc::new(keep(o)));
    events
        .iter()
        .map(|(parent, child)| Ok((decode(parent)?, decode(child)?)))
        .collect()
}

fn decoded(
    events: &[(Vec<u8>, Vec<u8>)],
    controller: &Value,
    reconcile: bool,
) -> Result<usize, serde_json::Error> {
    let cache = fill(events, |mut obj: DynamicObject| {
        obj.metadata.managed_fields = None;
        obj
    })?;
    if !reconcile {
        return Ok(0);
    }
    Ok(cache
        .iter()
        .map(|(parent, child)| request(controller, parent, Arc::clone(child)))
        .sum())
}

fn compact(
    events: &[(Vec<u8>, Vec<u8>)],
    controller: &Value,
    reconcile: bool,
) -> Result<usize, serde_json::Error> {
    let cache = fill(events, |obj: CachedObject| obj)?;
    if !reconcile {
        return Ok(0);
    }
    let mut sent = 0;
    for (parent, child) in &cache {
        let parent = parent.decode()?;
        let child = Arc::new(child.decode()?);
        sent += request(controller, &parent, child);
    }
    Ok(sent)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(what), Some(Ok(n))) = (
        args.get(1),
        args.get(2),
        args.get(3).map(|n| n.parse::<usize>()),
    ) else {
        eprintln!("usage: cache_cost decoded|compact|none events|reconcile N");
        return ExitCode::FAILURE;
    };
    let reconcile = match what.as_str() {
        "events" => false,
        "reconcile" => true,
        _ => {
            eprintln!("events or reconcile");
            return ExitCode::FAILURE;
        }
    };
    let Ok(fixture) =
        serde_json::from_slice::<Value>(include_bytes!("../../fixtures/hello/ready.json"))
    else {
        eprintln!("the fixture is not JSON");
        return ExitCode::FAILURE;
    };
    let events = events(&fixture, n);
    let controller = fixture["controller"].clone();
    let sent = match mode.as_str() {
        "decoded" => decoded(&events, &controller, reconcile),
        "compact" => compact(&events, &controller, reconcile),
        "none" => Ok(0),
        _ => {
            eprintln!("mode: decoded, compact or none");
            return ExitCode::FAILURE;
        }
    };
    match sent {
        Ok(bytes) => {
            println!("{mode} {what}: {n} pairs, {bytes} request bytes");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("decoding failed: {err}");
            ExitCode::FAILURE
        }
    }
}
