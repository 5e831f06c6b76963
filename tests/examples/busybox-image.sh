#!/usr/bin/env bash
# Builds the `busybox` image Metacontroller's indexedjob example runs
# (`image: busybox`, `sh -c 'echo ${JOB_INDEX}'`), FROM scratch without a
# container daemon or a registry (scripts/lib/scratch-image.sh): Debian's
# busybox-static binary (scripts/debian-package.sh) at /bin/busybox, every
# applet it lists a link to it in /bin, with the PATH and the command
# (`sh`) of Docker Hub's busybox image. Its name is the one containerd
# normalizes `busybox` to, docker.io/library/busybox:latest. Prints it.
#
#   tests/examples/busybox-image.sh                 build (unchanged: nothing to do)
#   tests/examples/busybox-image.sh HOST:PORT       and push it to the plain-HTTP
#                                                   registry there as library/busybox:latest
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The images' storage in the machine-wide cache (scripts/lib/cache.sh).
source "$root/scripts/lib/cache.sh"
SCRATCH_IMAGE_DIR="$METAHOOK_CACHE/images"
source "$root/scripts/lib/scratch-image.sh"
scratch_init

ref=docker.io/library/busybox:latest
deb="$("$root/scripts/debian-package.sh" busybox-static)"
busybox="$deb/bin/busybox"
rootfs="$scratch_dir/rootfs/busybox"

scratch_lock
scratch_rootfs "$rootfs" "$busybox" /bin/busybox
# The static binary runs here too: it names its own applets.
for applet in $("$busybox" --list); do
    [ "$applet" = busybox ] || ln -s busybox "$rootfs/bin/$applet"
done
scratch_image "$ref" "$rootfs" "$scratch_dir/busybox.tar" \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd '["sh"]'
if [ $# -ge 1 ]; then
    "${BUILDAH[@]}" push --quiet --tls-verify=false "$ref" "docker://$1/library/busybox:latest"
    echo "busybox-image: pushed to $1/library/busybox:latest" >&2
fi
echo "$ref"
