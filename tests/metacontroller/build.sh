#!/usr/bin/env bash
# Builds the real Metacontroller (v4.17.2, the unmodified source archive in
# ../shared/metacontroller/) once and prints the binary's path. The binary is
# cached under target/metacontroller/, keyed on the archive's hash and the Go
# version; its Go modules and build cache share the control plane's
# (tests/cluster/go-env.sh), so a CI cache of target/ keeps them too.
#
#   metacontroller="$(tests/metacontroller/build.sh)"
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/go-env.sh"
build_lock go-metacontroller
archive="${METAHOOK_METACONTROLLER_ARCHIVE:-$root/../shared/metacontroller/metacontroller-v4.17.2.tar.gz}"
if [ ! -f "$archive" ]; then
    echo "tests/metacontroller: no source archive at $archive (shared/metacontroller/ beside the repository)" >&2
    exit 1
fi
# The release it is, from the archive's name (metacontroller-v4.17.2.tar.gz),
# stamped as Metacontroller's release builds stamp it (.goreleaser.yaml:
# -X main.version), so its first log line says which release runs.
version="$(basename "$archive" .tar.gz)"
version="${version#metacontroller-v}"
key="$( (go version; sha256sum <"$archive"; cat "${BASH_SOURCE[0]}") | sha256sum | cut -c1-16)"
out="$root/target/metacontroller"
bin="$out/metacontroller-$key"
if [ ! -x "$bin" ]; then
    echo "tests/metacontroller: building Metacontroller from $(basename "$archive"); minutes when cold" >&2
    start=$SECONDS
    rm -rf "$out/src"
    mkdir -p "$out/src"
    tar -xzf "$archive" -C "$out/src"
    # The archive's go.sum pins its modules; -mod=mod lets go fill what the
    # archive's vendor-less tree needs, as its own README does.
    (cd "$out/src" && GOFLAGS="$GOFLAGS -mod=mod" go build -ldflags "-s -w -X main.version=$version" -o "$bin.tmp" ./pkg/cmd/metacontroller)
    mv "$bin.tmp" "$bin"
    find "$out" -maxdepth 1 -name 'metacontroller-*' ! -name "metacontroller-$key" -delete
    echo "tests/metacontroller: built in $((SECONDS - start)) s: $bin" >&2
fi
ln -sfn "$bin" "$out/metacontroller"
echo "$bin"
