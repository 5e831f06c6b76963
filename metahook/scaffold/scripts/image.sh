#!/usr/bin/env bash
# Builds the @@CRATE@@ image without a container daemon and prints its
# reference: the release binary laid out FROM scratch with what it needs
# (scripts/lib/scratch-image.sh), built from the Dockerfile's `prebuilt`
# stage with buildah. The tag carries the binary's hash. The image is also
# written to target/images/@@CRATE@@.tar (docker-archive: ctr, kind, k3d,
# minikube or docker load).
#
#   scripts/image.sh                     the release build (what you ship)
#   IMAGE_PROFILE=dev scripts/image.sh   a debug build: a quick image to try
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/scratch-image.sh"
scratch_init

profile="${IMAGE_PROFILE:-release}"
(cd "$root" && cargo build --profile "$profile" --locked --bin @@CRATE@@ >&2)
# Cargo writes the dev profile's build to debug/, any other to its name.
out_dir="$profile"
[ "$profile" != dev ] || out_dir=debug
bin="${CARGO_TARGET_DIR:-$root/target}/$out_dir/@@CRATE@@"
version="$(awk -F'"' '$1 ~ /^version = / {print $2; exit}' "$root/Cargo.toml")"
ref="localhost/@@CRATE@@:$version-$(sha256sum "$bin" | cut -c1-12)"
archive="$scratch_dir/@@CRATE@@.tar"

scratch_lock
scratch_rootfs "$scratch_dir/rootfs/@@CRATE@@" "$bin" /usr/local/bin/@@CRATE@@ --ca-certs
scratch_image "$ref" "$scratch_dir/rootfs/@@CRATE@@" "$archive" --containerfile "$root/Dockerfile" prebuilt
echo "$ref"
