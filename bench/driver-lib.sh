# Sourced by bench/driver.sh and bench/driver-memory.sh: the pieces both
# use to run an engine (the bundled driver, or the real Metacontroller with
# `metahook serve` answering its hooks on loopback) against a fresh
# control plane (tests/cluster/, the kubelet stand-in). Expects, set by the
# script: root (the repository), DIR (the control plane's directory), PORT,
# USER_NAME (the engine's client certificate) and BIN (the metahook binary).
# DRIVER_PID is the engine (the driver, or Metacontroller), HOOKS_PID the
# hook server beside Metacontroller; driver_lib_cleanup stops both and the
# control plane.

DRIVER_PID=
HOOKS_PID=
MC=
MC_ARCHIVE=${METAHOOK_METACONTROLLER_ARCHIVE:-$root/../shared/metacontroller/metacontroller-v4.17.2.tar.gz}

stop_driver() {
    [ -n "$DRIVER_PID" ] || return 0
    kill -TERM "$DRIVER_PID" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$DRIVER_PID" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$DRIVER_PID" 2>/dev/null || true
    wait "$DRIVER_PID" 2>/dev/null || true
    DRIVER_PID=
}
stop_hooks() {
    [ -n "$HOOKS_PID" ] || return 0
    kill -TERM "$HOOKS_PID" 2>/dev/null || true
    wait "$HOOKS_PID" 2>/dev/null || true
    HOOKS_PID=
}
driver_lib_cleanup() {
    stop_driver
    stop_hooks
    tests/cluster/down.sh "$DIR" || true
}

# build_release [CARGO FLAG...]: the release binary, $BIN.
build_release() {
    echo "== building the release binary $*"
    cargo build --release --locked --bin metahook "$@" 2>&1 | grep -E '^(error|warning)' || true
    [ -x "$BIN" ] || { echo "build failed: no $BIN" >&2; exit 1; }
}

peak_kb() { awk '/^VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'d': d}))" "$@"; }

# wait_ready URL PID LOG WHAT: until URL answers (60 s at most), failing
# with LOG's tail if PID exits first.
wait_ready() {
    for _ in $(seq 1 300); do
        curl -sf "$1" >/dev/null && return 0
        kill -0 "$2" 2>/dev/null || { tail -n 20 "$3" >&2; exit 1; }
        sleep 0.2
    done
    echo "$4 was not ready after 60 s; see $3" >&2
    exit 1
}

# fresh_cluster [--metacontroller]: a fresh control plane in $DIR (its
# environment exported: KUBECONFIG, METAHOOK_CLUSTER_*), metahook's CRDs
# (and Metacontroller's), a kubeconfig for $USER_NAME at
# $DIR/driver.kubeconfig, the namespace bench.
# heading TEXT: says which run starts, with the load average before it, which
# it leaves in the caller's `loadavg` (bash's locals are seen by callees).
heading() {
    loadavg=$(cut -d' ' -f1-3 /proc/loadavg)
    echo "== $1 (load average $loadavg)"
}

fresh_cluster() {
    local cluster_env
    tests/cluster/down.sh --wipe "$DIR"
    # A thousand Hellos' pods cannot run on two cores: the kubelet stand-in
    # marks them Ready instead (tests/cluster/standin.go).
    cluster_env="$(tests/cluster/up.sh --standin "$DIR")" # assigned first: set -e sees a failure
    eval "$cluster_env"
    kubectl apply --server-side -f chart/crds/ >/dev/null
    if [ "${1:-}" = --metacontroller ]; then
        tar -xzf "$MC_ARCHIVE" -O manifests/production/metacontroller-crds-v1.yaml |
            kubectl apply --server-side -f - >/dev/null
    fi
    kubectl wait --for condition=Established crd --all --timeout=60s >/dev/null
    curl -sf -X POST "$METAHOOK_CLUSTER_CONTROL/kubeconfig?user=$USER_NAME&group=system:masters" >"$DIR/driver.kubeconfig"
    kubectl create namespace bench >/dev/null
}

# start_driver LOG CONTROLLERS_DIR BUDGET [FLAG...]: sets DRIVER_PID; waits
# for /readyz. DRIVER_ENV (e.g. MALLOC_MMAP_THRESHOLD_=131072) is added to
# its environment.
start_driver() {
    local log=$1 controllers=$2 budget=$3 flags=()
    shift 3
    if [ "$budget" != none ]; then flags=(--kube-qps "${budget%/*}" --kube-burst "${budget#*/}"); fi
    # shellcheck disable=SC2086 # DRIVER_ENV: NAME=VALUE words
    env ${DRIVER_ENV:-} KUBECONFIG="$DIR/driver.kubeconfig" RUST_LOG="${RUST_LOG:-info}" \
        "$BIN" serve --drive --listen "127.0.0.1:$PORT" \
        --controllers "$controllers" "${flags[@]}" "$@" >"$log" 2>&1 &
    DRIVER_PID=$!
    wait_ready "http://127.0.0.1:$PORT/readyz" "$DRIVER_PID" "$log" "the driver"
}

# Metacontroller's binary in $MC (tests/metacontroller/build.sh).
build_metacontroller() { MC=$(tests/metacontroller/build.sh); }

# start_metacontroller LOG_PREFIX BUDGET: `metahook serve` on $PORT
# (HOOKS_PID; hello.yaml's webhooks pointed at it) and Metacontroller
# (DRIVER_PID, so that cleanup stops it; health on PORT+1), on a cluster
# from `fresh_cluster --metacontroller`.
start_metacontroller() {
    local prefix=$1 budget=$2 qps=1000000 burst=1000000 health=$((PORT + 1))
    if [ "$budget" != none ]; then qps=${budget%/*}; burst=${budget#*/}; fi
    "$BIN" serve --listen "127.0.0.1:$PORT" >"$prefix-hooks.log" 2>&1 &
    HOOKS_PID=$!
    wait_ready "http://127.0.0.1:$PORT/readyz" "$HOOKS_PID" "$prefix-hooks.log" "metahook serve"
    # hello.yaml's webhooks name the chart's Service; here, loopback URLs.
    python3 bench/driver_bench.py loopback-hooks --port "$PORT" <chart/metacontroller/hello.yaml |
        kubectl apply -f - >/dev/null
    # client-go names the program in its User-Agent (metacontroller/...).
    KUBECONFIG=$DIR/driver.kubeconfig bash -c 'exec -a metacontroller "$0" "$@"' "$MC" \
        --discovery-interval=5s --metrics-address=127.0.0.1:0 \
        --health-probe-bind-address="127.0.0.1:$health" \
        --client-go-qps="$qps" --client-go-burst="$burst" >"$prefix-metacontroller.log" 2>&1 &
    DRIVER_PID=$!
    wait_ready "http://127.0.0.1:$health/readyz" "$DRIVER_PID" "$prefix-metacontroller.log" "Metacontroller"
}

audit() { # SINCE UNTIL [USER-AGENT PREFIX] -> JSON
    python3 bench/driver_bench.py audit --log "$METAHOOK_CLUSTER_AUDIT_LOG" --user "$USER_NAME" \
        --since "$1" --until "$2" --user-agent "${3:-metahook/}"
}

# The first line of a report: when, on what, which Kubernetes and metahook.
machine_line() {
    local cpu k8s
    cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
    k8s=$("$root/target/cluster/bin/kubectl" version --client -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])' || echo "?")
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) vCPU ($cpu), shared; Kubernetes $k8s (tests/cluster/); metahook $("$BIN" --version | cut -d' ' -f2), release build."
}
