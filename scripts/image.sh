#!/usr/bin/env bash
# Builds the metahook image without a container daemon and prints its
# reference; logs go to stderr. The binary is built here (cargo build
# --release) and laid out FROM scratch with exactly what it needs (see
# scripts/lib/scratch-image.sh), then built from the Dockerfile's `prebuilt`
# stage with buildah: the image `docker build .` gives, minus the Rust image.
# The tag carries the binary's hash, so a changed binary is a new tag (nodes
# run it with imagePullPolicy IfNotPresent/Never) and an unchanged one is not
# rebuilt. The image is also written to target/images/metahook.tar, a
# docker-archive for ctr, kind, k3d, minikube or docker load.
#
#   scripts/image.sh               build, print localhost/metahook/metahook:<appVersion>-<hash>
#   scripts/image.sh CLUSTER_DIR   and load it into the test node's containerd
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/scratch-image.sh"
scratch_init

(cd "$root" && cargo build --release --locked --bin metahook >&2)
bin="$root/target/release/metahook"
version="$(awk '$1 == "appVersion:" {gsub(/"/, "", $2); print $2}' "$root/Chart.yaml")"
ref="localhost/metahook/metahook:$version-$(sha256sum "$bin" | cut -c1-12)"
archive="$scratch_dir/metahook.tar"

scratch_lock
scratch_rootfs "$scratch_dir/rootfs/metahook" "$bin" /usr/local/bin/metahook --ca-certs
scratch_image "$ref" "$scratch_dir/rootfs/metahook" "$archive" --containerfile "$root/Dockerfile" prebuilt
if [ $# -ge 1 ]; then
    "$root/tests/cluster/load-image.sh" "$1" "$archive"
fi
echo "$ref"
