#!/usr/bin/env bash
# The keys this repository makes itself for what it keeps in the
# machine-wide cache (scripts/lib/cache.sh): a changed input of a self-keyed
# tool is rebuilt, an unchanged one is not, and the key does not depend on
# where the checkout is. Go's and Cargo's own caches key themselves and are
# not tested here.
#
# Works on a copy of the build scripts and the tools' sources, laid out as
# here, with a cache of its own: only Go's module and build caches are the
# real ones (safe to share), so rebuilding the changed control plane
# compiles one package and links. Part of scripts/test.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/scripts/lib/cache.sh"
real_cache=$METAHOOK_CACHE
work="$(mktemp -d /tmp/metahook-cache-keys.XXXXXX)"
trap 'rm -rf "$work"' EXIT
copy="$work/checkout"
mkdir -p "$copy/tests/chart" "$copy/tests/examples" "$copy/scripts"
cp -rL "$root/scripts/lib" "$copy/scripts/"
cp -r "$root/tests/cluster" "$root/tests/metacontroller" "$copy/tests/"
cp -r "$root/tests/examples/jsonnet-hooks" "$copy/tests/examples/"
cp "$root/tests/chart/requirements.txt" "$copy/tests/chart/"
archive="${METAHOOK_METACONTROLLER_ARCHIVE:-$root/../shared/metacontroller/metacontroller-v4.17.2.tar.gz}"
export METAHOOK_METACONTROLLER_ARCHIVE="$archive"

passed=0
failed=0
check() {
    if [ "$2" = ok ]; then
        passed=$((passed + 1))
        echo "ok: $1"
    else
        failed=$((failed + 1))
        echo "FAILED: $1${3:+ ($3)}"
    fi
}

# This checkout's control plane, in the real cache: built (if it was not),
# then not built again.
"$root/tests/cluster/build.sh" >/dev/null
out="$("$root/tests/cluster/build.sh" 2>&1 >/dev/null)"
[[ "$out" != *"building the control plane"* ]] && check "the control plane, unchanged: not rebuilt" ok ||
    check "the control plane, unchanged: not rebuilt" bad "$out"

# From here on a fresh cache for what the copy builds (nothing here touches
# this checkout's links or the real cache's builds); Go's own caches from
# the real one.
export METAHOOK_CACHE="$work/cache"
export METAHOOK_GOCACHE="$real_cache/go/build" METAHOOK_GOMODCACHE="$real_cache/go/mod"
unset CARGO_BUILD_BUILD_DIR CARGO_TARGET_DIR
# No Cargo build here: nothing for cache.sh to prune.
export METAHOOK_PRUNING=1
same() { [ "$2" = "$3" ] && check "$1" ok || check "$1" bad "$2 != $3"; }
differ() { [ "$2" != "$3" ] && check "$1" ok || check "$1" bad "both $2"; }

# key SCRIPT: what a build script keys its output on (its --key).
key() { "$@" --key; }

# Every self-keyed tool: the same sources give the same key wherever the
# checkout is; one changed Go source, a new one.
for tool in tests/cluster/build.sh tests/cluster/node/build.sh tests/examples/jsonnet-hooks/build.sh tests/metacontroller/build.sh; do
    same "$tool: the same key from a copy of the checkout" "$(key "$root/$tool")" "$(key "$copy/$tool")"
done
before="$(key "$copy/tests/cluster/node/build.sh")"
echo "// changed by tests/cache/keys.sh" >>"$copy/tests/cluster/node/hello-server/main.go"
differ "the node's binaries: a changed Go source, a new key" "$before" "$(key "$copy/tests/cluster/node/build.sh")"
before="$(key "$copy/tests/examples/jsonnet-hooks/build.sh")"
echo "// changed by tests/cache/keys.sh" >>"$copy/tests/examples/jsonnet-hooks/main.go"
differ "the jsonnet hook server: a changed Go source, a new key" "$before" "$(key "$copy/tests/examples/jsonnet-hooks/build.sh")"
cp "$archive" "$work/metacontroller-v4.17.2.tar.gz"
printf '\0' >>"$work/metacontroller-v4.17.2.tar.gz"
differ "Metacontroller: a changed source archive, a new key" "$(key "$copy/tests/metacontroller/build.sh")" \
    "$(METAHOOK_METACONTROLLER_ARCHIVE="$work/metacontroller-v4.17.2.tar.gz" key "$copy/tests/metacontroller/build.sh")"

# The copy's control plane: with one changed Go source it is rebuilt,
# once.
before="$(key "$copy/tests/cluster/build.sh")"
echo "// changed by tests/cache/keys.sh" >>"$copy/tests/cluster/kubeconfig.go"
after="$(key "$copy/tests/cluster/build.sh")"
differ "the control plane: a changed Go source, a new key" "$before" "$after"
out="$("$copy/tests/cluster/build.sh" 2>&1)"
[[ "$out" == *"building the control plane"* && -x "$METAHOOK_CACHE/cluster/metahook-cluster-$after" ]] &&
    check "the control plane: a changed Go source, rebuilt" ok || check "the control plane: a changed Go source, rebuilt" bad "$out"
out="$("$copy/tests/cluster/build.sh" 2>&1)"
[[ "$out" != *"building the control plane"* ]] && check "the control plane, built once: not rebuilt" ok ||
    check "the control plane, built once: not rebuilt" bad "$out"

# The venv: made once for its pins, again when they change (requirements
# without a package, so nothing is fetched).
echo "# no package" >"$copy/tests/chart/requirements.txt"
venv_of() { (unset METAHOOK_VENV; source "$copy/scripts/lib/venv.sh"; test_venv 2>&1 >/dev/null; echo "venv=$venv"); }
out="$(venv_of)"
[[ "$out" == *"creating"* ]] && check "the venv: made on first use" ok || check "the venv: made on first use" bad "$out"
first="${out##*venv=}"
out="$(venv_of)"
[[ "$out" != *"creating"* && "${out##*venv=}" = "$first" ]] && check "the venv, unchanged pins: not made again" ok ||
    check "the venv, unchanged pins: not made again" bad "$out"
echo "# another pin" >>"$copy/tests/chart/requirements.txt"
out="$(venv_of)"
second="${out##*venv=}"
[[ "$out" == *"creating"* && "$second" != "$first" && ! -e "$first" ]] &&
    check "the venv, changed pins: made again, the old one removed" ok ||
    check "the venv, changed pins: made again, the old one removed" bad "$out"

# An image: rebuilt when a file it holds changed (a chart template is
# written by the binary, so a changed one is a changed binary), not when
# nothing did.
SCRATCH_IMAGE_DIR="$work/images"
source "$copy/scripts/lib/scratch-image.sh"
scratch_init
mkdir -p "$work/rootfs"
echo "one" >"$work/rootfs/file"
image() { scratch_image localhost/metahook-cache-keys:v1 "$work/rootfs" "$work/image.tar" --entrypoint '["/file"]' 2>&1; }
out="$(image)"
[[ "$out" == *"building"* ]] && check "an image: built" ok || check "an image: built" bad "$out"
out="$(image)"
[[ "$out" == *"unchanged"* ]] && check "an image, the same files: not rebuilt" ok || check "an image, the same files: not rebuilt" bad "$out"
echo "two" >"$work/rootfs/file"
out="$(image)"
[[ "$out" == *"building"* ]] && check "an image, a changed file: rebuilt" ok || check "an image, a changed file: rebuilt" bad "$out"
"${BUILDAH[@]}" rmi --all >/dev/null 2>&1 || true

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
