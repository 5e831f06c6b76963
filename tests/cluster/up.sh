#!/usr/bin/env bash
# Starts the test control plane on loopback (building it first if its
# sources changed), waits until it is ready, and prints where it is:
#
#   eval "$(tests/cluster/up.sh [DIR])"    # KUBECONFIG=..., METAHOOK_CLUSTER_*=...
#   kubectl get --raw /version              # target/cluster/bin/kubectl, the same release
#   tests/cluster/down.sh [DIR]
#
# DIR (default target/cluster/run) keeps etcd's data, the certificates, the
# kubeconfigs and every component's log (DIR/logs). An existing DIR is
# reused: the control plane comes back with its objects.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/go-env.sh"
dir="${1:-$root/target/cluster/run}"
mkdir -p "$dir/logs"
dir="$(cd "$dir" && pwd)"
bin="$("$cluster_src/build.sh")"

if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    echo "tests/cluster: already running in $dir (pid $(cat "$dir/pid")); tests/cluster/down.sh stops it" >&2
    exit 1
fi
rm -f "$dir/env"
# setsid: the control plane outlives this script, not the session's signals.
setsid "$bin" up --dir "$dir" >"$dir/logs/up.log" 2>&1 < /dev/null &
echo $! >"$dir/pid"
echo "tests/cluster: starting (pid $!, logs in $dir/logs)" >&2
for _ in $(seq 1 1800); do
    [ -f "$dir/env" ] && break
    if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
        echo "tests/cluster: the control plane exited while starting:" >&2
        tail -n 30 "$dir/logs/up.log" >&2
        for f in kube-apiserver kube-controller-manager; do
            [ -f "$dir/logs/$f.log" ] && { echo "--- $f (last lines)" >&2; tail -n 20 "$dir/logs/$f.log" >&2; }
        done
        exit 1
    fi
    sleep 0.2
done
[ -f "$dir/env" ] || { echo "tests/cluster: not ready after 6 minutes; see $dir/logs" >&2; exit 1; }
echo "tests/cluster: ready ($(grep '^METAHOOK_CLUSTER_VERSION=' "$dir/env" | cut -d= -f2))" >&2
echo "export PATH=$root/target/cluster/bin:\$PATH"
sed 's/^/export /' "$dir/env"
