#!/usr/bin/env bash
# What `metahook plan --live` costs on a big cluster: N Hellos (`replicas:
# 0`) converged by the driver on the project's control plane (tests/cluster/,
# the kubelet stand-in), the driver stopped, CHANGED of them scaled, then
# the plan of the hello controller run over the namespace at its default
# client budget (5 QPS, burst 10). A benchmark, not a timed test.
#
# For each N (SIZES): the plan's wall time, its peak resident memory
# (getrusage of the waited child: the whole run's high-water mark), the
# requests it sent (the API server's audit log, by its `metahook-plan/`
# user agent) and, checked, its exit code (2: changes planned) and the
# parents it reports changed (exactly the CHANGED scaled ones).
#
# Prints a Markdown table and appends it, dated, to bench/runs/plan-live.md.
#
#   bench/plan-live.sh                        # N = 1000
#   SIZES="1000 10000" bench/plan-live.sh
#
# Every wait is bounded; the control plane and the driver are stopped on
# exit.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

SIZES=${SIZES:-1000}
CHANGED=${CHANGED:-10}
PORT=${PORT:-18095}
USER_NAME=metahook-bench
OUT=target/bench
DIR=${CLUSTER_DIR:-$root/target/cluster/bench-plan}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RAW=$OUT/plan-live-$STAMP
mkdir -p "$RAW"
BIN=${CARGO_TARGET_DIR:-target}/release/metahook
source bench/driver-lib.sh
trap driver_lib_cleanup EXIT

build_release

ROWS=()
for n in $SIZES; do
    heading "N=$n"
    fresh_cluster
    mkdir -p "$DIR/controllers"
    cp chart/metacontroller/hello.yaml "$DIR/controllers/"
    start_driver "$RAW/n$n-driver.log" "$DIR/controllers" none
    python3 bench/driver_bench.py converge --namespace bench --count "$n" --replicas 0 \
        --metrics "http://127.0.0.1:$PORT/metrics" --quiet 10 --timeout $((600 + n / 5)) \
        --out "$RAW/n$n-converge.json"
    stop_driver
    changed=()
    for i in $(seq 1 "$CHANGED"); do
        changed+=("$(printf 'hello-%04d' $((i * n / (CHANGED + 1))))")
    done
    for name in "${changed[@]}"; do
        kubectl patch hello "$name" -n bench --type merge -p '{"spec":{"replicas":1}}' >/dev/null
    done
    since=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
    # The plan, waited for by Python so that its peak RSS is the child's
    # getrusage high-water mark; bounded.
    KUBECONFIG=$DIR/driver.kubeconfig python3 - "$BIN" "$RAW/n$n-plan.json" "$RAW/n$n-cost.json" $((300 + n / 10)) <<'EOF'
import json, resource, subprocess, sys, time
binary, plan_out, cost_out, bound = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
start = time.monotonic()
with open(plan_out, "w") as out:
    code = subprocess.run([binary, "plan", "--live", "--controller", "hello", "--namespace", "bench", "--qps", "5", "--burst", "10",
                           "--output", "json"], stdout=out, timeout=bound).returncode
wall = time.monotonic() - start
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
json.dump({"exit": code, "wall_seconds": wall, "peak_kib": peak_kib}, open(cost_out, "w"))
EOF
    until=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
    audit "$since" "$until" metahook-plan/ >"$RAW/n$n-audit.json"
    ROWS+=("$(python3 - "$n" "$RAW/n$n" "$loadavg" "${changed[@]}" <<'EOF'
import json, sys
n, prefix, loadavg, *changed = sys.argv[1:]
cost = json.load(open(f"{prefix}-cost.json"))
plan = json.load(open(f"{prefix}-plan.json"))
audit = json.load(open(f"{prefix}-audit.json"))
assert cost["exit"] == 2, f"the plan exited {cost['exit']}, not 2 (changes planned)"
reported = sorted(p["name"] for p in plan["parents"])
assert reported == sorted(changed), f"the plan reported {reported}, not {sorted(changed)}"
assert audit["writes"] == 0, f"the plan wrote: {audit['verbs']}"
verbs = ", ".join(f"{c} {v}" for v, c in sorted(audit["verbs"].items()))
print(f"| {int(n):,} | {len(changed)} | {cost['wall_seconds']:.1f} | {cost['peak_kib'] / 1024:.0f} | {audit['total']} ({verbs}) | {loadavg} |")
EOF
)")
    echo "${ROWS[-1]}"
    tests/cluster/down.sh --wipe "$DIR"
done

{
    echo
    echo "## $STAMP"
    echo
    machine_line
    echo
    echo "| parents | changed | plan wall, s | peak RSS, MiB | API requests | load average |"
    echo "|---|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
} | tee -a bench/runs/plan-live.md
