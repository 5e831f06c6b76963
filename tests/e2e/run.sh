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
# Each cluster is fresh and stopped afterwards; on a failure the
# components' logs (and on the real node every pod's) are printed.
#
#   tests/e2e/run.sh                 # everything
#   tests/e2e/run.sh driver::        # only e2e tests whose name matches (the chart's still run)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source scripts/lib/background.sh

# The binary the chart's install tests run outside the cluster.
cargo build --locked --bin metahook
metahook="$(cd "${CARGO_TARGET_DIR:-$root/target}" && pwd)/debug/metahook"
# A controller of someone's own (examples/widget, its own workspace): its
# binary, run by tests/e2e/widget.rs. Built into this target/ with the
# Cargo.lock it keeps in step with the workspace's.
(cd examples/widget && CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}" cargo build --locked)
export METAHOOK_E2E_WIDGET="$(cd "${CARGO_TARGET_DIR:-$root/target}" && pwd)/debug/widget-operator"
# The real Metacontroller, from its source archive (built once, cached):
# tests/e2e/metacontroller.rs runs the scenarios under it too.
metacontroller="$(tests/metacontroller/build.sh)"

dir=
print_logs() {
    for log in "$dir"/logs/*.log; do
        case "$log" in */audit.log) continue ;; esac
        echo "--- $log (last 40 lines)" >&2
        tail -n 40 "$log" >&2 || true
    done
}
prebuild_pid=
cleanup() {
    local rc=$?
    stop_background "$prebuild_pid"
    if [ -n "$dir" ]; then
        [ "$rc" -eq 0 ] || print_logs
        tests/cluster/down.sh "$dir"
    fi
}
trap cleanup EXIT
status=0

# Phase 2's builds (the image's release build, the node's binaries, its
# images) run during phase 1, whose tests mostly wait on the control plane
# (cargo locks each profile's directory apart: the release build does not
# block the tests' debug one). At nice 10, not SCHED_IDLE: phase 2 waits for
# them, and under SCHED_IDLE, sharing the idle cycles with scripts/test.sh's
# fuzz and tools builds, a cold release build was 484 s short when phase 1's
# 33 tests ended. The control plane runs in a session of its own
# (tests/cluster/up.sh), so it keeps at least half the cores whatever runs
# here. A failure says so in phase 2.
prebuild_log="$root/target/e2e-prebuild.log"
prebuild() {
    # up.sh calls the node's build and images.sh again: both keep what they built.
    scripts/image.sh && tests/cluster/node/build.sh >/dev/null && tests/cluster/images.sh >/dev/null
}
# Its own process group, so that an early exit stops all of it.
nice_background 10 bash -c "$(declare -f prebuild); prebuild" >"$root/target/e2e-image.ref" 2>"$prebuild_log"
prebuild_pid=$background_pid

# 1. The stand-in control plane.
dir="$root/target/cluster/e2e"
tests/cluster/down.sh --wipe "$dir"
# (Assigned first: `eval "$(...)"` would hide up.sh's failure from set -e.)
cluster_env="$(tests/cluster/up.sh --standin "$dir")"
eval "$cluster_env"
echo "kubectl version (server from the control plane):"
kubectl version
export METAHOOK_E2E_KUBECONFIG="$KUBECONFIG"
export METAHOOK_E2E_KUBECTL="$root/target/cluster/bin/kubectl"
export METAHOOK_E2E_METACONTROLLER="$metacontroller"
cargo test --locked --test e2e -- --test-threads=1 --nocapture "$@" || { status=$?; print_logs; }
tests/cluster/down.sh "$dir"

# 2. The real node, with metahook's image in its containerd.
start=$SECONDS
if ! wait "$prebuild_pid"; then
    echo "tests/e2e: building the image, the node or its images failed:" >&2
    tail -n 60 "$prebuild_log" >&2
    exit 1
fi
echo "tests/e2e: phase 1 over, waited $((SECONDS - start)) s more for the image and the node's builds"
image="$(cat "$root/target/e2e-image.ref")"
dir="$root/target/cluster/node-e2e"
tests/cluster/down.sh --wipe "$dir"
start=$SECONDS
cluster_env="$(tests/cluster/up.sh "$dir")"
eval "$cluster_env"
if [ "${METAHOOK_CLUSTER_NODE:-}" != real ]; then
    echo "tests/e2e: phase 2 needs the real node, got '${METAHOOK_CLUSTER_NODE:-}'" >&2
    exit 1
fi
echo "tests/e2e: the real node was up in $((SECONDS - start)) s:"
kubectl get nodes -o wide
kubectl get pods -A -o wide
scripts/image.sh "$dir" >/dev/null
# Every image run with runc alone, as the chart runs its pod (read-only
# root, uid 65532, no capabilities): a failure here names the image.
tests/images/check.sh "$image" localhost/metahook-test/pause:v1 localhost/metahook-test/coredns:v1 \
    localhost/metahook-test/hello:v1 localhost/metahook-test/metacontroller:v4.17.2 || status=$?
export METAHOOK_E2E_KUBECONFIG="$KUBECONFIG"
export METAHOOK_E2E_KUBECTL="$root/target/cluster/bin/kubectl"
export METAHOOK_E2E_METAHOOK="$metahook"
export METAHOOK_E2E_IMAGE="$image"
chart=0
tests/chart/run.sh -m cluster || chart=$?
if [ "$chart" -ne 0 ]; then
    status=$chart
    print_logs
    echo "--- every pod's log on the real node" >&2
    kubectl get pods -A -o wide >&2 || true
    kubectl get events -A --sort-by=.lastTimestamp >&2 || true
    kubectl get pods -A --no-headers -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name 2>/dev/null |
        while read -r ns pod; do
            echo "--- pod $ns/$pod" >&2
            kubectl logs -n "$ns" "$pod" --all-containers --tail=60 >&2 || true
        done
fi
exit "$status"
