#!/usr/bin/env bash
# Stops the cluster tests/cluster/up.sh started in DIR (default
# target/cluster/run). Its data stays in DIR; --wipe removes DIR too.
#
# The real node cleans up after itself when it stops (pods removed through
# the CRI, its network namespace deleted); if it was killed instead, what
# it left is removed here: the pods' processes (by their cgroups under
# /metahook), containerd's shims, mounts under DIR, the node's namespace
# and the routes to it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/go-env.sh"
wipe=
if [ "${1:-}" = "--wipe" ]; then wipe=1; shift; fi
dir="${1:-$root/target/cluster/run}"
if [ -f "$dir/pid" ]; then
    pid="$(cat "$dir/pid")"
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        # Bounded: SIGKILL after 90 s (its components die with it).
        for _ in $(seq 1 450); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
    rm -f "$dir/pid" "$dir/env"
fi

if [ -d "$dir/node" ]; then
    abs="$(cd "$dir" && pwd)"
    # Shims outlive containerd by design; their command line names the
    # socket of this node's containerd.
    pkill -KILL -f "containerd-shim-runc-v2 .*-address $abs/containerd/containerd.sock" 2>/dev/null || true
    for controller in /sys/fs/cgroup/*/metahook; do
        [ -d "$controller" ] || continue
        find "$controller" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    done
    if [ -e /run/netns/metahook-node ]; then
        ip netns pids metahook-node 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    fi
    # Deepest first: the kubelet's volumes and containerd's rootfs and shm
    # mounts.
    awk -v d="$abs/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r |
        while read -r m; do umount -l "$m" 2>/dev/null || true; done
    if [ -e /run/netns/metahook-node ]; then
        ip route del 10.244.0.0/16 2>/dev/null || true
        ip route del 10.96.0.0/16 2>/dev/null || true
        ip link del mh-host 2>/dev/null || true
        ip netns del metahook-node 2>/dev/null || true
    fi
fi
if [ -n "$wipe" ]; then rm -rf "$dir"; fi
