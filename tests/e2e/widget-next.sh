#!/usr/bin/env bash
# The next version of examples/widget, made as its user would make one: the
# same crate with its text written differently (the copies joined with ", "
# where it joined them with " ") and its version 0.2.0, the revision its
# records name. tests/e2e/upgrade.rs plans it against the Widgets the first
# version drove, then drives with it.
#
# A copy under the target directory, edited there: examples/widget, and the
# crate `metahook new` writes from it, stay as they are. It depends on the
# library at this checkout's path, as the example does, and builds in the
# shared build directory (scripts/lib/cache.sh): only the copy's own crate
# is compiled. Prints the binary's path.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source scripts/lib/cache.sh
next="$CARGO_TARGET_DIR/widget-next"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/src"
cp examples/widget/src/*.rs "$stage/src/"
cp examples/widget/Cargo.lock "$stage/"
sed -e 's/^version = "0\.1\.0"$/version = "0.2.0"/' \
    -e "s|path = \"\\.\\./\\.\\./|path = \"$root/|" \
    examples/widget/Cargo.toml >"$stage/Cargo.toml"
# The lock file names the crate's own version.
sed -i '/^name = "widget-operator"$/{n;s/^version = "0\.1\.0"$/version = "0.2.0"/}' "$stage/Cargo.lock"
sed -i 's/\.join(" ")/.join(", ")/' "$stage/src/lib.rs"
# Each edit must have taken: a test of an upgrade that changed nothing
# would pass for the wrong reason.
grep -q '^version = "0.2.0"$' "$stage/Cargo.toml"
grep -A1 '^name = "widget-operator"$' "$stage/Cargo.lock" | grep -q '^version = "0.2.0"$'
grep -q '\.join(", ")' "$stage/src/lib.rs"
if grep -q 'path = "\.\./' "$stage/Cargo.toml"; then
    echo "tests/e2e/widget-next.sh: a relative path is left in its Cargo.toml" >&2
    exit 1
fi
# Only what differs is replaced: cargo rebuilds what is newer, and an
# unchanged copy builds nothing.
mkdir -p "$next/src"
for file in "$next"/src/*.rs; do
    if [ -e "$file" ] && [ ! -e "$stage/src/${file##*/}" ]; then rm "$file"; fi
done
for file in Cargo.toml Cargo.lock $(cd "$stage" && echo src/*.rs); do
    if ! cmp -s "$stage/$file" "$next/$file"; then cp "$stage/$file" "$next/$file"; fi
done
CARGO_TARGET_DIR="$next/target" cargo build --locked --manifest-path "$next/Cargo.toml" >&2
echo "$next/target/debug/widget-operator"
