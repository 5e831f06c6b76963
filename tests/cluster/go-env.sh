# Sourced by the scripts here: one Go setup for building, vetting and
# testing the control plane. Everything expensive (the module downloads,
# the build cache, the built tools) lives in the machine-wide cache
# (scripts/lib/cache.sh), so a fresh clone skips the Go builds entirely.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/scripts/lib/cache.sh"
cluster_src="$root/tests/cluster"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOFLAGS="-modcacherw -trimpath"
export GOMODCACHE="${METAHOOK_GOMODCACHE:-$METAHOOK_CACHE/go/mod}"
export GOCACHE="${METAHOOK_GOCACHE:-$METAHOOK_CACHE/go/build}"
# build_lock NAME (scripts/lib/build-lock.sh): one build of a module at a time.
source "$root/scripts/lib/build-lock.sh"
# link_to TARGET LINK: LINK a symlink to TARGET, replaced in one rename:
# `ln -sfn` removes the old link first, and a cluster starting beside this
# build would find no kubectl for that moment.
link_to() {
    ln -sfn "$1" "$2.tmp.$$"
    mv -Tf "$2.tmp.$$" "$2"
}
# The Kubernetes version go.mod pins (k8s.io/kubernetes vX.Y.Z).
kubernetes_version() {
    awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$cluster_src/go.mod"
}
# The gates every Go module here shares: `require_gofmt NAME` fails naming
# the files under the current directory gofmt would change;
# `require_pinned NAME PATH...` runs the current directory's pin.sh in a
# temporary copy of PATHs (quiet unless it fails: `go get` names every
# module it adds) and fails unless it writes the go.mod and go.sum checked
# in here.
require_gofmt() {
    local unformatted
    unformatted="$(gofmt -l .)"
    if [ -n "$unformatted" ]; then
        echo "$1: not gofmt-formatted:" >&2
        echo "$unformatted" >&2
        return 1
    fi
}
require_pinned() {
    local name=$1 copy status=0
    shift
    copy="$(mktemp -d)"
    cp -r "$@" "$copy/"
    if ! PIN_DIR="$copy" ./pin.sh >"$copy/pin.log" 2>&1; then
        cat "$copy/pin.log" >&2
        status=1
    elif ! diff -u go.mod "$copy/go.mod" || ! diff -u go.sum "$copy/go.sum"; then
        echo "$name: go.mod/go.sum differ from what pin.sh generates; run $name/pin.sh and commit" >&2
        status=1
    fi
    rm -rf "$copy"
    return "$status"
}
