#!/usr/bin/env bash
# Pins the jsonnet hook server's one dependency, go-jsonnet: writes go.mod
# and go.sum from scratch (the module line, `go get` of the version below,
# `go mod tidy`). Nothing in them is typed by hand: to update, change the
# version here and run this script. check.sh runs it in a copy and fails
# if the result differs from what is checked in.
#
#   tests/examples/jsonnet-hooks/pin.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../cluster/go-env.sh"
dir="${PIN_DIR:-$root/tests/examples/jsonnet-hooks}"

go_jsonnet=v0.22.0   # github.com/google/go-jsonnet: newest release

cd "$dir"
printf 'module github.com/metahook/metahook/tests/examples/jsonnet-hooks\n\ngo 1.26.0\n' >go.mod
: >go.sum
go get "github.com/google/go-jsonnet@$go_jsonnet"
go mod tidy
echo "pinned go-jsonnet $go_jsonnet" >&2
