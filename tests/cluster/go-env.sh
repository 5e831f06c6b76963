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
# The Kubernetes version go.mod pins (k8s.io/kubernetes vX.Y.Z).
kubernetes_version() {
    awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$cluster_src/go.mod"
}
