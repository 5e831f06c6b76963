#!/usr/bin/env bash
# Builds the images only the test node needs, each FROM scratch around one
# binary (scripts/lib/scratch-image.sh), as docker-archives in the
# machine-wide cache (scripts/lib/cache.sh: images/), and prints their paths
# one per line. An image is rebuilt
# only when its binary (or its recipe here) changed. With CLUSTER_DIR each
# is loaded into that node's containerd as well (tests/cluster/load-image.sh).
#
#   tests/cluster/images.sh [CLUSTER_DIR]
#
# The node's binaries come from tests/cluster/node/build.sh (into
# target/cluster/node/bin, or METAHOOK_NODE_BIN), Metacontroller's from
# tests/metacontroller/build.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The images' storage in the machine-wide cache (scripts/lib/cache.sh).
source "$root/scripts/lib/cache.sh"
SCRATCH_IMAGE_DIR="$METAHOOK_CACHE/images"
source "$root/scripts/lib/scratch-image.sh"
node_bin="${METAHOOK_NODE_BIN:-$root/target/cluster/node/bin}"
for b in pause coredns hello-server; do
    [ -x "$node_bin/$b" ] || { echo "images: no $node_bin/$b (tests/cluster/node/build.sh builds it)" >&2; exit 1; }
done
metacontroller="$("$root/tests/metacontroller/build.sh")"
scratch_init
scratch_lock

# image NAME REF BINARY DEST [buildah config flags...]
image() {
    local name=$1 ref=$2 bin=$3 dest=$4
    shift 4
    scratch_rootfs "$scratch_dir/rootfs/$name" "$bin" "$dest"
    scratch_image "$ref" "$scratch_dir/rootfs/$name" "$scratch_dir/$name.tar" --entrypoint "[\"$dest\"]" "$@"
    if [ -n "${cluster:-}" ]; then
        "$root/tests/cluster/load-image.sh" "$cluster" "$scratch_dir/$name.tar"
    fi
    echo "$scratch_dir/$name.tar"
}

cluster="${1:-}"
image pause localhost/metahook-test/pause:v1 "$node_bin/pause" /pause --user 65535:65535
image coredns localhost/metahook-test/coredns:v1 "$node_bin/coredns" /coredns \
    --user 65532:65532 --port 53/udp --port 53/tcp
image hello localhost/metahook-test/hello:v1 "$node_bin/hello-server" /hello-server --port 80
image metacontroller localhost/metahook-test/metacontroller:v4.17.2 "$metacontroller" /usr/bin/metacontroller \
    --user 65532:65532
