//! What every fuzz input is put through.
//!
//! A panic, a stack overflow or an allocation past libFuzzer's
//! `-rss_limit_mb` is a finding; so is a hook that answers differently
//! twice, or answers with keys Metacontroller's strict (v2) decoder would
//! refuse.
//!
//! A crate of its own, shared by the cargo-fuzz targets (`fuzz/fuzz_targets/`,
//! built in their own workspace with cargo-fuzz's flags) and by
//! `tests/fuzz_regressions.rs`, which replays `fuzz/regressions/` in a plain
//! `cargo test`. It has no modules: [`decoder`], [`every_hook`] and
//! [`structured`] are the targets' bodies.
//!
//! ## Example
//!
//! An input as a target sees it: no panic, whatever the bytes.
//!
//! ```
//! metahook_fuzz_harness::decoder(b"{\"parent\": 1}");
//! metahook_fuzz_harness::every_hook(b"not json at all");
//! let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures");
//! let fixtures = metahook_fuzz_harness::fixtures(std::path::Path::new(dir));
//! assert!(fixtures.iter().any(|f| f.controller == "hikawa"));
//! metahook_fuzz_harness::structured(&fixtures, &[7; 64]);
//! ```
#![forbid(unsafe_code)]

use arbitrary::{Result, Unstructured};
use metahook_core::Handler;
use metahook_core::{Customize, HookKind, Timestamp};
use metahook_seeds::{controllers, foo, hello, hikawa};
use serde_json::{Map, Value};
use std::path::Path;

/// The time fixtures are rendered at (testkit/src/fixtures.rs).
const NOW_SECONDS: i64 = 1_795_316_400;

fn fixed_now() -> Timestamp {
    Timestamp::from_second(NOW_SECONDS).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// The decoder, for every request shape the hooks use: the library's own
/// request types, as each seed declares them (a parent; children of one
/// type; related objects; a customize request).
pub fn decoder(data: &[u8]) {
    let now = fixed_now();
    let _ = hello::Request::from_json(data, now);
    let _ = foo::Request::from_json(data, now);
    let _ = hikawa::Request::from_json(data, now);
    let _ = Customize::<foo::Foo>::from_json(data, now);
}

/// Every hook of every controller in the registry, on the same bytes.
pub fn every_hook(data: &[u8]) {
    for controller in controllers() {
        for kind in controller.hook_kinds() {
            if let Some(handler) = controller.hook(kind) {
                run(controller.name(), kind, handler, data, fixed_now());
            }
        }
    }
}

/// Runs one hook and checks what it answered.
fn run(controller: &str, kind: HookKind, handler: Handler, data: &[u8], now: Timestamp) {
    let first = handler(data, now);
    let Ok(body) = &first else { return };
    let again = handler(data, now);
    assert!(
        again.as_ref().ok() == Some(body),
        "{controller} {kind}: the same request gave different bytes"
    );
    let response: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => panic!("{controller} {kind}: the response is not JSON: {e}"),
    };
    let allowed: &[&str] = match kind {
        HookKind::Customize => &["relatedResources"],
        HookKind::Sync | HookKind::Finalize => {
            &["status", "children", "resyncAfterSeconds", "finalized"]
        }
        HookKind::Validate | HookKind::Default | HookKind::Convert => {
            &["apiVersion", "kind", "response"]
        }
    };
    let Some(object) = response.as_object() else {
        panic!("{controller} {kind}: the response is not an object");
    };
    for key in object.keys() {
        assert!(
            allowed.contains(&key.as_str()),
            "{controller} {kind}: response key {key:?} would fail a strict v2 decode"
        );
    }
}

/// A request file and the controller it is for (`fixtures/<controller>/`).
pub struct Fixture {
    pub controller: String,
    pub request: Value,
}

/// Every fixture under `dir`: new controllers' fixtures join by themselves.
pub fn fixtures(dir: &Path) -> Vec<Fixture> {
    let mut out = Vec::new();
    let Ok(controllers) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut controllers: Vec<_> = controllers.filter_map(|e| e.ok()).collect();
    controllers.sort_by_key(|e| e.path());
    for controller in controllers {
        let name = controller.file_name().to_string_lossy().into_owned();
        let Ok(files) = std::fs::read_dir(controller.path()) else {
            continue;
        };
        let mut files: Vec<_> = files.filter_map(|e| e.ok()).collect();
        files.sort_by_key(|e| e.path());
        for file in files {
            let request = std::fs::read(file.path())
                .ok()
                .and_then(|bytes| serde_json::from_slice(&bytes).ok());
            if let Some(request) = request {
                out.push(Fixture {
                    controller: name.clone(),
                    request,
                });
            }
        }
    }
    out
}

/// A fixture (or an arbitrary document), edited in a few places with
/// hostile values, into the hooks of the fixture's controller (or every
/// hook), at an arbitrary time.
pub fn structured(fixtures: &[Fixture], data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok((controller, request, now)) = build(fixtures, &mut u) else {
        return;
    };
    let Ok(bytes) = serde_json::to_vec(&request) else {
        return;
    };
    for c in controllers() {
        if controller.is_some_and(|name| name != c.name()) {
            continue;
        }
        for kind in c.hook_kinds() {
            if let Some(handler) = c.hook(kind) {
                run(c.name(), kind, handler, &bytes, now);
            }
        }
    }
}

fn build<'a>(
    fixtures: &'a [Fixture],
    u: &mut Unstructured,
) -> Result<(Option<&'a str>, Value, Timestamp)> {
    let pick = u.choose_index(fixtures.len() + 1)?;
    let (controller, mut request) = match fixtures.get(pick) {
        Some(f) => (Some(f.controller.as_str()), f.request.clone()),
        None => (None, value(u, 0)?),
    };
    for _ in 0..u.int_in_range(0..=6)? {
        edit(&mut request, u, 0)?;
    }
    // Times a clock can show: the pinned one, a clock reset to the epoch,
    // or within 68 years either side. Far-off times in the *request* (which
    // the hooks must survive) come from the edits instead.
    let now = match u.int_in_range(0..=2)? {
        0 => fixed_now(),
        1 => Timestamp::UNIX_EPOCH,
        _ => {
            let offset: i32 = u.arbitrary()?;
            Timestamp::from_second(NOW_SECONDS + i64::from(offset)).unwrap_or(fixed_now())
        }
    };
    Ok((controller, request, now))
}

/// Walks down from `v` to a random place and changes it: a new value, a
/// removed key or element, or a copy of a sibling (duplicated children).
fn edit(v: &mut Value, u: &mut Unstructured, depth: usize) -> Result<()> {
    let descend = depth < 16 && u.ratio(7, 8)?;
    match v {
        Value::Object(map) if descend && !map.is_empty() => {
            let i = u.choose_index(map.len())?;
            let Some(key) = map.keys().nth(i).cloned() else {
                return Ok(());
            };
            match u.int_in_range(0..=9)? {
                0 => {
                    map.remove(&key);
                    Ok(())
                }
                1 => {
                    let copy = map.get(&key).cloned().unwrap_or(Value::Null);
                    map.insert(format!("{key}-copy"), copy);
                    Ok(())
                }
                _ => match map.get_mut(&key) {
                    Some(child) => edit(child, u, depth + 1),
                    None => Ok(()),
                },
            }
        }
        Value::Array(items) if descend && !items.is_empty() => {
            let i = u.choose_index(items.len())?;
            match u.int_in_range(0..=9)? {
                0 => {
                    items.remove(i);
                    Ok(())
                }
                1 => {
                    let copy = items[i].clone();
                    items.push(copy);
                    Ok(())
                }
                _ => edit(&mut items[i], u, depth + 1),
            }
        }
        _ => {
            *v = value(u, 0)?;
            Ok(())
        }
    }
}

/// Field names the hooks read, so random objects reach their code.
const KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "uid",
    "generation",
    "labels",
    "annotations",
    "ownerReferences",
    "controller",
    "creationTimestamp",
    "deletionTimestamp",
    "spec",
    "status",
    "replicas",
    "image",
    "template",
    "containers",
    "conditions",
    "type",
    "reason",
    "message",
    "lastTransitionTime",
    "observedGeneration",
    "readyReplicas",
    "availableReplicas",
    "updatedReplicas",
    "parent",
    "children",
    "related",
    "finalizing",
    "Deployment.apps/v1",
    "default/hello",
    "intervalMillis",
    "say",
    "numZundokosSaid",
    "kiyoshied",
    "deploymentName",
];

const STRINGS: &[&str] = &[
    "",
    "Deployment",
    "apps/v1",
    "hello",
    "True",
    "False",
    "Zun",
    "Doko",
    "Kiyoshi!",
    "2026-11-22T03:00:00Z",
    "2026-11-22T03:00:00.123456789Z",
    "9999-12-31T23:59:59Z",
    "not a time",
    "nginx latest",
    "\u{0}",
    "ü名前🎉",
];

/// An arbitrary JSON value, at most 6 levels deep: deeper nesting is the
/// decoder's business (its recursion limit), tested by the `decode` target.
fn value(u: &mut Unstructured, depth: usize) -> Result<Value> {
    let top = if depth >= 6 { 5 } else { 7 };
    Ok(match u.int_in_range(0..=top)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => match u.int_in_range(0..=9)? {
            0 => Value::from(i64::MIN),
            1 => Value::from(i64::MAX),
            2 => Value::from(u64::MAX),
            3 => Value::from(i64::from(i32::MAX) + 1),
            4 => Value::from(-1),
            5 => Value::from(21),
            6 => Value::from(u.arbitrary::<f64>()?),
            _ => Value::from(u.arbitrary::<i32>()?),
        },
        3 => Value::from(*u.choose(STRINGS)?),
        4 => {
            let n = u.int_in_range(0..=10_000)?;
            Value::from(u.choose(STRINGS)?.repeat(n))
        }
        5 => Value::from(u.arbitrary::<String>()?),
        6 => {
            let n = u.int_in_range(0..=4)?;
            Value::Array((0..n).map(|_| value(u, depth + 1)).collect::<Result<_>>()?)
        }
        _ => {
            let n = u.int_in_range(0..=4)?;
            let mut map = Map::new();
            for _ in 0..n {
                let key = if u.ratio(3, 4)? {
                    (*u.choose(KEYS)?).to_owned()
                } else {
                    u.arbitrary()?
                };
                map.insert(key, value(u, depth + 1)?);
            }
            Value::Object(map)
        }
    })
}
