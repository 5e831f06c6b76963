//! Structure-aware: fixtures (or arbitrary documents) edited at random
//! places with hostile values, into the hooks of the fixture's controller.
#![no_main]
use metahook_fuzz_harness::{self as harness, Fixture};
use std::path::Path;
use std::sync::OnceLock;

static FIXTURES: OnceLock<Vec<Fixture>> = OnceLock::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let fixtures = FIXTURES.get_or_init(|| {
        harness::fixtures(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fixtures"
        )))
    });
    harness::structured(fixtures, data);
});
