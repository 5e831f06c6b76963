#!/usr/bin/env bash
# Memory per parent: the bundled driver and the real Metacontroller
# (v4.17.2, its hooks answered by `metahook serve` on loopback) holding N
# parents with their children, on the real control plane (tests/cluster/,
# the kubelet stand-in), each run on a fresh control plane of its own. A
# benchmark, not a timed test (issue 34).
#
# The parents are Hellos with `replicas: 0`, so that no pods exist and the
# stand-in has nothing to do; each one's child is its Deployment (and the
# controller-manager makes the Deployment's ReplicaSet, which neither
# engine watches). For each engine and each N (SIZES):
#   1. the engine, release build (the driver: `metahook serve --drive`,
#      only the hello controller, with --debug-driver-listen), with a client
#      certificate of its own;
#   2. 5 s idle, then N Hellos, BATCH at a time (one `kubectl create -f` a
#      batch); every Hello listed every few seconds (the Deployments by
#      their metadata only) until each has its Deployment and
#      observedGeneration == generation ("converged"); then until the
#      engine is quiet (no reconcile, no sync hook call for 10 s), then
#      SETTLE seconds more: the steady state (median RSS of the last 20 s;
#      /proc/PID/smaps_rollup and the driver's /debug/driver saved);
#   3. a forced relist: kube-apiserver stopped, etcd compacted, started
#      again (the control endpoint, as tests/e2e/faults.rs does); the peak
#      RSS from there (VmHWM, reset first) until the engine is quiet again,
#      every Hello still converged, 30 s after; the engine's LISTs in that
#      time from the audit log;
#   4. all along: VmRSS and utime+stime from /proc every second, the
#      counters every 2 s (the driver's /metrics; Metacontroller's sync
#      hook calls from the hook server's).
# Reports per engine and N: converge time after the last create, idle,
# initial peak (VmHWM), steady and relist-peak RSS, CPU seconds per 1,000
# reconciles (the driver's reconciles; Metacontroller's sync hook calls:
# its own CPU, and with its hook server's); per engine the slope of steady
# RSS over N (KiB per parent+child pair) and its intercept (the floor).
# Prints Markdown tables and writes them, the raw samples and a PNG (RSS
# and converged parents over time, both engines; matplotlib in a venv at
# target/bench-venv, bench/requirements.txt) under target/bench/.
#
#   bench/driver-memory.sh                          # SIZES="5000 10000", both engines
#   SIZES="500 1000" bench/driver-memory.sh         # a quick one
#   ENGINES=driver SIZES=5000 ALLOCATORS="glibc jemalloc mimalloc" bench/driver-memory.sh
#       # also the driver under each global allocator at ALLOC_SIZE (5000):
#       # steady and relist-peak RSS. jemalloc and mimalloc are the
#       # binary's cargo features of those names, each build copied to
#       # target/bench/bin/metahook-<allocator>; glibc-image is glibc with
#       # MALLOC_MMAP_THRESHOLD_=131072 as the Dockerfile sets it,
#       # glibc-arenas2 glibc with MALLOC_ARENA_MAX=2 (two arenas, not one
#       # per thread up to 8 per core). A
#       # glibc run of the main sizes at ALLOC_SIZE counts for glibc.
#   WRITE_DOCS_PNG=1 bench/driver-memory.sh       # the chart to docs/images/driver-memory.png too
#   STAMP=20260101T000000Z SIZES=10000 bench/driver-memory.sh
#       # more runs into an earlier run's directory (target/bench/driver-memory-STAMP/):
#       # the report and the chart cover them all
#   SIZES= ENGINES=driver ALLOCATORS=glibc-arenas2 bench/driver-memory.sh
#       # the allocator runs only (SIZES empty: no main sizes)
#
# Set METAHOOK_GOCACHE / METAHOOK_GOMODCACHE (tests/cluster/go-env.sh) to
# reuse a warm Go build of the control plane. Every wait is bounded; the
# control plane and the engines are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

SIZES=${SIZES-"5000 10000"}
ENGINES=${ENGINES-"driver metacontroller"}
ALLOCATORS=${ALLOCATORS-}
ALLOC_SIZE=${ALLOC_SIZE:-5000}
BUDGET=${BUDGET:-none}
BATCH=${BATCH:-500}
SETTLE=${SETTLE:-60}
# Not bench/driver.sh's 18090: the two may run at once (in other work trees).
PORT=${PORT:-18290}
USER_NAME=metahook-bench
OUT=target/bench
DIR=$root/target/cluster/bench-memory
# STAMP=<an earlier run's>: add to its directory; the report covers every run there.
STAMP=${STAMP:-$(date -u +%Y%m%dT%H%M%SZ)}
RAW=$OUT/driver-memory-$STAMP
REPORT=$RAW.md
PNG=$RAW.png
VENV=${METAHOOK_BENCH_VENV:-$root/target/bench-venv}
mkdir -p "$RAW" "$OUT/bin"
BIN=${CARGO_TARGET_DIR:-target}/release/metahook
source bench/driver-lib.sh
trap driver_lib_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
started=$SECONDS

# The allocators' builds first (each copied aside), the default last, so
# that $BIN is the default build.
for alloc in $ALLOCATORS; do
    case $alloc in
    glibc | glibc-image | glibc-arenas2) ;;
    jemalloc | mimalloc)
        build_release --features "$alloc"
        grep -qa "$alloc" "$BIN" || { echo "$BIN: no $alloc in it" >&2; exit 1; }
        cp "$BIN" "$OUT/bin/metahook-$alloc"
        ;;
    *) echo "ALLOCATORS: glibc, glibc-image, glibc-arenas2, jemalloc or mimalloc, not $alloc" >&2; exit 1 ;;
    esac
done
build_release
case " $ENGINES " in *" metacontroller "*) build_metacontroller ;; esac
if ! "$VENV/bin/python" -c 'import matplotlib' 2>/dev/null; then
    echo "== the bench's venv ($VENV): matplotlib"
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r bench/requirements.txt
fi

# measure ENGINE N [ALLOCATOR]: one run on a fresh control plane; its
# figures in $RAW/ENGINE-ALLOCATOR-nN.json.
measure() {
    local engine=$1 n=$2 alloc=${3:-glibc} bin=$BIN env=
    local tag="$1-${3:-glibc}-n$2" loadavg args=() ua=metahook/ poll=${POLL:-5}
    # The converged Hellos listed every 2 s up to 2,000, else every 5 s.
    if [ -z "${POLL:-}" ] && [ "$n" -le 2000 ]; then poll=2; fi
    heading "$engine ($alloc): N=$n"
    case $alloc in
    jemalloc | mimalloc) bin=$OUT/bin/metahook-$alloc ;;
    glibc-image) env=MALLOC_MMAP_THRESHOLD_=131072 ;;
    glibc-arenas2) env=MALLOC_ARENA_MAX=2 ;;
    esac
    if [ "$engine" = driver ]; then
        fresh_cluster
        mkdir -p "$DIR/controllers"
        cp chart/metacontroller/hello.yaml "$DIR/controllers/"
        BIN=$bin DRIVER_ENV=$env start_driver "$RAW/$tag-driver.log" "$DIR/controllers" "$BUDGET" \
            --debug-driver-listen "127.0.0.1:$((PORT + 2))"
        args=(--debug "http://127.0.0.1:$((PORT + 2))/debug/driver")
    else
        fresh_cluster --metacontroller
        start_metacontroller "$RAW/$tag" "$BUDGET"
        args=(--hooks-pid "$HOOKS_PID")
        ua=metacontroller/
    fi
    python3 bench/driver_memory.py run --engine "$engine" --allocator "$alloc" --pid "$DRIVER_PID" \
        --metrics "http://127.0.0.1:$PORT/metrics" --control "$METAHOOK_CLUSTER_CONTROL" \
        --count "$n" --batch "$BATCH" --settle "$SETTLE" --timeout $((900 + n * 3 / 10)) --poll "$poll" \
        --out "$RAW/$tag.json" "${args[@]}"
    stop_driver
    stop_hooks
    local r=$RAW/$tag.json
    audit "$(json "$r" 'd["relist_start"]')" "$(json "$r" 'd["relist_end"]')" "$ua" >"$RAW/$tag-audit-relist.json"
    tests/cluster/down.sh --wipe "$DIR"
    json "$r" '"steady %.1f MiB, relist peak %.1f MiB, converged %.1f s after the last create" % (d["steady"]["rss_kb"] / 1024, d["relist_peak_kb"] / 1024, d["converge_seconds"])'
}

for n in $SIZES; do
    for engine in $ENGINES; do measure "$engine" "$n"; done
done
for alloc in $ALLOCATORS; do
    # The default allocator's run at this size is there already.
    if [ "$alloc" = glibc ] && [ -f "$RAW/driver-glibc-n$ALLOC_SIZE.json" ]; then continue; fi
    measure driver "$ALLOC_SIZE" "$alloc"
done

"$VENV/bin/python" bench/driver_memory.py plot --raw "$RAW" --out "$PNG" >/dev/null
if [ -n "${WRITE_DOCS_PNG:-}" ]; then
    mkdir -p docs/images
    cp "$PNG" docs/images/driver-memory.png
fi
{
    machine_line
    echo
    python3 bench/driver_memory.py report --raw "$RAW" --allocator-size "$ALLOC_SIZE"
    echo
    echo "The chart: $PNG$([ -n "${WRITE_DOCS_PNG:-}" ] && echo " (and docs/images/driver-memory.png)"). The whole run: $(((SECONDS - started) / 60)) min."
} | tee "$REPORT"
echo
echo "(written to $REPORT; raw samples, smaps_rollup, /debug/driver and logs in $RAW/)"
