#!/usr/bin/env bash
# Builds the metahook image without a container daemon and prints its
# reference; logs go to stderr. The binary is built here (cargo build
# --release, or IMAGE_PROFILE's) and laid out FROM scratch with exactly what
# it needs (see scripts/lib/scratch-image.sh), then built from the Dockerfile's `prebuilt`
# stage with buildah: the image `docker build .` gives, minus the Rust image.
# The tag carries the binary's hash, so a changed binary is a new tag (nodes
# run it with imagePullPolicy IfNotPresent/Never) and an unchanged one is not
# rebuilt. The image is also written to target/images/metahook.tar
# (metahook-dev.tar from the debug build), a docker-archive for ctr, kind,
# k3d, minikube or docker load; buildah's storage is in the machine-wide
# cache (scripts/lib/cache.sh).
#
#   scripts/image.sh               build, print localhost/metahook/metahook:<appVersion>-<hash>
#   scripts/image.sh CLUSTER_DIR   and load it into the test node's containerd
#   IMAGE_PROFILE=dev scripts/image.sh   from the debug build (what the
#                                  chart's install tests run: the same code,
#                                  no second build of every dependency)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The images' storage in the machine-wide cache (scripts/lib/cache.sh).
source "$root/scripts/lib/cache.sh"
SCRATCH_IMAGE_DIR="$METAHOOK_CACHE/images"
source "$root/scripts/lib/scratch-image.sh"
scratch_init

profile="${IMAGE_PROFILE:-release}"
(cd "$root" && cargo build --profile "$profile" --locked --bin metahook >&2)
# Cargo writes the dev profile's build to debug/, any other to its name.
out_dir="$profile"
[ "$profile" != dev ] || out_dir=debug
bin="$CARGO_TARGET_DIR/$out_dir/metahook"
version="$(awk '$1 == "appVersion:" {gsub(/"/, "", $2); print $2}' "$root/chart/Chart.yaml")"
ref="localhost/metahook/metahook:$version-$(sha256sum "$bin" | cut -c1-12)"
name=metahook
[ "$profile" = release ] || name="metahook-$profile"
archive="$scratch_dir/$name.tar"

scratch_lock
scratch_rootfs "$scratch_dir/rootfs/metahook" "$bin" /usr/local/bin/metahook --ca-certs
scratch_image "$ref" "$scratch_dir/rootfs/metahook" "$archive" --containerfile "$root/Dockerfile" prebuilt
mkdir -p "$root/target/images"
cp "$archive" "$root/target/images/$name.tar.tmp"
mv "$root/target/images/$name.tar.tmp" "$root/target/images/$name.tar"
if [ $# -ge 1 ]; then
    "$root/tests/cluster/load-image.sh" "$1" "$archive"
fi
echo "$ref"
