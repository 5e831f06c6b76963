# shellcheck shell=bash
# Sourced by every script that builds something a later run can reuse: the
# machine-wide build cache, outside the checkout, so that a fresh clone on a
# machine that has built the project once starts warm. One variable moves it:
#
#   METAHOOK_CACHE   default ${XDG_CACHE_HOME:-$HOME/.cache}/metahook
#
# What lives there (each keyed on everything that built it; docs/testing.md):
#   cargo/          Cargo's build directory (build.build-dir): every crate's
#                   intermediate artifacts, the workspace's and the crates
#                   outside it that share its profiles (examples/widget, what
#                   `metahook new` writes, the guide's examples). Cargo keys
#                   them itself and locks the directory while it builds; the
#                   final artifacts (target/debug/metahook…) stay in the
#                   checkout's target/, so two clones never share a binary.
#   cargo-fuzz/     the same for the fuzz crate (its flags differ)
#   go/mod go/build Go's module and build caches
#   cluster/ metacontroller/ jsonnet-hooks/
#                   the Go-built tools, one directory or binary per key
#   images/         buildah's storage and the images' archives
#   tools/          mdBook and cargo-fuzz (cargo install --root)
#   venv/KEY        the chart tests' Python venv, keyed on the requirements
#   debian/         Debian packages unpacked by scripts/debian-package.sh
#   locks/          one build of a tool at a time, across clones
#
# scripts/prune-target.sh keeps it bounded.
metahook_cache_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export METAHOOK_CACHE="${METAHOOK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metahook}"
mkdir -p "$METAHOOK_CACHE"
METAHOOK_CACHE="$(cd "$METAHOOK_CACHE" && pwd)"
# The final artifacts in the checkout's target/ unless the caller chose
# another place; the intermediate ones in the cache.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$metahook_cache_root/target}"
export CARGO_BUILD_BUILD_DIR="${CARGO_BUILD_BUILD_DIR:-$METAHOOK_CACHE/cargo}"
# Cargo keys a workspace crate by its path within the workspace, so two
# checkouts' crates take the same names in the shared build directory, and
# a checkout whose sources are older than another's build would take that
# build as fresh. The directory remembers which checkout built the
# workspace's crates there last; any other removes them first
# (scripts/prune-target.sh, which leaves alone a profile another cargo is
# building in, and then says so by its exit status: the mark is not moved).
metahook_cache_owner="$CARGO_BUILD_BUILD_DIR/.checkout"
if [ -z "${METAHOOK_PRUNING:-}" ] &&
    [ "$(cat "$metahook_cache_owner" 2>/dev/null)" != "$metahook_cache_root" ]; then
    if METAHOOK_PRUNING=1 "$metahook_cache_root/scripts/prune-target.sh" >&2; then
        mkdir -p "$CARGO_BUILD_BUILD_DIR"
        echo "$metahook_cache_root" >"$metahook_cache_owner"
    fi
fi
