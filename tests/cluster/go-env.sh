# Sourced by the scripts here: one Go setup for building, vetting and
# testing the control plane. Everything expensive lives under target/ (the
# module downloads and the build cache), so a CI cache of target/ makes a
# warm run skip the Go build entirely.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cluster_src="$root/tests/cluster"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOFLAGS="-modcacherw -trimpath"
export GOMODCACHE="${METAHOOK_GOMODCACHE:-$root/target/go/mod}"
export GOCACHE="${METAHOOK_GOCACHE:-$root/target/go/build}"
# build_lock NAME (scripts/lib/build-lock.sh): one build of a module at a time.
source "$root/scripts/lib/build-lock.sh"
# The Kubernetes version go.mod pins (k8s.io/kubernetes vX.Y.Z).
kubernetes_version() {
    awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$cluster_src/go.mod"
}
# The gates every Go module here shares: `require_gofmt NAME` fails naming
# the files under the current directory gofmt would change;
# `require_same_go_mod NAME COPY HINT` fails unless COPY holds the same
# go.mod and go.sum as the current directory (regenerated there by pin.sh
# or go mod tidy), telling the user HINT.
require_gofmt() {
    local unformatted
    unformatted="$(gofmt -l .)"
    if [ -n "$unformatted" ]; then
        echo "$1: not gofmt-formatted:" >&2
        echo "$unformatted" >&2
        return 1
    fi
}
require_same_go_mod() {
    if ! diff -u go.mod "$2/go.mod" || ! diff -u go.sum "$2/go.sum"; then
        echo "$1: go.mod/go.sum differ from what $3" >&2
        return 1
    fi
}
