//! The fuzz harness as a library, so `tests/fuzz_regressions.rs` in the main
//! workspace can replay kept inputs without cargo-fuzz.
pub mod harness;
