#!/usr/bin/env bash
# What a change made while no engine ran waits for, at its start. A
# benchmark, not a timed test; a sibling of bench/driver.sh (its pieces are
# bench/driver-lib.sh's), on the same control plane (tests/cluster/, the
# kubelet stand-in), on loopback.
#
# For each engine and each N (Hellos, `replicas: 0` so that N Deployments
# need no pods; REPLICAS=1 for pods), on a fresh control plane:
#   1. the engine converges the N Hellos with no client budget;
#   2. it is stopped, and one Hello (the middle one) is scaled 0 -> 1;
#   3. it is started again at Metacontroller's default budget (5 QPS,
#      burst 10: BUDGET=5/10); bench/restart_wait.py measures from that
#      start until the Hello's Deployment carries the new replicas, when the
#      driver's /readyz first answered (its caches synced), and the sync
#      hook calls made before the change landed (the engine's /metrics sampled while
#      waiting, so a range; they include the reconciles that ran while the
#      changed one's write waited on the client budget).
# Prints a Markdown table and appends it, dated, to bench/runs/restart-wait.md.
#
#   bench/restart-wait.sh                                  # N = 1000, the driver and Metacontroller
#   SIZES="1000 10000" ENGINES=driver bench/restart-wait.sh
#
# Every wait is bounded; the control plane and the engines are stopped on
# exit.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

SIZES=${SIZES:-1000}
ENGINES=${ENGINES-"driver metacontroller"}
BUDGET=${BUDGET:-5/10}
REPLICAS=${REPLICAS:-0}
PORT=${PORT:-18090}
USER_NAME=metahook-bench
OUT=target/bench
DIR=$root/target/cluster/bench
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RAW=$OUT/restart-wait-$STAMP
mkdir -p "$RAW"
BIN=${CARGO_TARGET_DIR:-target}/release/metahook
source bench/driver-lib.sh
trap driver_lib_cleanup EXIT

build_release
case " $ENGINES " in *" metacontroller "*) build_metacontroller ;; esac

ROWS=()
# converge N: the Hellos created and converged by the running engine.
converge() {
    local n=$1 tag=$2 metrics=("${@:3}")
    python3 bench/driver_bench.py converge --namespace bench --count "$n" --replicas "$REPLICAS" \
        "${metrics[@]}" --quiet 10 --timeout $((600 + n / 10)) --out "$RAW/$tag-converge.json"
}

# scale_one N: the middle Hello from REPLICAS to REPLICAS + 1, while no
# engine runs; its name.
scale_one() {
    local name
    name=$(printf 'hello-%04d' $(($1 / 2)))
    kubectl patch hello "$name" -n bench --type merge -p "{\"spec\":{\"replicas\":$((REPLICAS + 1))}}" >/dev/null
    echo "$name"
}

row() { # ENGINE N TAG
    ROWS+=("$(python3 - "$1" "$2" "$RAW/$3-wait.json" "$loadavg" <<'EOF'
import json, sys
engine, n, path, loadavg = sys.argv[1:]
w = json.load(open(path))
ready = "–" if w["ready_seconds"] is None else f"{w['ready_seconds']:.2f}"
after = "–" if w["after_ready_seconds"] is None else f"{w['after_ready_seconds']:.2f}"
print(f"| {engine} | {int(n):,} | **{w['applied_seconds']:.2f}** | {ready} | {after} | {w['sync_calls_before']}–{w['sync_calls_by_then']} | {loadavg} |")
EOF
)")
    echo "${ROWS[-1]}"
}

run_driver() {
    local n=$1 tag="driver-n$1" name flags=()
    heading "the driver: N=$n"
    fresh_cluster
    mkdir -p "$DIR/controllers"
    cp chart/metacontroller/hello.yaml "$DIR/controllers/"
    start_driver "$RAW/$tag-1.log" "$DIR/controllers" none
    converge "$n" "$tag" --metrics "http://127.0.0.1:$PORT/metrics"
    stop_driver
    name=$(scale_one "$n")
    flags=(--kube-qps "${BUDGET%/*}" --kube-burst "${BUDGET#*/}")
    KUBECONFIG=$DIR/driver.kubeconfig python3 bench/restart_wait.py measure --namespace bench \
        --hello "$name" --replicas $((REPLICAS + 1)) --metrics "http://127.0.0.1:$PORT/metrics" \
        --ready "http://127.0.0.1:$PORT/readyz" --log "$RAW/$tag-2.log" --out "$RAW/$tag-wait.json" -- \
        "$BIN" serve --drive --listen "127.0.0.1:$PORT" --controllers "$DIR/controllers" "${flags[@]}"
    tests/cluster/down.sh --wipe "$DIR"
    row driver "$n" "$tag"
}

run_metacontroller() {
    local n=$1 tag="mc-n$1" name health=$((PORT + 1))
    heading "Metacontroller: N=$n"
    fresh_cluster --metacontroller
    start_metacontroller "$RAW/$tag" none
    converge "$n" "$tag"
    stop_driver
    name=$(scale_one "$n")
    # Its hooks stay served (HOOKS_PID, whose /metrics count its calls).
    KUBECONFIG=$DIR/driver.kubeconfig python3 bench/restart_wait.py measure --namespace bench \
        --hello "$name" --replicas $((REPLICAS + 1)) --metrics "http://127.0.0.1:$PORT/metrics" \
        --log "$RAW/$tag-2.log" --out "$RAW/$tag-wait.json" -- \
        bash -c 'exec -a metacontroller "$0" "$@"' "$MC" \
        --discovery-interval=5s --metrics-address=127.0.0.1:0 \
        --health-probe-bind-address="127.0.0.1:$health" \
        --client-go-qps="${BUDGET%/*}" --client-go-burst="${BUDGET#*/}"
    stop_hooks
    tests/cluster/down.sh --wipe "$DIR"
    row "Metacontroller 4.17.2" "$n" "$tag"
}

for n in $SIZES; do
    case " $ENGINES " in *" driver "*) run_driver "$n" ;; esac
    if [ -n "$MC" ]; then run_metacontroller "$n"; fi
done

table="| engine | parents | change applied, s from the start | caches synced (/readyz), s | applied after synced, s | sync calls before it landed (sampled) | load average before |
|---|---|---|---|---|---|---|
$(printf '%s\n' "${ROWS[@]}")"
echo
echo "$table"
{
    echo
    echo "## $(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD), budget $BUDGET, replicas $REPLICAS"
    echo
    machine_line
    echo
    echo "$table"
} >>bench/runs/restart-wait.md
echo "appended to bench/runs/restart-wait.md"
