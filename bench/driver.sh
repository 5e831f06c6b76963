#!/usr/bin/env bash
# The bundled driver against the real control plane (tests/cluster/: etcd,
# kube-apiserver, kube-controller-manager built from Kubernetes' Go modules,
# a kubelet stand-in), on loopback. A benchmark, not a timed test.
#
# For each N (Hellos) and each client-side budget (--kube-qps/--kube-burst),
# on a fresh control plane:
#   1. `metahook serve --drive` (release build; only the hello controller,
#      chart/metacontroller/hello.yaml unchanged) with a client certificate of
#      its own, so the audit log tells its requests apart;
#   2. one `kubectl create -f` of N Hellos (replicas: 1) in a fresh
#      namespace; the time until every Hello has its Deployment and a
#      status whose observedGeneration is its generation ("converged"),
#      then until every status says its replica is ready;
#   3. reconciles/s and the driver's API requests per reconcile by verb
#      (audit log, from the create until the driver is quiet);
#   4. a second driver started on the converged cluster with
#      resyncPeriodSeconds (a copy of hello.yaml): its first pass (a
#      restart: a fresh cache, every parent reconciled) and then its first
#      periodic resync (every cached parent replayed, as every 30 minutes
#      by default). The driver's writes in each, from the audit log: a
#      no-op resync must write nothing;
#   5. the driver's peak RSS (VmHWM) in each phase.
# Prints a Markdown table; writes it and the raw figures under target/bench/.
#
#   bench/driver.sh                                # N = 100 and 1000, budgets 5/10 and none
#   SIZES=100 BUDGETS=none bench/driver.sh         # one run
#   ENGINES="driver metacontroller" bench/driver.sh
#       # also the real Metacontroller (tests/metacontroller/build.sh; its
#       # --client-go-qps/--client-go-burst set to the budget) calling
#       # `metahook serve` on loopback, on a fresh control plane of its own
#       # with the same Hellos: converged, all ready, requests by verb (audit
#       # log, the same client certificate), peak RSS.
#   SHARDS=3 SIZES=3000 BUDGETS=none ENGINES= bench/driver.sh
#       # also K drivers sharing the Hellos by label (--shard-selector
#       # metahook.dev/shard=s<i>; Hello i labelled s<i mod K>), each with a
#       # client certificate of its own: converged, all ready, and per shard
#       # its requests, the objects it wrote and its peak RSS; objects
#       # written by more than one shard (0 when sharding works).
#
# Set METAHOOK_GOCACHE / METAHOOK_GOMODCACHE (tests/cluster/go-env.sh) to
# reuse a warm Go build of the control plane. Every wait is bounded; the
# control plane and the drivers are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

SIZES=${SIZES:-"100 1000"}
ENGINES=${ENGINES-driver}
SHARDS=${SHARDS:-0}
BUDGETS=${BUDGETS:-"5/10 none"}
PORT=${PORT:-18090}
USER_NAME=metahook-bench
OUT=target/bench
DIR=$root/target/cluster/bench
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RAW=$OUT/driver-$STAMP
REPORT=$OUT/driver-$STAMP.md
mkdir -p "$RAW"
BIN=${CARGO_TARGET_DIR:-target}/release/metahook
source bench/driver-lib.sh

SHARD_PIDS=()
stop_shards() {
    local pid
    for pid in "${SHARD_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${SHARD_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    SHARD_PIDS=()
}
cleanup() {
    stop_shards
    driver_lib_cleanup
}
trap cleanup EXIT

build_release

ROWS=()
DETAILS=()
run() {
    local n=$1 budget=$2 tag="n$1-${2/\//-}" loadavg
    heading "N=$n, budget $budget"
    fresh_cluster
    mkdir -p "$DIR/controllers/plain" "$DIR/controllers/resync"
    cp chart/metacontroller/hello.yaml "$DIR/controllers/plain/"
    # The periodic resync comes after the restart pass has written what it
    # writes (with a budget: about one apply per Hello at --kube-qps).
    local period=30
    if [ "$budget" != none ]; then period=$(python3 -c "print(int($n / ${budget%/*} * 1.5) + 30)"); fi
    sed "s/^spec:\$/spec:\n  resyncPeriodSeconds: $period/" chart/metacontroller/hello.yaml >"$DIR/controllers/resync/hello.yaml"
    grep -q "resyncPeriodSeconds: $period" "$DIR/controllers/resync/hello.yaml"

    local timeout=600
    if [ "$budget" != none ]; then timeout=$(python3 -c "print(600 + int($n * 12 / ${budget%/*}))"); fi
    start_driver "$RAW/$tag-driver-1.log" "$DIR/controllers/plain" "$budget"
    python3 bench/driver_bench.py converge --namespace bench --count "$n" \
        --metrics "http://127.0.0.1:$PORT/metrics" --timeout "$timeout" --out "$RAW/$tag-converge.json"
    local rss1
    rss1=$(peak_kb "$DRIVER_PID")
    stop_driver
    local c=$RAW/$tag-converge.json
    audit "$(json "$c" 'd["start"]')" "$(json "$c" 'd["quiet_at"]')" >"$RAW/$tag-audit-converge.json"

    local restarted
    restarted=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
    start_driver "$RAW/$tag-driver-2.log" "$DIR/controllers/resync" "$budget"
    python3 bench/driver_bench.py resync --count "$n" --metrics "http://127.0.0.1:$PORT/metrics" \
        --start "$restarted" --timeout $((timeout + period * 2)) --out "$RAW/$tag-resync.json"
    local rss2
    rss2=$(peak_kb "$DRIVER_PID")
    stop_driver
    local r=$RAW/$tag-resync.json
    audit "$(json "$r" 'd["start"]')" "$(json "$r" 'd["first_pass_done"]')" >"$RAW/$tag-audit-restart.json"
    audit "$(json "$r" 'd["first_pass_done"]')" "$(json "$r" 'd["resync_done"]')" >"$RAW/$tag-audit-resync.json"
    tests/cluster/down.sh --wipe "$DIR"

    ROWS+=("$(python3 - "$RAW" "$tag" "$n" "$budget" "$loadavg" "$rss1" "$rss2" "$period" <<'EOF'
import json, sys
raw, tag, n, budget, loadavg, rss1, rss2, period = sys.argv[1:]
load = lambda name: json.load(open(f"{raw}/{tag}-{name}.json"))
c, a, r = load("converge"), load("audit-converge"), load("resync")
restart, resync = load("audit-restart"), load("audit-resync")
reconciles = c["metrics_quiet"]["reconciles"] - c["metrics_before"]["reconciles"]
to_converged = c["metrics_converged"]["reconciles"] - c["metrics_before"]["reconciles"]
per = ", ".join(f"{v} {a['verbs'][v] / reconciles:.2f}" for v in sorted(a["verbs"], key=lambda v: -a["verbs"][v]))
resync_reconciles = r["metrics_resync"]["reconciles"] - r["metrics_first"]["reconciles"]
budget_text = "unbounded" if budget == "none" else f"{budget.replace('/', ' / ')}"
throttled = c["metrics_quiet"]["throttled_seconds"]
print(
    f"| {n} | {budget_text} | {c['created_seconds']:.1f} | **{c['converged_seconds']:.1f}** ({to_converged}) "
    f"| {c['ready_seconds']:.1f} | {reconciles} | {to_converged / c['converged_seconds']:.1f} "
    f"| {a['total'] / reconciles:.2f}: {per} | {throttled:.0f} "
    f"| **{resync['writes']}** of {resync['total']} requests, {resync_reconciles} reconciles "
    f"| {restart['writes']} of {restart['total']} | {int(rss1) // 1024} / {int(rss2) // 1024} | {loadavg} |"
)
EOF
)")
    DETAILS+=("$(python3 - "$RAW" "$tag" "$n" "$budget" <<'EOF'
import json, sys
raw, tag, n, budget = sys.argv[1:]
load = lambda name: json.load(open(f"{raw}/{tag}-{name}.json"))
parts = []
for phase in ("converge", "restart", "resync"):
    a = load(f"audit-{phase}")
    detail = ", ".join(f"{k} {v}" for k, v in sorted(a["detail"].items(), key=lambda kv: -kv[1]))
    parts.append(f"{phase}: {detail or 'none'}")
print(f"- N={n}, budget {budget}: " + "; ".join(parts))
EOF
)")
    echo "${ROWS[-1]}"
}

MC_ROWS=()
# The same run under the real Metacontroller, its hooks answered by
# `metahook serve` on loopback. Metacontroller is DRIVER_PID here, so that
# cleanup stops it.
run_metacontroller() {
    local n=$1 budget=$2 tag="mc-n$1-${2/\//-}" loadavg
    heading "Metacontroller: N=$n, budget $budget"
    fresh_cluster --metacontroller
    start_metacontroller "$RAW/$tag" "$budget"
    local timeout=600
    if [ "$budget" != none ]; then timeout=$(python3 -c "print(600 + int($n * 12 / ${budget%/*}))"); fi
    # Quiet: 20 s (Metacontroller has no /metrics of ours to watch).
    python3 bench/driver_bench.py converge --namespace bench --count "$n" --quiet 20 \
        --timeout "$timeout" --out "$RAW/$tag-converge.json"
    local rss
    rss=$(peak_kb "$DRIVER_PID")
    stop_driver
    stop_hooks
    local c=$RAW/$tag-converge.json
    audit "$(json "$c" 'd["start"]')" "$(json "$c" 'd["quiet_at"]')" metacontroller/ >"$RAW/$tag-audit-converge.json"
    tests/cluster/down.sh --wipe "$DIR"
    MC_ROWS+=("$(python3 bench/driver_bench.py mc-row --raw "$RAW" --tag "$tag" --count "$n" \
        --budget "$budget" --loadavg "$loadavg" --rss-kb "$rss")")
    echo "${MC_ROWS[-1]}"
}

SHARD_ROWS=()
# K drivers, one per shard, on one fresh control plane.
run_sharded() {
    local n=$1 budget=$2 k=$SHARDS tag="shards$SHARDS-n$1-${2/\//-}"
    local loadavg flags=() users=() rss=() i
    heading "$k shards: N=$n, budget $budget each"
    if [ "$budget" != none ]; then flags=(--kube-qps "${budget%/*}" --kube-burst "${budget#*/}"); fi
    fresh_cluster
    mkdir -p "$DIR/controllers/plain"
    cp chart/metacontroller/hello.yaml "$DIR/controllers/plain/"
    for i in $(seq 0 $((k - 1))); do
        users+=("$USER_NAME-s$i")
        curl -sf -X POST "$METAHOOK_CLUSTER_CONTROL/kubeconfig?user=$USER_NAME-s$i&group=system:masters" >"$DIR/shard-$i.kubeconfig"
        KUBECONFIG=$DIR/shard-$i.kubeconfig RUST_LOG=${RUST_LOG:-info} \
            "$BIN" serve --drive --listen "127.0.0.1:$((PORT + 10 + i))" \
            --controllers "$DIR/controllers/plain" --shard-selector "metahook.dev/shard=s$i" \
            "${flags[@]}" >"$RAW/$tag-s$i.log" 2>&1 &
        SHARD_PIDS+=($!)
    done
    for i in $(seq 0 $((k - 1))); do
        for _ in $(seq 1 300); do
            curl -sf "http://127.0.0.1:$((PORT + 10 + i))/readyz" >/dev/null && break
            kill -0 "${SHARD_PIDS[$i]}" 2>/dev/null || { tail -n 20 "$RAW/$tag-s$i.log" >&2; exit 1; }
            sleep 0.2
        done
    done
    local timeout=600
    if [ "$budget" != none ]; then timeout=$(python3 -c "print(600 + int($n * 12 / ${budget%/*}))"); fi
    python3 bench/driver_bench.py converge --namespace bench --count "$n" --shards "$k" --quiet 10 \
        --timeout "$timeout" --out "$RAW/$tag-converge.json"
    for i in $(seq 0 $((k - 1))); do rss+=("$(peak_kb "${SHARD_PIDS[$i]}")"); done
    stop_shards
    local c=$RAW/$tag-converge.json
    python3 bench/driver_bench.py shard-audit --log "$METAHOOK_CLUSTER_AUDIT_LOG" \
        --since "$(json "$c" 'd["start"]')" --until "$(json "$c" 'd["quiet_at"]')" "${users[@]}" >"$RAW/$tag-audit.json"
    tests/cluster/down.sh --wipe "$DIR"
    SHARD_ROWS+=("$(python3 - "$RAW" "$tag" "$n" "$budget" "$loadavg" "${rss[*]}" "${users[@]}" <<'EOF'
import json, sys
raw, tag, n, budget, loadavg, rss = sys.argv[1:7]
users = sys.argv[7:]
c = json.load(open(f"{raw}/{tag}-converge.json"))
a = json.load(open(f"{raw}/{tag}-audit.json"))
shards = []
for user, kb in zip(users, rss.split()):
    u = a["users"][user]
    verbs = ", ".join(f"{v} {u['verbs'][v]}" for v in sorted(u["verbs"], key=lambda v: -u["verbs"][v]))
    shards.append(f"{user.rsplit('-', 1)[1]}: {u['total']} ({verbs}), {u['objects_written']} objects, {int(kb) // 1024} MiB")
total = sum(a["users"][u]["total"] for u in users)
budget_text = "unbounded" if budget == "none" else budget.replace("/", " / ") + " each"
print(
    f"| {len(users)} × {int(n) // len(users)} | {budget_text} | {c['created_seconds']:.1f} | **{c['converged_seconds']:.1f}** "
    f"| {c['ready_seconds']:.1f} | {'; '.join(shards)} | {total / int(n):.2f} | {len(a['written_by_several'])} | {loadavg} |"
)
EOF
)")
    echo "${SHARD_ROWS[-1]}"
}

case " $ENGINES " in *" metacontroller "*) build_metacontroller ;; esac

for n in $SIZES; do
    for budget in $BUDGETS; do
        case " $ENGINES " in *" driver "*) run "$n" "$budget" ;; esac
        if [ -n "$MC" ]; then run_metacontroller "$n" "$budget"; fi
        if [ "$SHARDS" -gt 0 ]; then run_sharded "$n" "$budget"; fi
    done
done

{
    machine_line
    echo
    if [ ${#ROWS[@]} -gt 0 ]; then
        echo "| N | budget (QPS / burst) | create s | converged s (reconciles) | all ready s | reconciles until quiet | reconciles/s to converged | API requests per reconcile, by verb | s waiting on the budget | writes in the periodic no-op resync | writes in the restart pass | driver peak RSS MiB (run / restart) | load average before |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        printf '%s\n' "${ROWS[@]}"
        echo
        echo "Requests by verb and resource (audit log: user $USER_NAME, User-Agent metahook/*):"
        echo
        printf '%s\n' "${DETAILS[@]}"
    fi
    if [ ${#MC_ROWS[@]} -gt 0 ]; then
        echo
        echo "Metacontroller ($(basename "$MC_ARCHIVE" .tar.gz)) on its own fresh control plane, same Hellos, hooks by metahook serve (audit log: user $USER_NAME):"
        echo
        echo "| N | budget (--client-go-qps / burst) | create s | converged s | all ready s | API requests, by verb | requests per Hello | peak RSS MiB | load average before |"
        echo "|---|---|---|---|---|---|---|---|---|"
        printf '%s\n' "${MC_ROWS[@]}"
    fi
    if [ ${#SHARD_ROWS[@]} -gt 0 ]; then
        echo
        echo "$SHARDS drivers, one per shard (--shard-selector metahook.dev/shard=s<i>), on one fresh control plane (audit log: one user per shard):"
        echo
        echo "| shards × Hellos each | budget | create s | converged s | all ready s | per shard: API requests (by verb), Hellos and Deployments written, peak RSS | requests per Hello | objects written by more than one shard | load average before |"
        echo "|---|---|---|---|---|---|---|---|---|"
        printf '%s\n' "${SHARD_ROWS[@]}"
    fi
} | tee "$REPORT"
echo
echo "(written to $REPORT; raw figures and driver logs in $RAW/)"
