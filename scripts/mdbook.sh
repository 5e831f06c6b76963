#!/usr/bin/env bash
# Installs mdBook (the version the guide is written for) into target/tools
# when it is not there yet, and prints its path. Without its `serve` and
# `watch` features: the tests only build and test the book, and those two
# are most of its dependencies (an HTTP server, a file watcher).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/build-lock.sh

MDBOOK_VERSION=0.5.4
mdbook=target/tools/bin/mdbook
build_lock mdbook
if [ "$("$mdbook" --version 2>/dev/null)" != "mdbook v$MDBOOK_VERSION" ]; then
  env -u CARGO_TARGET_DIR cargo install mdbook --version "$MDBOOK_VERSION" --locked --root target/tools \
    --no-default-features --features search >&2
fi
echo "$PWD/$mdbook"
