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
cargo clippy --all-targets --locked -- -D warnings
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
