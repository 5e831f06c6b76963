#!/usr/bin/env bash
# What a change made while no engine runs, or while none leads, waits for.
# A benchmark, not a timed test; a sibling of bench/driver.sh (its pieces
# are bench/driver-lib.sh's), on the same control plane (tests/cluster/, the
# kubelet stand-in), on loopback; bench/restart_wait.py measures.
#
# For each engine and each N (Hellos, `replicas: 0` so that N Deployments
# need no pods; REPLICAS=1 for pods), on one fresh control plane:
#   1. the engine converges the N Hellos with no client budget;
#   2. steady state: STEADY Hellos (spread over the N) scaled one at a time,
#      each change's wait from the Hello's watch event to its Deployment's
#      (p50 and p90);
#   3. restart: the engine stopped, the middle Hello scaled, the engine
#      started again at Metacontroller's default budget (5 QPS, burst 10:
#      BUDGET=5/10); from that start, when the Hello's Deployment carried
#      the new replicas, when the driver's /readyz first answered (its caches
#      synced), and the sync hook calls made before the change landed (the
#      engine's /metrics sampled while waiting, so a range; they include the
#      reconciles that ran while the changed one's write waited on the
#      client budget);
#   4. leader change (MODES=leader; both by default): a leader with no budget
#      (leader election on, the Lease in the namespace bench) confirms every
#      parent and goes quiet; a standby at BUDGET starts and waits; the
#      leader is killed (SIGKILL: its Lease is not given up, as when a node
#      dies) and the Hello after the middle one scaled at once. From the
#      kill: when the Lease names the standby (the takeover: a whole term,
#      15 s by default, after the last renewal it saw), when the standby's
#      /readyz answered (the driver: it leads with its caches synced), and
#      when the change landed. The driver's standby is STANDBY (warm: it
#      lists and watches before it leads, and is killed-over only once its
#      caches have synced; cold: it starts them once it leads); the
#      standby's and the leader's resident memory before the kill are
#      printed beside the row.
# Metacontroller takes part in both: its --leader-election (controller-
# runtime's, on a Lease; 15 s term, 10 s renew deadline, 2 s retry, as the
# driver's) runs two replicas beside one `metahook serve`. It starts its
# parents' and children's informers only once it leads (the composite
# reconciler starts them), and its /readyz answers whether it leads or not,
# so it has no "caches synced" figure.
#
# Prints a Markdown table and appends it, dated, to bench/runs/restart-wait.md.
#
#   bench/restart-wait.sh                                  # N = 1000, the driver and Metacontroller
#   SIZES="1000 10000" ENGINES=driver bench/restart-wait.sh
#   MODES=restart STEADY=0 bench/restart-wait.sh           # the restart only
#
# Every wait is bounded (a change's by wait_bound: Metacontroller at 10,000
# took more than 30 minutes for the restart); the control plane and the
# engines are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

SIZES=${SIZES:-1000}
ENGINES=${ENGINES-"driver metacontroller"}
MODES=${MODES:-"restart leader"}
STEADY=${STEADY:-20}
BUDGET=${BUDGET:-5/10}
STANDBY=${STANDBY:-warm}
REPLICAS=${REPLICAS:-0}
PORT=${PORT:-18090}
# The standby's HTTP port (PORT + 1 is Metacontroller's health).
STANDBY_PORT=$((PORT + 2))
USER_NAME=metahook-bench
OUT=target/bench
# CLUSTER_DIR and PORT apart, two runs can go side by side (each its own
# control plane).
DIR=${CLUSTER_DIR:-$root/target/cluster/bench}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RAW=$OUT/restart-wait-$STAMP
mkdir -p "$RAW"
BIN=${CARGO_TARGET_DIR:-target}/release/metahook
source bench/driver-lib.sh
# The standby of a leader change, stopped on exit with the rest.
STANDBY_PID=
stop_standby() {
    [ -n "$STANDBY_PID" ] || return 0
    kill -TERM "$STANDBY_PID" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$STANDBY_PID" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$STANDBY_PID" 2>/dev/null || true
    wait "$STANDBY_PID" 2>/dev/null || true
    STANDBY_PID=
}
trap 'stop_standby; driver_lib_cleanup' EXIT

# Metacontroller's command line, its client-go named metacontroller in its
# User-Agent as start_metacontroller runs it. An array, not a function: run
# in the background, a function is a subshell, and $! would name it, not
# the process a leader change kills.
mc_command() {
    MC_COMMAND=(bash -c 'exec -a metacontroller "$0" "$@"' "$MC" --discovery-interval=5s --metrics-address=127.0.0.1:0)
}

build_release
case " $ENGINES " in *" metacontroller "*) build_metacontroller && mc_command ;; esac

ROWS=()
# converge N: the Hellos created and converged by the running engine (the
# creates alone took up to 7 minutes at 10,000 on a busy machine, and
# Metacontroller 6 more: docs/performance.md, Memory).
converge() {
    local n=$1 tag=$2 metrics=("${@:3}")
    python3 bench/driver_bench.py converge --namespace bench --count "$n" --replicas "$REPLICAS" \
        "${metrics[@]}" --quiet 10 --timeout $((600 + n / 5)) --out "$RAW/$tag-converge.json"
}

hello_name() { printf 'hello-%04d' "$1"; }

# wait_bound N: how long a change may wait, in seconds. Metacontroller at
# 5 QPS reads each parent once before it syncs it (a GET at 0.2 s each) in
# no set order: at 10,000 its change had not landed after 1,800 s
# (bench/runs/restart-wait.md), so half a second per parent; WAIT_BOUND
# (seconds) sets it instead.
wait_bound() { echo "${WAIT_BOUND:-$((900 + $1 / 2))}"; }

# steady N TAG: STEADY Hellos spread over the N, scaled one at a time by the
# running engine.
steady() {
    local n=$1 tag=$2 i names=()
    if [ "$STEADY" -eq 0 ]; then
        echo '{"p50": null, "p90": null}' >"$RAW/$tag-steady.json"
        return 0
    fi
    for i in $(seq 0 $((STEADY - 1))); do
        # Odd multiples of N / (2 STEADY): for an even STEADY, never the
        # two Hellos scaled later (N / 2 and N / 2 + 1).
        names+=("$(hello_name $(((2 * i + 1) * n / (2 * STEADY))))")
    done
    python3 bench/restart_wait.py steady --namespace bench --replicas $((REPLICAS + 1)) \
        --out "$RAW/$tag-steady.json" "${names[@]}"
}

# scale_one N: the middle Hello from REPLICAS to REPLICAS + 1, while no
# engine runs; its name.
scale_one() {
    local name
    name=$(hello_name $(($1 / 2)))
    kubectl patch hello "$name" -n bench --type merge -p "{\"spec\":{\"replicas\":$((REPLICAS + 1))}}" >/dev/null
    echo "$name"
}

row() { # ENGINE N SCENARIO TAG
    ROWS+=("$(python3 - "$1" "$2" "$3" "$RAW/$4" "$loadavg" <<'EOF'
import json, sys
engine, n, scenario, prefix, loadavg = sys.argv[1:]
w = json.load(open(f"{prefix}-{scenario}.json"))
s = json.load(open(f"{prefix}-steady.json"))
def f(v):
    return "–" if v is None else f"{v:.2f}"
steady = "–" if s["p50"] is None else f"{s['p50']:.3f} / {s['p90']:.3f}"
what = "restart" if scenario == "restart" else "leader killed"
print(f"| {engine} | {int(n):,} | {steady} | {what} | **{f(w['applied_seconds'])}** | {f(w.get('takeover_seconds'))} "
      f"| {f(w['ready_seconds'])} | {f(w.get('after_takeover_seconds'))} | {f(w['after_ready_seconds'])} "
      f"| {w['sync_calls_before']}–{w['sync_calls_by_then']} | {loadavg} |")
EOF
)")
    echo "${ROWS[-1]}"
}

# standby_synced URL SECONDS: until every cache the standby's /metrics
# names says synced (a warm standby lists before it leads).
standby_synced() {
    local url=$1 bound=$2 i text
    for i in $(seq 1 "$bound"); do
        text=$(curl -fsS "$url" 2>/dev/null | grep '^metahook_driver_cache_synced{' || true)
        if [ "$(echo "$text" | grep -c ' 1$')" -ge 2 ] && ! echo "$text" | grep -q ' 0$'; then
            return 0
        fi
        sleep 1
    done
    echo "the standby's caches did not sync within ${bound} s" >&2
    exit 1
}

# rss_mib PID: its resident memory, MiB.
rss_mib() { awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }

has_mode() { case " $MODES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }


run_driver() {
    local n=$1 tag="driver-n$1" name budget=()
    heading "the driver: N=$n"
    fresh_cluster
    mkdir -p "$DIR/controllers"
    cp chart/metacontroller/hello.yaml "$DIR/controllers/"
    start_driver "$RAW/$tag-1.log" "$DIR/controllers" none
    converge "$n" "$tag" --metrics "http://127.0.0.1:$PORT/metrics"
    steady "$n" "$tag"
    stop_driver
    budget=(--kube-qps "${BUDGET%/*}" --kube-burst "${BUDGET#*/}")
    if has_mode restart; then
        heading "the driver: N=$n, restart"
        name=$(scale_one "$n")
        KUBECONFIG=$DIR/driver.kubeconfig python3 bench/restart_wait.py measure --namespace bench \
            --hello "$name" --replicas $((REPLICAS + 1)) --metrics "http://127.0.0.1:$PORT/metrics" \
            --ready "http://127.0.0.1:$PORT/readyz" --log "$RAW/$tag-2.log" --out "$RAW/$tag-restart.json" --timeout "$(wait_bound "$n")" -- \
            "$BIN" serve --drive --listen "127.0.0.1:$PORT" --controllers "$DIR/controllers" "${budget[@]}"
        row driver "$n" restart "$tag"
    fi
    if has_mode leader; then
        heading "the driver: N=$n, leader change"
        start_driver "$RAW/$tag-leader.log" "$DIR/controllers" none \
            --leader-election --leader-election-namespace bench --pod-name leader
        python3 bench/restart_wait.py quiet --metrics "http://127.0.0.1:$PORT/metrics" --at-least "$n" \
            --timeout $((300 + n / 10))
        env KUBECONFIG="$DIR/driver.kubeconfig" RUST_LOG="${RUST_LOG:-info}" \
            "$BIN" serve --drive --listen "127.0.0.1:$STANDBY_PORT" --controllers "$DIR/controllers" \
            "${budget[@]}" --leader-election --leader-election-namespace bench --pod-name standby \
            --leader-election-standby "$STANDBY" >"$RAW/$tag-standby.log" 2>&1 &
        STANDBY_PID=$!
        # Its /readyz answers only once it leads.
        wait_ready "http://127.0.0.1:$STANDBY_PORT/metrics" "$STANDBY_PID" "$RAW/$tag-standby.log" "the standby"
        # A few of the leader's renewals seen (every 2 s): the standby's
        # count of the term starts from the last it saw.
        sleep 5
        grep -q 'waiting for the lease' "$RAW/$tag-standby.log" ||
            { echo "the standby is not waiting for the lease; see $RAW/$tag-standby.log" >&2; exit 1; }
        if [ "$STANDBY" = warm ]; then
            standby_synced "http://127.0.0.1:$STANDBY_PORT/metrics" $((300 + n / 10))
        fi
        echo "resident memory before the kill: leader $(rss_mib "$DRIVER_PID") MiB, $STANDBY standby $(rss_mib "$STANDBY_PID") MiB" |
            tee "$RAW/$tag-memory.txt"
        KUBECONFIG=$DIR/driver.kubeconfig python3 bench/restart_wait.py leader --namespace bench \
            --hello "$(hello_name $((n / 2 + 1)))" --replicas $((REPLICAS + 1)) --lease metahook-driver \
            --kill "$DRIVER_PID" --standby "$STANDBY_PID" --metrics "http://127.0.0.1:$STANDBY_PORT/metrics" \
            --ready "http://127.0.0.1:$STANDBY_PORT/readyz" --out "$RAW/$tag-leader.json" --timeout "$(wait_bound "$n")"
        wait "$DRIVER_PID" 2>/dev/null || true
        DRIVER_PID=
        stop_standby
        row driver "$n" leader "$tag"
    fi
    tests/cluster/down.sh --wipe "$DIR"
}

run_metacontroller() {
    local n=$1 tag="mc-n$1" name health=$((PORT + 1)) before
    local elect=(--leader-election --leader-election-namespace=bench)
    heading "Metacontroller: N=$n"
    fresh_cluster --metacontroller
    start_metacontroller "$RAW/$tag" none
    converge "$n" "$tag"
    steady "$n" "$tag"
    stop_driver
    if has_mode restart; then
        heading "Metacontroller: N=$n, restart"
        name=$(scale_one "$n")
        # Its hooks stay served (HOOKS_PID, whose /metrics count its calls).
        KUBECONFIG=$DIR/driver.kubeconfig python3 bench/restart_wait.py measure --namespace bench \
            --hello "$name" --replicas $((REPLICAS + 1)) --metrics "http://127.0.0.1:$PORT/metrics" \
            --log "$RAW/$tag-2.log" --out "$RAW/$tag-restart.json" --timeout "$(wait_bound "$n")" -- \
            "${MC_COMMAND[@]}" --health-probe-bind-address="127.0.0.1:$health" \
            --client-go-qps="${BUDGET%/*}" --client-go-burst="${BUDGET#*/}"
        row "Metacontroller 4.17.2" "$n" restart "$tag"
    fi
    if has_mode leader; then
        heading "Metacontroller: N=$n, leader change"
        before=$(python3 -c 'import sys; sys.path.insert(0, "bench"); from restart_wait import sync_calls; print(sync_calls(sys.argv[1]))' \
            "http://127.0.0.1:$PORT/metrics")
        KUBECONFIG=$DIR/driver.kubeconfig "${MC_COMMAND[@]}" --health-probe-bind-address="127.0.0.1:$health" \
            --client-go-qps=1000000 --client-go-burst=1000000 "${elect[@]}" >"$RAW/$tag-leader.log" 2>&1 &
        DRIVER_PID=$!
        wait_ready "http://127.0.0.1:$health/readyz" "$DRIVER_PID" "$RAW/$tag-leader.log" "Metacontroller"
        # Its calls through metahook serve: every parent confirmed, then quiet.
        python3 bench/restart_wait.py quiet --metrics "http://127.0.0.1:$PORT/metrics" --at-least "$n" \
            --before "$before" --timeout $((300 + n / 5))
        KUBECONFIG=$DIR/driver.kubeconfig "${MC_COMMAND[@]}" --health-probe-bind-address="127.0.0.1:$STANDBY_PORT" \
            --client-go-qps="${BUDGET%/*}" --client-go-burst="${BUDGET#*/}" "${elect[@]}" \
            >"$RAW/$tag-standby.log" 2>&1 &
        STANDBY_PID=$!
        wait_ready "http://127.0.0.1:$STANDBY_PORT/healthz" "$STANDBY_PID" "$RAW/$tag-standby.log" "the standby"
        sleep 5
        KUBECONFIG=$DIR/driver.kubeconfig python3 bench/restart_wait.py leader --namespace bench \
            --hello "$(hello_name $((n / 2 + 1)))" --replicas $((REPLICAS + 1)) --lease metacontroller \
            --kill "$DRIVER_PID" --standby "$STANDBY_PID" --metrics "http://127.0.0.1:$PORT/metrics" \
            --out "$RAW/$tag-leader.json" --timeout "$(wait_bound "$n")"
        wait "$DRIVER_PID" 2>/dev/null || true
        DRIVER_PID=
        stop_standby
        row "Metacontroller 4.17.2" "$n" leader "$tag"
    fi
    stop_hooks
    tests/cluster/down.sh --wipe "$DIR"
}

for n in $SIZES; do
    case " $ENGINES " in *" driver "*) run_driver "$n" ;; esac
    if [ -n "$MC" ]; then run_metacontroller "$n"; fi
done

table="| engine | parents | steady state: a change applied, p50 / p90, s | then | change applied, s from the start (restart) or the kill | Lease taken, s | caches synced (/readyz), s | applied after the Lease taken, s | applied after synced, s | sync calls before it landed (sampled) | load average before |
|---|---|---|---|---|---|---|---|---|---|---|
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
