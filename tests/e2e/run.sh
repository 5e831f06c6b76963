#!/usr/bin/env bash
# Everything that needs Kubernetes, in two clusters from tests/cluster/
# (etcd, kube-apiserver, kube-controller-manager built from Kubernetes' Go
# modules):
#
#  1. the e2e target (tests/e2e/main.rs: the driver, the CRDs, the faults,
#     the hooks under the real Metacontroller) against the control plane
#     with the kubelet stand-in: they check what the API server holds, and
#     some create more pods than two cores can run;
#  2. the chart installed as users install it (tests/chart/, -m cluster:
#     real Helm) on the real node: the image built by scripts/image.sh and
#     loaded into the node's containerd, run by the kubelet.
#
# The two side by side (both mostly wait on their clusters); phase 2's
# output is printed when both are over. Each cluster is fresh and stopped
# afterwards; on a failure the components' logs (and on the real node every
# pod's) are printed.
#
#   tests/e2e/run.sh                 # everything
#   tests/e2e/run.sh driver::        # only e2e tests whose name matches (the chart's still run)
#   METAHOOK_E2E_SERIAL=1 tests/e2e/run.sh   # phase 2, then phase 1
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source scripts/lib/cache.sh
source scripts/lib/background.sh

# The binary the chart's install tests run outside the cluster.
cargo build --locked --bin metahook
metahook="$(cd "$CARGO_TARGET_DIR" && pwd)/debug/metahook"
# A controller of someone's own (examples/widget, its own workspace): its
# binary, run by tests/e2e/widget.rs, in this checkout's target/
# (CARGO_TARGET_DIR) with the Cargo.lock it keeps in step with the
# workspace's.
(cd examples/widget && cargo build --locked)
export METAHOOK_E2E_WIDGET="$(cd "$CARGO_TARGET_DIR" && pwd)/debug/widget-operator"
# Its next version, a copy with its text written differently
# (tests/e2e/widget-next.sh): tests/e2e/upgrade.rs plans and rolls it out.
widget_next="$(tests/e2e/widget-next.sh)"
export METAHOOK_E2E_WIDGET_NEXT="$widget_next"
# The real Metacontroller, from its source archive (built once, cached):
# tests/e2e/metacontroller.rs runs the scenarios under it too.
metacontroller="$(tests/metacontroller/build.sh)"

# print_logs DIR: the last lines of every component's log in DIR.
print_logs() {
    local log
    for log in "$1"/logs/*.log; do
        case "$log" in */audit.log) continue ;; esac
        echo "--- $log (last 40 lines)" >&2
        tail -n 40 "$log" >&2 || true
    done
}

# 2. The real node, with metahook's image in its containerd: the chart's
# install tests. Its own cluster, so it runs beside phase 1 (each phase
# mostly waits on its control plane); a real node another run holds is
# waited for (tests/cluster/up.sh).
phase2() {
    # Global, not local: the trap runs after the function returns.
    node_dir="$root/target/cluster/node-e2e"
    local dir=$node_dir status=0 start image cluster_env
    trap 'tests/cluster/down.sh "$node_dir"' EXIT
    # The image from the debug build phase 1 runs too: the same code, and no
    # second build of every dependency in the release profile.
    image="$(IMAGE_PROFILE=dev scripts/image.sh)"
    tests/cluster/down.sh --wipe "$dir"
    start=$SECONDS
    cluster_env="$(tests/cluster/up.sh "$dir")"
    eval "$cluster_env"
    if [ "${METAHOOK_CLUSTER_NODE:-}" != real ]; then
        echo "tests/e2e: phase 2 needs the real node, got '${METAHOOK_CLUSTER_NODE:-}'" >&2
        return 1
    fi
    echo "tests/e2e: the real node was up in $((SECONDS - start)) s:"
    kubectl get nodes -o wide
    kubectl get pods -A -o wide
    IMAGE_PROFILE=dev scripts/image.sh "$dir" >/dev/null
    # Every image run with runc alone, as the chart runs its pod (read-only
    # root, uid 65532, no capabilities): a failure here names the image.
    tests/images/check.sh "$image" localhost/metahook-test/pause:v1 localhost/metahook-test/coredns:v1 \
        localhost/metahook-test/hello:v1 localhost/metahook-test/metacontroller:v4.17.2 || status=$?
    export METAHOOK_E2E_KUBECONFIG="$KUBECONFIG"
    export METAHOOK_E2E_KUBECTL="$root/target/cluster/bin/kubectl"
    export METAHOOK_E2E_METAHOOK="$metahook"
    export METAHOOK_E2E_IMAGE="$image"
    local chart=0
    tests/chart/run.sh -m cluster || chart=$?
    if [ "$chart" -ne 0 ]; then
        status=$chart
        print_logs "$dir"
        echo "--- every pod's log on the real node" >&2
        kubectl get pods -A -o wide >&2 || true
        kubectl get events -A --sort-by=.lastTimestamp >&2 || true
        kubectl get pods -A --no-headers -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name 2>/dev/null |
            while read -r ns pod; do
                echo "--- pod $ns/$pod" >&2
                kubectl logs -n "$ns" "$pod" --all-containers --tail=60 >&2 || true
            done
    fi
    return "$status"
}

# 1. The stand-in control plane: the e2e target.
phase1() {
    standin_dir="$root/target/cluster/e2e"
    local dir=$standin_dir status=0 cluster_env
    trap 'tests/cluster/down.sh "$standin_dir"' EXIT
    tests/cluster/down.sh --wipe "$dir"
    # (Assigned first: `eval "$(...)"` would hide up.sh's failure from set -e.)
    cluster_env="$(tests/cluster/up.sh --standin "$dir")"
    eval "$cluster_env"
    echo "kubectl version (server from the control plane):"
    kubectl version
    export METAHOOK_E2E_KUBECONFIG="$KUBECONFIG"
    export METAHOOK_E2E_KUBECTL="$root/target/cluster/bin/kubectl"
    export METAHOOK_E2E_METACONTROLLER="$metacontroller"
    cargo test --locked --test e2e -- --test-threads=1 --nocapture "$@" || { status=$?; print_logs "$dir"; }
    return "$status"
}

# The e2e target's build first, so that neither phase compiles while the
# other's clusters wait.
cargo test --locked --test e2e --no-run

# Each phase in a subshell of its own (its cluster stopped when it exits),
# with errexit on inside: not as part of an && or || list, where bash would
# ignore it.
phase2_log="$root/target/e2e-phase2.log"
phase2_pid=
trap 'stop_background "$phase2_pid"' EXIT
set +e
start=$SECONDS
if [ -n "${METAHOOK_E2E_SERIAL:-}" ]; then
    (set -e; phase2) >"$phase2_log" 2>&1
    phase2_status=$?
    (set -e; phase1 "$@")
    status=$?
else
    # Its own process group (set -m), so that an early exit stops all of it.
    set -m
    (set -e; phase2) >"$phase2_log" 2>&1 &
    phase2_pid=$!
    set +m
    (set -e; phase1 "$@")
    status=$?
    echo "tests/e2e: phase 1 over in $((SECONDS - start)) s; waiting for phase 2 (the chart on the real node)"
    wait "$phase2_pid"
    phase2_status=$?
    phase2_pid=
fi
set -e
echo "tests/e2e: both phases over in $((SECONDS - start)) s"
echo "---- phase 2: the chart on the real node ($phase2_log) ----"
cat "$phase2_log"
[ "$phase2_status" -eq 0 ] || status=$phase2_status
exit "$status"
