#!/usr/bin/env bash
# Every check of @@CRATE@@: formatting, lints, the tests (snapshots and the
# convergence check, no cluster needed), and the Helm chart in chart/ as
# the controller's declaration writes it (generated on the first run).
set -euo pipefail
cd "$(dirname "$0")/.."
# insta fails on a snapshot that changed instead of writing a new one.
export CI="${CI:-true}"
# Not --all: that would take in metahook itself when it is a path dependency.
cargo fmt -- --check
# Lints and tests from one build of the dependencies: this crate's own code
# is compiled by clippy-driver (what `cargo clippy` runs), which lints it
# as it compiles it, so the dependencies are built once for the tests
# instead of also being checked once more for clippy (half the first run's
# time). CLIPPY_ARGS is how `cargo clippy -- -D warnings` hands its flags
# to clippy-driver. Every cargo call below has the wrapper: cargo keys this
# crate's build on it.
if ! clippy_driver="$(command -v clippy-driver)"; then
    echo "clippy-driver is not on PATH: rustup component add clippy" >&2
    exit 1
fi
export RUSTC_WORKSPACE_WRAPPER="$clippy_driver"
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
# Without the runtime (Cargo.toml's `runtime` feature): the tests need
# only the declarations, so no HTTP, TLS or Kubernetes client is compiled.
# tests/chart.rs writes chart/ the first time, then checks it.
had_chart=
[ -d chart ] && had_chart=yes
cargo test --locked --no-default-features
[ -n "$had_chart" ] || echo "chart/: generated from the declaration"
