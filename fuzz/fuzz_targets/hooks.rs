//! Arbitrary bytes into every hook of every controller in the registry.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| metahook_fuzz_harness::every_hook(data));
