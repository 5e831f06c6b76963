#!/usr/bin/env bash
# Starts the test cluster (building what changed first), waits until it is
# ready, and prints where it is:
#
#   eval "$(tests/cluster/up.sh [--standin] [DIR])"   # KUBECONFIG=..., METAHOOK_CLUSTER_*=...
#   kubectl get nodes -o wide               # target/cluster/bin/kubectl, the same release
#   tests/cluster/down.sh [DIR]
#
# A real single node by default: etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler on this machine; containerd
# (with Debian's runc), the kubelet and kube-proxy in a network namespace
# of the node's own; CNI bridge networking and CoreDNS. One real node runs
# on a machine at a time (it needs root). --standin starts the control
# plane with the kubelet stand-in instead (pods marked Ready, nothing run:
# for workloads larger than two cores can run). A flag, not a variable:
# the printed env exports METAHOOK_CLUSTER_NODE, and an eval'd stand-in
# must not make the next start a stand-in too.
#
# DIR (default target/cluster/run) keeps etcd's data, the certificates, the
# kubeconfigs, the node's state and every component's log (DIR/logs). An
# existing DIR is reused: the cluster comes back with its objects.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/go-env.sh"
node=real
if [ "${1:-}" = --standin ]; then node=standin; shift; fi
dir="${1:-$root/target/cluster/run}"
mkdir -p "$dir/logs"
dir="$(cd "$dir" && pwd)"
bin="$("$cluster_src/build.sh")"
args=(up --dir "$dir" --node "$node")
if [ "$node" = real ]; then
    # What the node runs on, from Debian: runc, iptables and conntrack for
    # kube-proxy, iproute2 and nsenter for the node's namespace.
    missing=()
    for tool in runc:runc iptables:iptables conntrack:conntrack ip:iproute2 nsenter:util-linux sysctl:procps; do
        command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "tests/cluster: installing ${missing[*]} from Debian" >&2
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
    fi
    # One real node runs on a machine at a time (its network namespace,
    # addresses and cgroups are the machine's): a second one (another
    # clone's, the examples' beside the e2e's) waits here. The control plane
    # started below inherits the lock, so it is free again once the node's
    # last process is gone.
    node_lock_file=/run/lock/metahook-real-node.lock
    mkdir -p "$(dirname "$node_lock_file")"
    exec {node_lock}>"$node_lock_file"
    if ! flock --nonblock "$node_lock"; then
        echo "tests/cluster: waiting for the real node another run holds ($node_lock_file)" >&2
        if ! flock --timeout 1800 "$node_lock"; then
            echo "tests/cluster: the real node was still held after 30 min ($node_lock_file)" >&2
            exit 1
        fi
    fi
    if [ -e /run/netns/metahook-node ] && [ -n "$(ip netns pids metahook-node 2>/dev/null)" ]; then
        echo "tests/cluster: a real node already runs on this machine (network namespace metahook-node);" \
            "tests/cluster/down.sh DIR stops it" >&2
        exit 1
    fi
    node_build="$("$cluster_src/node/build.sh")"
    args+=(--node-build "$node_build")
    # The sandbox, CoreDNS, the test Hellos' server and Metacontroller:
    # built here, loaded before the kubelet starts.
    while read -r archive; do args+=(--image "$archive"); done < <("$cluster_src/images.sh")
fi

if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    echo "tests/cluster: already running in $dir (pid $(cat "$dir/pid")); tests/cluster/down.sh stops it" >&2
    exit 1
fi
rm -f "$dir/env"
# setsid: the control plane outlives this script, not the session's signals.
setsid "$bin" "${args[@]}" >"$dir/logs/up.log" 2>&1 < /dev/null &
echo $! >"$dir/pid"
echo "tests/cluster: starting (pid $!, logs in $dir/logs)" >&2
for _ in $(seq 1 1800); do
    [ -f "$dir/env" ] && break
    if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
        echo "tests/cluster: the control plane exited while starting:" >&2
        tail -n 30 "$dir/logs/up.log" >&2
        for f in kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy; do
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
