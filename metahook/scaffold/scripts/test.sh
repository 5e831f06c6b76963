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
cargo test --locked
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cargo run --quiet --locked -- chart --out-dir "$scratch/chart"
if [ ! -d chart ]; then
    cp -r "$scratch/chart" chart
    echo "chart/: generated from the declaration"
elif ! diff -r "$scratch/chart" chart; then
    echo "chart/ is not what the declaration writes: cargo run -- chart --out-dir chart" >&2
    exit 1
fi
