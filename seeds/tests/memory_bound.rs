//! What decoding and the hook build from a body, counted by a counting
//! global allocator, for every hostile shape in every place of every hook's
//! request (`metahook_testkit::hostile`): the peak heap of one call is at
//! most `K` times the body plus the hook's constant (docs/robustness.md,
//! "Hostile shapes"). One test in this binary: the allocator's counts are
//! process-wide.
use metahook_core::registry;
use metahook_seeds::controllers;
use metahook_testkit::hostile::{HOOKS, SHAPES};
use peak_alloc::PeakAlloc;

#[global_allocator]
static HEAP: PeakAlloc = PeakAlloc;

/// Heap per byte of body, at most.
const K: f64 = 3.0;
/// Heap besides, at most: the objects a request may hold (`Observed::MAX`)
/// times what the hook builds for each, measured with the smallest objects
/// it keeps (`minimal-objects`).
fn constant(hook: &str) -> usize {
    match hook.split('/').next() {
        Some("hikawa") => 16 << 20,
        _ => 8 << 20,
    }
}

#[test]
fn every_hostile_shape_stays_within_the_bound() {
    let mut rows = Vec::new();
    let mut over = Vec::new();
    for size in [2 << 20] {
        for hook in HOOKS {
            let (controller, kind) = hook.path.split_once('/').expect("controller/hook");
            let (_, _, handler) =
                registry::lookup(controllers(), controller, kind).expect("a hook of the table");
            for place in hook.places() {
                for shape in SHAPES {
                    let body = hook.body(shape, place, size);
                    let before = HEAP.current_usage();
                    HEAP.reset_peak_usage();
                    let outcome = handler(&body, metahook_testkit::now());
                    let peak = HEAP.peak_usage().saturating_sub(before);
                    let outcome = match outcome {
                        Ok(answer) => format!("answered, {} bytes", answer.len()),
                        Err(e) => e.to_string().chars().take(50).collect(),
                    };
                    let bound = K * body.len() as f64 + constant(hook.name) as f64;
                    let row = format!(
                        "{:6.2} x {:>8} B  {:26} {:36} {:16} {outcome}",
                        peak as f64 / body.len() as f64,
                        body.len(),
                        hook.name,
                        place.name(),
                        shape.name()
                    );
                    if peak as f64 > bound {
                        over.push(format!("{row}: {peak} bytes > {bound}"));
                    }
                    rows.push((peak as f64 / body.len() as f64, row));
                }
            }
        }
    }
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (_, row) in rows.iter().take(40) {
        println!("{row}");
    }
    assert!(over.is_empty(), "over the bound:\n{}", over.join("\n"));
}
