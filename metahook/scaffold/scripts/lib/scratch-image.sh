# shellcheck shell=bash
# Sourced by scripts/image.sh and tests/cluster/images.sh: FROM-scratch
# images built from one binary, without a container daemon or a registry
# (buildah with vfs storage and chroot isolation: no overlay mounts, no user
# namespaces, no base image to pull). Storage lives under target/images/
# (or SCRATCH_IMAGE_DIR), so a CI cache of target/ keeps the images and an
# unchanged binary costs no build.
#
#   scratch_init
#   scratch_lock
#   scratch_rootfs DIR BINARY DEST [--ca-certs]
#   scratch_image REF DIR ARCHIVE --containerfile FILE STAGE
#   scratch_image REF DIR ARCHIVE [buildah config flags...]
scratch_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
scratch_dir="${SCRATCH_IMAGE_DIR:-$scratch_root/target/images}"

# Installs buildah (and the CA bundle) from Debian when missing, as a fresh
# CI machine has neither, and sets BUILDAH to a buildah using our storage.
scratch_init() {
    if ! command -v buildah >/dev/null || [ ! -f /etc/ssl/certs/ca-certificates.crt ]; then
        local sudo=()
        [ "$(id -u)" -eq 0 ] || sudo=(sudo)
        echo "images: installing buildah and ca-certificates from Debian" >&2
        "${sudo[@]}" apt-get update >&2
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends buildah ca-certificates >&2
    fi
    mkdir -p "$scratch_dir"
    BUILDAH=(buildah --root "$scratch_dir/storage" --runroot "$scratch_dir/run" --storage-driver vfs)
}

# Holds $scratch_dir/lock until the caller exits: two builds at once would
# lay out the same root filesystem and archive under each other.
scratch_lock() {
    exec {scratch_lock_fd}>"$scratch_dir/lock"
    flock "$scratch_lock_fd"
}

# Lays out DIR as a root filesystem holding BINARY at DEST, the shared
# libraries ldd resolves for it and its loader (at the paths the binary asks
# for), /etc/passwd and /etc/group naming nonroot 65532 as distroless does,
# and with --ca-certs Debian's CA bundle.
scratch_rootfs() {
    local dir=$1 bin=$2 dest=$3 certs=${4:-}
    [ -f "$bin" ] || { echo "images: no binary at $bin" >&2; return 1; }
    rm -rf "$dir"
    install -D -m 0755 "$bin" "$dir$dest"
    # A static binary makes ldd fail ("not a dynamic executable"): no libraries.
    local libs
    libs="$(ldd "$bin" 2>/dev/null || true)"
    if grep -q 'not found' <<<"$libs"; then
        echo "images: $bin needs libraries this machine lacks:" >&2
        echo "$libs" >&2
        return 1
    fi
    awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$libs" | while read -r lib; do
        install -D -m 0755 "$(readlink -f "$lib")" "$dir$lib"
    done
    if [ -n "$libs" ] && grep -q '=>' <<<"$libs"; then
        # glibc without nsswitch.conf asks DNS before /etc/hosts; distroless
        # ships this line too.
        install -D -m 0644 /dev/stdin "$dir/etc/nsswitch.conf" <<<"hosts: files dns"
    fi
    install -D -m 0644 /dev/stdin "$dir/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
PASSWD
    install -D -m 0644 /dev/stdin "$dir/etc/group" <<'GROUP'
root:x:0:
nobody:x:65534:
nonroot:x:65532:
GROUP
    if [ "$certs" = --ca-certs ]; then
        install -D -m 0644 "$(readlink -f /etc/ssl/certs/ca-certificates.crt)" "$dir/etc/ssl/certs/ca-certificates.crt"
    fi
}

# Builds image REF holding DIR at / and writes it to ARCHIVE as a
# docker-archive naming REF (ctr images import keeps that name). Either a
# stage of a Containerfile with DIR as its context, or FROM scratch plus
# buildah config flags. Skipped when DIR, REF and the recipe are what the
# archive was last built from and the image is still in storage. Timestamps
# are pinned: the same files give the same image ID.
scratch_image() {
    local ref=$1 dir=$2 archive=$3
    shift 3
    local key
    key="$({
        tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - -C "$dir" .
        printf '%s\0' "$ref" "$@"
        if [ "${1:-}" = --containerfile ]; then cat "$2"; fi
        cat "${BASH_SOURCE[0]}"
    } | sha256sum | cut -d' ' -f1)"
    if [ -f "$archive" ] && [ "$(cat "$archive.key" 2>/dev/null)" = "$key" ] &&
        "${BUILDAH[@]}" inspect --type image "$ref" >/dev/null 2>&1; then
        echo "images: $ref unchanged ($archive)" >&2
        return 0
    fi
    echo "images: building $ref" >&2
    if [ "${1:-}" = --containerfile ]; then
        # --skip-unused-stages: only the stage asked for; the others' base
        # images are never pulled.
        "${BUILDAH[@]}" bud --quiet --isolation chroot --skip-unused-stages --identity-label=false \
            --timestamp 0 -f "$2" --target "$3" -t "$ref" "$dir" >/dev/null
    else
        local ctr
        ctr="$("${BUILDAH[@]}" from --quiet scratch)"
        "${BUILDAH[@]}" copy --quiet "$ctr" "$dir/" / >/dev/null
        "${BUILDAH[@]}" config "$@" "$ctr"
        "${BUILDAH[@]}" commit --quiet --rm --identity-label=false --timestamp 0 "$ctr" "$ref" >/dev/null
    fi
    # Older tags of the same repository, and images no tag names any more,
    # would only grow the cache.
    local old
    for old in $("${BUILDAH[@]}" images --format '{{.Name}}:{{.Tag}}' |
        awk -v repo="${ref%:*}:" -v ref="$ref" 'index($0, repo) == 1 && $0 != ref'); do
        "${BUILDAH[@]}" rmi "$old" >/dev/null
    done
    "${BUILDAH[@]}" rmi --prune >/dev/null 2>&1 || true
    rm -f "$archive" "$archive.key" "$archive.tmp"
    "${BUILDAH[@]}" push --quiet "$ref" "docker-archive:$archive.tmp:$ref"
    mv "$archive.tmp" "$archive"
    echo "$key" >"$archive.key"
}
