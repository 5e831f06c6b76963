#!/usr/bin/env bash
# Removes this workspace's own build output from target/ so the cache keeps
# only what is expensive to rebuild: dependencies, the Go-built control
# plane, images. Cargo never deletes an artifact it has replaced, and a
# workspace crate gets a new file name whenever its dependencies change, so
# without this the cache grew by gigabytes a day (49 GB of stale test
# binaries and incremental state seen here) until CI's disk filled up. Every
# change rebuilds the workspace crates anyway.
#
#   scripts/prune-target.sh      prints what it freed
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target}
before=$(du -sk "$target" 2>/dev/null | cut -f1 || echo 0)

# Package names (for .fingerprint/ and build/) and target names (for deps/),
# from cargo itself rather than a list that could drift.
mapfile -t names < <(cargo metadata --no-deps --format-version 1 --locked |
  python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    print(p["name"])
    for t in p["targets"]:
        print(t["name"].replace("-", "_"))
' | sort -u)

for profile in debug release profiling; do
  dir=$target/$profile
  [ -d "$dir" ] || continue
  rm -rf "$dir/incremental"
  for n in "${names[@]}"; do
    rm -rf "$dir"/deps/"$n"-* "$dir"/deps/lib"$n"-* \
      "$dir"/.fingerprint/"$n"-* "$dir"/build/"$n"-*
  done
done

after=$(du -sk "$target" 2>/dev/null | cut -f1 || echo 0)
echo "pruned $(((before - after) / 1024)) MiB of workspace build output from $target ($((after / 1024)) MiB left)"
