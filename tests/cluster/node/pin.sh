#!/usr/bin/env bash
# Pins the node's third-party binaries: writes go.mod and go.sum from
# scratch — the module line, the versions below (`go get`, the main
# packages as `tool` lines so `go mod tidy` keeps them and `go build`
# builds them at exactly these versions), then `go mod tidy`. Nothing in
# go.mod or go.sum is typed by hand: to update, change a version here and
# run this script. tests/cluster/node/check.sh runs it in a copy and fails if
# the result differs from what is checked in.
#
#   tests/cluster/node/pin.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../go-env.sh"
dir="${PIN_DIR:-$cluster_src/node}"

containerd=v2.4.2    # github.com/containerd/containerd/v2: newest v2.4.x
cni_plugins=v1.9.1   # github.com/containernetworking/plugins
coredns=v1.15.0      # github.com/coredns/coredns (requires go 1.26)

tools=(
    "github.com/containerd/containerd/v2/cmd/containerd@$containerd"
    "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$containerd"
    "github.com/containerd/containerd/v2/cmd/ctr@$containerd"
    "github.com/containernetworking/plugins/plugins/main/bridge@$cni_plugins"
    "github.com/containernetworking/plugins/plugins/main/loopback@$cni_plugins"
    "github.com/containernetworking/plugins/plugins/ipam/host-local@$cni_plugins"
    "github.com/containernetworking/plugins/plugins/meta/portmap@$cni_plugins"
)

cd "$dir"
# From scratch: no requirement of an earlier pin (or a stray `go get -u`)
# survives, so the result depends on the versions above only.
printf 'module github.com/metahook/metahook/tests/cluster/node\n\ngo 1.26.0\n' >go.mod
: >go.sum
go get -tool "${tools[@]}"
# Imported by ./coredns (our own main with a chosen set of plugins).
go get "github.com/coredns/coredns@$coredns"
go mod tidy
echo "pinned containerd $containerd, CNI plugins $cni_plugins, CoreDNS $coredns" >&2
