#!/usr/bin/env bash
# Installs mdBook (the version the guide is written for) into the
# machine-wide cache's tools/ (scripts/lib/cache.sh) when it is not there
# yet, and prints its path. Without its `serve` and
# `watch` features: the tests only build and test the book, and those two
# are most of its dependencies (an HTTP server, a file watcher).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/build-lock.sh

MDBOOK_VERSION=0.5.4
mdbook=$METAHOOK_CACHE/tools/bin/mdbook
build_lock mdbook
if [ "$("$mdbook" --version 2>/dev/null)" != "mdbook v$MDBOOK_VERSION" ]; then
  env -u CARGO_TARGET_DIR -u CARGO_BUILD_BUILD_DIR cargo install mdbook --version "$MDBOOK_VERSION" --locked \
    --root "$METAHOOK_CACHE/tools" \
    --no-default-features --features search >&2
fi
echo "$mdbook"
