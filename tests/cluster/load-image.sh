#!/usr/bin/env bash
# Imports an image archive (docker-archive, as scripts/image.sh and
# tests/cluster/images.sh write them) into the test node's containerd, in the
# CRI namespace the kubelet uses, then checks every name the archive carries
# is listed there: pods run it with imagePullPolicy IfNotPresent/Never, so a
# silently missing name would only show up as ErrImageNeverPull later.
#
#   tests/cluster/load-image.sh CLUSTER_DIR ARCHIVE
#
# ctr unpacks into its default snapshotter (overlayfs); set
# CONTAINERD_SNAPSHOTTER (read by ctr) if the node's CRI uses another.
# METAHOOK_CTR names another ctr binary than the node's.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [ $# -ne 2 ]; then
    echo "usage: $0 CLUSTER_DIR ARCHIVE" >&2
    exit 2
fi
sock="$1/containerd/containerd.sock"
archive=$2
# tests/cluster/node/build.sh builds ctr into target/cluster/node/bin.
ctr_bin="${METAHOOK_CTR:-}"
if [ -z "$ctr_bin" ]; then
    for ctr_bin in "$root/target/cluster/bin/ctr" "$root/target/cluster/node/bin/ctr"; do
        [ -x "$ctr_bin" ] && break
    done
fi
fail() { echo "load-image: $*" >&2; exit 1; }
[ -x "$ctr_bin" ] || fail "no ctr at $ctr_bin (tests/cluster/node/build.sh builds it)"
[ -S "$sock" ] || fail "no containerd socket at $sock: is the node running?"
[ -f "$archive" ] || fail "no archive at $archive"
# The names are the docker-archive's RepoTags (manifest.json), which ctr
# imports as they are.
names="$(tar -xOf "$archive" manifest.json | grep -o '"RepoTags":\[[^]]*\]' | grep -o '"[^"]*"' | tr -d '"' | grep -vx RepoTags | sort -u)"
[ -n "$names" ] || fail "$archive names no image (no RepoTags in manifest.json)"
ctr=("$ctr_bin" -a "$sock" -n k8s.io)
"${ctr[@]}" images import "$archive" >&2
listed="$("${ctr[@]}" images ls -q)"
for name in $names; do
    grep -qxF "$name" <<<"$listed" || fail "imported $archive, but $name is not listed in namespace k8s.io at $sock"
    echo "load-image: $name loaded" >&2
done
