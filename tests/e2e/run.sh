#!/usr/bin/env bash
# Everything that needs Kubernetes, against the real control plane of
# tests/cluster/ (etcd, kube-apiserver, kube-controller-manager built from
# Kubernetes' Go modules, and a kubelet stand-in): starts it, runs the e2e
# target (tests/e2e/main.rs; its scenarios also under the real Metacontroller,
# built by tests/metacontroller/build.sh) and then the chart's install tests
# (tests/chart/test_install.py: real Helm, the driver as the chart's
# ServiceAccount) against it, stops it. On a failure the components' logs
# are printed.
#
#   tests/e2e/run.sh                 # everything
#   tests/e2e/run.sh driver::        # only e2e tests whose name matches (the chart's still run)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
dir="$root/target/cluster/e2e"

# The binary the chart's install tests run outside the cluster.
cargo build --locked --bin metahook
metahook="$(cd "${CARGO_TARGET_DIR:-$root/target}" && pwd)/debug/metahook"
# The real Metacontroller, from its source archive (built once, cached):
# tests/e2e/metacontroller.rs runs the scenarios under it too.
metacontroller="$(tests/metacontroller/build.sh)"

# A fresh control plane for every run: no object of an earlier run.
tests/cluster/down.sh --wipe "$dir"
env_lines="$(tests/cluster/up.sh "$dir")"
eval "$env_lines"
status=0
cleanup() {
    local rc=$?
    if [ "$rc" -ne 0 ]; then
        for log in kube-apiserver kube-controller-manager up; do
            echo "--- $dir/logs/$log.log (last 40 lines)" >&2
            tail -n 40 "$dir/logs/$log.log" >&2 || true
        done
    fi
    tests/cluster/down.sh "$dir"
}
trap cleanup EXIT

echo "kubectl version (server from the control plane):"
kubectl version
kubectl get --raw /version

export METAHOOK_E2E_KUBECONFIG="$KUBECONFIG"
export METAHOOK_E2E_KUBECTL="$root/target/cluster/bin/kubectl"
export METAHOOK_E2E_METACONTROLLER="$metacontroller"
cargo test --locked --test e2e -- --test-threads=1 --nocapture "$@" || status=$?

# The chart, installed with real Helm on the same control plane; the
# kubeconfig above and METAHOOK_CLUSTER_AUDIT_LOG from up.sh.
export METAHOOK_E2E_METAHOOK="$metahook"
tests/chart/run.sh -m cluster || status=$?
exit "$status"
