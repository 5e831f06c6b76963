#!/usr/bin/env bash
# Builds the jsonnet hook server (main.go here, go-jsonnet as pin.sh pins
# it) only when its sources changed: cached in the machine-wide cache
# (scripts/lib/cache.sh) as jsonnet-hooks/jsonnet-hooks-KEY, KEY a hash of
# the Go version, this script, go.mod, go.sum and the Go files. Prints the
# binary's path.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../cluster/go-env.sh"
cd "$root/tests/examples/jsonnet-hooks"

key="$( (go version; cat build.sh go.mod go.sum ./*.go) | sha256sum | cut -c1-16)"
if [ "${1:-}" = --key ]; then echo "$key"; exit 0; fi
build_lock go-jsonnet-hooks
out="$METAHOOK_CACHE/jsonnet-hooks"
bin="$out/jsonnet-hooks-$key"
if [ ! -x "$bin" ]; then
    mkdir -p "$out"
    go build -ldflags "-s -w" -o "$bin.tmp" .
    mv "$bin.tmp" "$bin"
    # Older builds are of sources that are gone.
    find "$out" -maxdepth 1 -name 'jsonnet-hooks-*' ! -name "jsonnet-hooks-$key" -delete
fi
echo "$bin"
