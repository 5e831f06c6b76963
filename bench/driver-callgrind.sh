#!/usr/bin/env bash
# Instructions spent on holding and reading cached objects, counted by
# callgrind (the same count on a busy machine as on a quiet one), per
# Hello and its Deployment (driver/examples/cache_cost.rs): the two watch
# events decoded into the cache; then one reconcile's share: both read back
# as the planner and the hooks read them, and the sync request built from
# them. Compares the caches as they are (`compact`: metadata decoded, the
# rest kept as JSON text) with `DynamicObject`s, as they were (`decoded`),
# each minus the baseline (`none`). Issue 34: the compact cache must not
# cost CPU per reconcile.
#
#   bench/driver-callgrind.sh [N]      # default 2000 pairs
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000}
OUT=target/bench
mkdir -p "$OUT"
cargo build --profile profiling -p metahook-driver --example cache_cost 2>&1 | grep -E '^error' || true
BIN=${CARGO_TARGET_DIR:-target}/profiling/examples/cache_cost

count() {
    local out="$OUT/callgrind.cache.$1-$2.out"
    valgrind --tool=callgrind --callgrind-out-file="$out" "$BIN" "$1" "$2" "$N" >"$out.txt" 2>"$out.log"
    grep -E '^(summary|totals):' "$out" | head -1 | awk '{print $2}'
}
sent() { awk '{print $5}' "$OUT/callgrind.cache.$1-reconcile.out.txt"; }
per() { echo $(( ($1 - $2) / N )); }

NONE=$(count none events)
echo "| cache | two watch events (instructions per pair) | a reconcile's read and sync request | both |"
echo "|---|---|---|---|"
for cache in decoded compact; do
    EVENTS=$(count "$cache" events)
    ALL=$(count "$cache" reconcile)
    echo "| $cache | $(per "$EVENTS" "$NONE") | $(per "$ALL" "$EVENTS") | $(per "$ALL" "$NONE") |"
done
if [ "$(sent decoded)" != "$(sent compact)" ]; then
    echo "the two caches built different requests: $(sent decoded) against $(sent compact) bytes" >&2
    exit 1
fi
echo "($N pairs; the same $(sent compact) request bytes from both)"
