#!/usr/bin/env bash
# Runs the built images as the chart runs its pod, with Debian's runc and no
# container daemon: read-only root, uid/gid 65532, no capabilities, no new
# privileges, a network namespace of its own (no seccomp profile: runc has
# no RuntimeDefault). Checks the metahook image
# serves /healthz and /readyz and runs as it should, and that each test
# image's entrypoint starts. Needs root (runc, buildah storage).
#
#   tests/images/check.sh              the image scripts/image.sh builds
#   tests/images/check.sh REF...       these images (built by scripts/image.sh
#                                      or tests/cluster/images.sh)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The images' storage in the machine-wide cache (scripts/lib/cache.sh).
source "$root/scripts/lib/cache.sh"
SCRATCH_IMAGE_DIR="$METAHOOK_CACHE/images"
source "$root/scripts/lib/scratch-image.sh"
scratch_init
if ! command -v runc >/dev/null || ! command -v jq >/dev/null; then
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends runc jq >&2
fi
if [ $# -eq 0 ]; then
    set -- "$("$root/scripts/image.sh")"
fi

work="$(mktemp -d /tmp/metahook-images.XXXXXX)"
runc=(runc --root "$work/runc")
containers=()
cleanup() {
    local c
    for c in $("${runc[@]}" list -q 2>/dev/null); do "${runc[@]}" delete -f "$c" >/dev/null 2>&1 || true; done
    for c in "${containers[@]}"; do "${BUILDAH[@]}" rm "$c" >/dev/null 2>&1 || true; done
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "check: $*" >&2; exit 1; }

# bundle REF NAME [ARGS...]: a runc bundle for REF under $work/NAME, running
# its entrypoint with ARGS (else its CMD), as the chart's securityContext
# asks. Rlimits are dropped: runc's defaults may exceed this machine's hard
# limits, and the kubelet sets none either.
bundle() {
    local ref=$1 name=$2
    shift 2
    local ctr rootfs config
    ctr="$("${BUILDAH[@]}" from --quiet --pull-never "$ref")"
    containers+=("$ctr")
    rootfs="$("${BUILDAH[@]}" mount "$ctr")"
    config="$("${BUILDAH[@]}" inspect --type image "$ref" | jq -c .OCIv1.config)"
    mkdir -p "$work/$name"
    (cd "$work/$name" && runc spec)
    jq --arg rootfs "$rootfs" --arg name "$name" --argjson image "$config" \
        --argjson args "$(if [ $# -gt 0 ]; then printf '%s\n' "$@" | jq -R . | jq -sc .; else echo '[]'; fi)" '
        .root = {path: $rootfs, readonly: true}
        | .hostname = $name
        | .process.terminal = false
        | .process.user = {uid: 65532, gid: 65532}
        | .process.noNewPrivileges = true
        | .process.capabilities = {bounding: [], effective: [], permitted: [], inheritable: [], ambient: []}
        | del(.process.rlimits)
        | .process.cwd = "/"
        | .process.env = ($image.Env // [])
        | .process.args = (($image.Entrypoint // []) + (if ($args | length) > 0 then $args else ($image.Cmd // []) end))
        ' "$work/$name/config.json" >"$work/$name/config.json.new"
    mv "$work/$name/config.json.new" "$work/$name/config.json"
}

# run NAME PATTERN: runs the bundle to completion; its output must match.
run() {
    "${runc[@]}" run --bundle "$work/$1" "$1" </dev/null >"$work/$1.out" 2>&1 ||
        fail "$1 exited $?: $(cat "$work/$1.out")"
    grep -q -e "$2" "$work/$1.out" || fail "$1 printed no '$2': $(cat "$work/$1.out")"
}

# serve NAME URL: starts bundle NAME detached and waits (10 s) until URL, on
# loopback in its network namespace, answers 200; sets pid.
serve() {
    "${runc[@]}" run --detach --bundle "$work/$1" "$1" </dev/null >"$work/$1.out" 2>&1
    pid="$("${runc[@]}" state "$1" | jq -r .pid)"
    for _ in $(seq 50); do
        probe "$2" && return 0
        sleep 0.2
    done
    fail "$1: no 200 from $2 in 10 s: $(cat "$work/$1.out")"
}
probe() { nsenter --net="/proc/$pid/ns/net" curl -fsS -o /dev/null "$1" 2>/dev/null; }

# stop NAME: SIGTERM must end it within 10 s.
stop() {
    "${runc[@]}" kill "$1" TERM
    for _ in $(seq 50); do
        [ "$("${runc[@]}" state "$1" | jq -r .status)" = stopped ] && return 0
        sleep 0.2
    done
    fail "$1 did not stop on SIGTERM in 10 s"
}

check_metahook() {
    local ref=$1 user pid
    user="$("${BUILDAH[@]}" inspect --type image "$ref" | jq -r .OCIv1.config.User)"
    [ "$user" = 65532:65532 ] || fail "$ref runs as '$user', not 65532:65532"
    bundle "$ref" help --help
    run help '^Usage: metahook'
    bundle "$ref" serve
    serve serve http://127.0.0.1:8080/healthz
    probe http://127.0.0.1:8080/readyz || fail "/readyz is not 200"
    # What the process runs as, seen from the host.
    grep -q '^Uid:[[:space:]]*65532[[:space:]]65532' "/proc/$pid/status" || fail "not uid 65532"
    grep -q '^Gid:[[:space:]]*65532[[:space:]]65532' "/proc/$pid/status" || fail "not gid 65532"
    grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$pid/status" || fail "new privileges allowed"
    grep -q '^CapBnd:[[:space:]]*0000000000000000' "/proc/$pid/status" || fail "capabilities not dropped"
    awk '$5 == "/" {print $6}' "/proc/$pid/mountinfo" | grep -q '^ro' || fail "root is not read-only"
    grep -qx 'MALLOC_MMAP_THRESHOLD_=131072' <(tr '\0' '\n' <"/proc/$pid/environ") || fail "no MALLOC_MMAP_THRESHOLD_"
    stop serve
    echo "check: $ref: --help, serve (/healthz, /readyz 200; uid/gid 65532, no capabilities, no new privileges, read-only root), SIGTERM stops it" >&2
}

for ref in "$@"; do
    case "$ref" in
        localhost/metahook/metahook:*) check_metahook "$ref" ;;
        localhost/metahook-test/metacontroller:*)
            bundle "$ref" metacontroller --help
            run metacontroller '-discovery-interval'
            echo "check: $ref: --help" >&2
            ;;
        localhost/metahook-test/pause:*)
            bundle "$ref" pause -v
            run pause '^pause.go '
            echo "check: $ref: -v" >&2
            ;;
        localhost/metahook-test/coredns:*)
            bundle "$ref" coredns -version
            run coredns '^CoreDNS-'
            echo "check: $ref: -version" >&2
            ;;
        localhost/metahook-test/hello:*)
            # Port 80 needs root or the node's unprivileged-port sysctl; as
            # 65532 here it listens on 8080.
            bundle "$ref" hello -listen 127.0.0.1:8080
            serve hello http://127.0.0.1:8080/healthz
            stop hello
            echo "check: $ref: serves /healthz, SIGTERM stops it" >&2
            ;;
        *) fail "no check for $ref" ;;
    esac
done
