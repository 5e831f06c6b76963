#!/usr/bin/env bash
# The control plane's quality gates: gofmt (here and in node/), go vet, its
# Go tests, and the generated files (go.mod's staging replaces regenerated
# by pin.sh in a copy must equal what is checked in, and go.mod/go.sum must
# be tidy). The node's module has its own: node/check.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/go-env.sh"
cd "$cluster_src"

require_gofmt tests/cluster

require_pinned tests/cluster go.mod go.sum ./*.go

# Under build.sh's lock: vet and the tests compile what its build does, and
# scripts/test.sh may be running that build in the background.
(build_lock go-cluster && go vet ./... && go test ./...)
echo "tests/cluster: gofmt, pin, vet and tests ok"

