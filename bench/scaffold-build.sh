#!/usr/bin/env bash
# What a new operator costs before its first green check: a crate from
# `metahook new` (on this checkout by path, its Cargo.lock), its first
# `scripts/test.sh` with an empty target directory and the registry warm
# (crates downloaded, nothing built), timed two ways on the same machine,
# one after the other:
#   two builds  fmt, `cargo clippy --all-targets -- -D warnings`, `cargo
#               test`, the chart from the binary, all with metahook's
#               runtime: clippy checks every dependency, then the tests
#               build them again (the scaffold's test.sh before);
#   one build   the scaffold's own scripts/test.sh: the tests' build without
#               the runtime (--no-default-features), this crate compiled by
#               clippy-driver (its lints, -D warnings), the chart from a
#               test; then, apart, the binary's first `cargo build` (the
#               runtime), which the image and `cargo run` pay once.
# Prints a Markdown table, and appends it with the date and commit to
# bench/runs/scaffold-build.md. A benchmark, not a test: the two cores are
# shared, so run it on a quiet machine.
#
#   bench/scaffold-build.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source scripts/lib/cache.sh
cargo build --quiet --locked --bin metahook
metahook="$CARGO_TARGET_DIR/debug/metahook"
work="$(mktemp -d "${TMPDIR:-/var/tmp}/metahook-scaffold-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# As on a machine of a stranger's: no shared build directory, no wrapper.
unset CARGO_BUILD_BUILD_DIR CARGO_TARGET_DIR RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
export CARGO_INCREMENTAL=0 CI=true

# timed NAME COMMAND...: runs it in the crate, prints its seconds.
timed() {
    local name=$1 start
    shift
    start=$(date +%s.%N)
    "$@" >>"$work/log" 2>&1 || { echo "$name failed:" >&2; tail -30 "$work/log" >&2; exit 1; }
    awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.0f", e - s }'
}

fresh() {
    rm -rf "$work/crate"
    "$metahook" new "$work/crate/timing-operator" --kind Timing --group bench.example.com >/dev/null
    cd "$work/crate/timing-operator"
}

fresh
two_fmt=$(timed fmt cargo fmt -- --check)
two_clippy=$(timed clippy cargo clippy --all-targets --locked -- -D warnings)
two_test=$(timed test cargo test --locked)
two_chart=$(timed chart cargo run --quiet --locked -- chart --out-dir "$work/chart-a")
two_total=$((two_fmt + two_clippy + two_test + two_chart))
cd "$root"
fresh
one_total=$(timed test.sh scripts/test.sh)
one_binary=$(timed binary cargo build --locked)
cd "$root"

table="| way | fmt | clippy | tests | chart | total | then the binary |
|---|---|---|---|---|---|---|
| two builds, with the runtime (clippy, then the tests) | ${two_fmt} s | ${two_clippy} s | ${two_test} s | ${two_chart} s | **${two_total} s** | (built) |
| one build, without the runtime (scripts/test.sh) | | | | | **${one_total} s** | ${one_binary} s |"
echo "$table"
{
    echo
    echo "## $(date -u '+%Y-%m-%d %H:%M') UTC, $(git rev-parse --short HEAD), $(nproc) CPUs"
    echo
    echo "$table"
} >>bench/runs/scaffold-build.md
echo "appended to bench/runs/scaffold-build.md"
