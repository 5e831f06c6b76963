#!/usr/bin/env bash
# Everything that needs Kubernetes, against the real control plane of
# tests/cluster/ (etcd, kube-apiserver, kube-controller-manager built from
# Kubernetes' Go modules, and a kubelet stand-in): starts it, runs the e2e
# target (tests/e2e/main.rs) against it, stops it. On a failure the
# components' logs are printed.
#
#   tests/e2e/run.sh                 # everything
#   tests/e2e/run.sh driver::        # only e2e tests whose name matches
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
dir="$root/target/cluster/e2e"

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
cargo test --locked --test e2e -- --ignored --test-threads=1 --nocapture "$@" || status=$?
exit "$status"
