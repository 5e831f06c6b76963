#!/usr/bin/env bash
# Builds the node's binaries from the Go modules go.mod pins (pin.sh), only
# when their sources changed: they are cached in the machine-wide cache
# (scripts/lib/cache.sh) as cluster/node-KEY/, KEY a hash of the Go
# version, this script, go.mod, go.sum and every Go file here. Prints that
# directory; the checkout's target/cluster/node links to it.
#
#   tests/cluster/node/build.sh --key    only prints the key
#
#   bin/containerd bin/containerd-shim-runc-v2 bin/ctr   containerd
#   bin/coredns                                          CoreDNS, our main (./coredns)
#   bin/pause bin/hello-server                           ours (./pause, ./hello-server)
#   cni/bridge cni/host-local cni/loopback cni/portmap   CNI plugins
#
# runc is not built: the node uses the system's (Debian's runc package,
# /usr/sbin/runc). Logs go to stderr. A cold build compiles containerd
# (with its CRI plugin) and CoreDNS from source: minutes on two cores.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../go-env.sh"
node_src="$cluster_src/node"
cd "$node_src"

key="$( (go version; cat build.sh go.mod go.sum
    find . -name '*.go' -type f | LC_ALL=C sort | while read -r f; do echo "$f"; cat "$f"; done) |
    sha256sum | cut -c1-16)"
if [ "${1:-}" = --key ]; then echo "$key"; exit 0; fi
build_lock go-node
out="$METAHOOK_CACHE/cluster"
dir="$out/node-$key"

# The pinned version of module $1, and its checksum, which stands for the
# commit: it names the exact sources (the module proxy carries no commit).
version_of() { go list -m -f '{{.Version}}' "$1"; }
sum_of() {
    go mod download -json "$1@$(version_of "$1")" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["Sum"])'
}

if [ ! -d "$dir" ]; then
    start=$SECONDS
    containerd="$(version_of github.com/containerd/containerd/v2)"
    cni="$(version_of github.com/containernetworking/plugins)"
    coredns="$(version_of github.com/coredns/coredns)"
    echo "tests/cluster/node: building containerd $containerd, CNI plugins $cni, CoreDNS $coredns, pause, hello-server; a cold build takes minutes" >&2
    go mod download
    downloaded=$SECONDS
    mkdir -p "$out"
    tmp="$(mktemp -d "$out/.node-$key.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    chmod 755 "$tmp"
    mkdir "$tmp/bin" "$tmp/cni"

    # containerd as its `make STATIC=1` builds it (its Makefile's tags for
    # a static build, no_grpc added for the shim as it does), and no_btrfs:
    # the btrfs snapshotter needs cgo. With CGO_ENABLED=0 netgo and
    # osusergo change nothing, and nothing in containerd v2.4 tests
    # urfave_cli_no_docs or static_build; they are kept so the build
    # follows upstream's if that changes. The version as the CRI plugin
    # reports it to the kubelet (`kubectl get nodes -o wide`:
    # containerd://2.4.2), without the tag's "v" like the source's own
    # default ("2.4.2+unknown").
    ctr_pkg=github.com/containerd/containerd/v2
    ctr_tags="urfave_cli_no_docs osusergo netgo static_build no_btrfs"
    ctr_ldflags="-s -w -X $ctr_pkg/version.Version=${containerd#v}"
    ctr_ldflags+=" -X $ctr_pkg/version.Revision=$(sum_of $ctr_pkg) -X $ctr_pkg/version.Package=$ctr_pkg"
    go build -tags "$ctr_tags" -ldflags "$ctr_ldflags" -o "$tmp/bin/" \
        "$ctr_pkg/cmd/containerd" "$ctr_pkg/cmd/ctr"
    go build -tags "$ctr_tags no_grpc" -ldflags "$ctr_ldflags" -o "$tmp/bin/" \
        "$ctr_pkg/cmd/containerd-shim-runc-v2"

    # The CNI plugins as their release builds them (the version in
    # `<plugin> --version`).
    cni_pkg=github.com/containernetworking/plugins
    go build -ldflags "-s -w -X $cni_pkg/pkg/utils/buildversion.BuildVersion=$cni" -o "$tmp/cni/" \
        "$cni_pkg/plugins/main/bridge" "$cni_pkg/plugins/ipam/host-local" \
        "$cni_pkg/plugins/main/loopback" "$cni_pkg/plugins/meta/portmap"

    # CoreDNS with its Makefile's tag (gRPC without golang.org/x/net/trace);
    # the tag makes it a release build ("CoreDNS-1.15.0"), the checksum its
    # commit.
    go build -tags grpcnotrace \
        -ldflags "-s -w -X github.com/coredns/coredns/coremain.gitTag=$coredns -X github.com/coredns/coredns/coremain.GitCommit=$(sum_of github.com/coredns/coredns)" \
        -o "$tmp/bin/" ./coredns

    go build -ldflags "-s -w" -o "$tmp/bin/" ./pause ./hello-server

    # Another build of the same key may have finished first: same sources,
    # same binaries, keep that one.
    mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
    trap - EXIT
    echo "tests/cluster/node: modules in $((downloaded - start)) s, built in $((SECONDS - downloaded)) s: $dir" >&2
    # Older builds are of sources that are gone.
    find "$out" -maxdepth 1 -regextype posix-extended -regex '.*/node-[0-9a-f]{16}' \
        ! -name "node-$key" -exec rm -rf {} +
fi
mkdir -p "$root/target/cluster"
link_to "$dir" "$root/target/cluster/node"
echo "$dir"
