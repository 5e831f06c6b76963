#!/usr/bin/env bash
# Builds the real Metacontroller (v4.17.2, the unmodified source archive in
# ../shared/metacontroller/) once and prints the binary's path. The binary and
# its extracted source are cached in the machine-wide cache
# (scripts/lib/cache.sh: metacontroller/), keyed on the archive's hash, this
# script and the Go version; its Go modules and build cache share the
# control plane's (tests/cluster/go-env.sh). The checkout's
# target/metacontroller/ links to both (metacontroller, src: the chart tests
# read its manifests).
#
#   tests/metacontroller/build.sh --key    only prints the key
#
#   metacontroller="$(tests/metacontroller/build.sh)"
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/go-env.sh"
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
if [ "${1:-}" = --key ]; then echo "$key"; exit 0; fi
build_lock go-metacontroller
out="$METAHOOK_CACHE/metacontroller"
bin="$out/metacontroller-$key"
src="$out/src-$key"
if [ ! -x "$bin" ] || [ ! -d "$src" ]; then
    echo "tests/metacontroller: building Metacontroller from $(basename "$archive"); minutes when cold" >&2
    start=$SECONDS
    rm -rf "$src"
    mkdir -p "$src"
    tar -xzf "$archive" -C "$src"
    # The archive's go.sum pins its modules; -mod=mod lets go fill what the
    # archive's vendor-less tree needs, as its own README does.
    (cd "$src" && GOFLAGS="$GOFLAGS -mod=mod" go build -ldflags "-s -w -X main.version=$version" -o "$bin.tmp" ./pkg/cmd/metacontroller)
    mv "$bin.tmp" "$bin"
    # Older builds are of an archive or a script that is gone.
    find "$out" -maxdepth 1 \( -name 'metacontroller-*' ! -name "metacontroller-$key" \
        -o -name 'src-*' ! -name "src-$key" \) -exec rm -rf {} +
    echo "tests/metacontroller: built in $((SECONDS - start)) s: $bin" >&2
fi
mkdir -p "$root/target/metacontroller"
link_to "$bin" "$root/target/metacontroller/metacontroller"
link_to "$src" "$root/target/metacontroller/src"
echo "$bin"
