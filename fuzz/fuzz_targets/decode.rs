//! Arbitrary bytes into the request decoder, for every request shape.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| metahook_fuzz_harness::decoder(data));
