#!/usr/bin/env bash
# Builds the control plane (etcd, kube-apiserver, kube-controller-manager,
# kubectl and the kubelet stand-in, one binary) only when its sources
# changed: the binary is cached in the machine-wide cache
# (scripts/lib/cache.sh: cluster/), keyed on the Go sources, go.mod, go.sum,
# this script and the Go version. Prints the binary's path; the checkout's
# target/cluster/bin/ links to it as metahook-cluster and kubectl.
#
#   tests/cluster/build.sh --key    only prints the key
#
# A cold build compiles kube-apiserver and kube-controller-manager from
# source: minutes on two cores (docs/testing.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/go-env.sh"
cd "$cluster_src"

key="$( (go version; cat build.sh go.mod go.sum; for f in $(ls ./*.go | sort); do echo "$f"; cat "$f"; done) |
    sha256sum | cut -c1-16)"
if [ "${1:-}" = --key ]; then echo "$key"; exit 0; fi
build_lock go-cluster
out="$METAHOOK_CACHE/cluster"
bin="$out/metahook-cluster-$key"
if [ ! -x "$bin" ]; then
    version="$(kubernetes_version)"
    minor="${version#v1.}"; minor="${minor%%.*}"
    # The release's own date, not the build's: the same sources give the
    # same binary.
    # The module's checksum stands for the commit: it names the exact
    # sources (the module proxy carries no commit hash).
    read -r date sum < <(go mod download -json "k8s.io/kubernetes@$version" | python3 -c '
import json, sys
m = json.load(sys.stdin)
print(json.load(open(m["Info"]))["Time"], m["Sum"])')
    ldflags=""
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
        ldflags+=" -X $pkg.gitCommit=$sum -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
    done
    echo "tests/cluster: building the control plane (Kubernetes $version); a cold build takes minutes" >&2
    start=$SECONDS
    mkdir -p "$out"
    go build -ldflags "-s -w$ldflags" -o "$bin.tmp" .
    mv "$bin.tmp" "$bin"
    echo "tests/cluster: built in $((SECONDS - start)) s: $bin" >&2
    # Older builds are of sources that are gone.
    find "$out" -maxdepth 1 -name 'metahook-cluster-*' ! -name "metahook-cluster-$key" -delete
fi
mkdir -p "$root/target/cluster/bin"
link_to "$bin" "$root/target/cluster/bin/metahook-cluster"
link_to "$bin" "$root/target/cluster/bin/kubectl"
echo "$bin"
