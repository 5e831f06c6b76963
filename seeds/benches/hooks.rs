//! The hooks as pure functions, on requests shaped like Metacontroller's.
//!
//! - `hello_sync/*`: the Hello sync on `fixtures/hello/ready.json` (compact,
//!   as Go sends it), phase by phase: `decode`, `hook`, `encode`, and
//!   `end_to_end` through the registry handler the service calls. `scan` is
//!   the floor: serde_json walking the bytes and building nothing;
//!   `value` is what parsing into `serde_json::Value` would cost instead.
//! - `growth/<controller>/<N>`: the registry handler on generated requests
//!   with N observed children (`testkit/src/requests.rs`); throughput is in
//!   children, so flat elements/s means cost linear in N.
//! - `foo/*`: customize and sync.
//!
//! Controllers not yet in the registry are skipped with a note, so adding a
//! controller to `controllers()` is enough to bench it.
//!
//!     cargo bench --bench hooks                 # everything
//!     cargo bench --bench hooks -- hello_sync   # one group

use metahook_testkit::requests;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use metahook_core::Handler;
use metahook_core::{HookKind, Timestamp};
use metahook_seeds::hello;
use serde::de::IgnoredAny;
use std::hint::black_box;
use std::time::Duration;

fn now() -> Timestamp {
    Timestamp::from_second(1_795_316_400).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// A fixture re-encoded compactly: Metacontroller sends no whitespace.
fn fixture(path: &str) -> Vec<u8> {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"));
    let value: serde_json::Value = serde_json::from_slice(&text).expect("fixture is JSON");
    serde_json::to_vec(&value).expect("encodes")
}

fn handler(controller: &str, hook: HookKind) -> Option<Handler> {
    let found = metahook_seeds::controller(controller).and_then(|c| c.hook(hook));
    if found.is_none() {
        eprintln!("note: skipping {controller} {hook}: not in the registry on this branch");
    }
    found
}

fn hello_sync(c: &mut Criterion) {
    let body = fixture("fixtures/hello/ready.json");
    let request = hello::Request::from_json(&body, now()).expect("fixture decodes");
    let response = hello::sync(&request);
    let Some(end_to_end) = handler("hello", HookKind::Sync) else {
        return;
    };
    let mut group = c.benchmark_group("hello_sync");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("scan", |b| {
        b.iter(|| serde_json::from_slice::<IgnoredAny>(black_box(&body)).expect("JSON"))
    });
    group.bench_function("value", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(&body)).expect("JSON"))
    });
    group.bench_function("decode", |b| {
        b.iter(|| hello::Request::from_json(black_box(&body), now()).expect("decodes"))
    });
    group.bench_function("hook", |b| b.iter(|| hello::sync(black_box(&request))));
    group.bench_function("encode", |b| {
        b.iter(|| black_box(&response).to_json().expect("encodes"))
    });
    group.bench_function("end_to_end", |b| {
        b.iter(|| end_to_end(black_box(&body), now()).expect("answers"))
    });
    group.finish();
}

/// The registry handler on requests with N children; `sizes` are the child
/// counts benchmarked for each controller.
fn growth_of(
    c: &mut Criterion,
    controller: &str,
    sizes: &[usize],
    request: fn(usize) -> serde_json::Value,
) {
    let Some(run) = handler(controller, HookKind::Sync) else {
        return;
    };
    let mut group = c.benchmark_group(format!("growth/{controller}"));
    for &n in sizes {
        let body = requests::bytes(&request(n));
        if let Err(e) = run(&body, now()) {
            eprintln!(
                "note: skipping {controller} with {n} children: the hook refused the generated request: {e}"
            );
            continue;
        }
        group.throughput(Throughput::Elements(n as u64));
        if n >= 1000 {
            group.sample_size(20);
            group.measurement_time(Duration::from_secs(8));
        }
        group.bench_with_input(BenchmarkId::new("scan", n), &body, |b, body| {
            b.iter(|| serde_json::from_slice::<IgnoredAny>(black_box(body)).expect("JSON"))
        });
        group.bench_with_input(BenchmarkId::new("end_to_end", n), &body, |b, body| {
            b.iter(|| run(black_box(body), now()).expect("answers"))
        });
    }
    group.finish();
}

fn growth(c: &mut Criterion) {
    growth_of(c, "hello", &[1, 10, 100, 1000], requests::hello);
    growth_of(c, "hikawa", &[10, 100, 1000], requests::hikawa);
}

fn foo(c: &mut Criterion) {
    for (hook, request) in [
        (HookKind::Customize, requests::foo_customize()),
        (HookKind::Sync, requests::foo_sync()),
    ] {
        let Some(run) = handler("foo", hook) else {
            continue;
        };
        let body = requests::bytes(&request);
        c.bench_function(&format!("foo/{hook}"), |b| {
            b.iter(|| run(black_box(&body), now()).expect("answers"))
        });
    }
}

criterion_group!(benches, hello_sync, growth, foo);
criterion_main!(benches);
