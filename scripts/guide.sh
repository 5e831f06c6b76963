#!/usr/bin/env bash
# The guide (docs/, an mdBook): built without a warning, its Rust examples
# compiled and run against the library, its links and images checked, and
# its command-line reference checked against a binary's --help. Part of
# scripts/test.sh; the HTML is target/book/index.html.
#
# Cached in the machine-wide cache (scripts/lib/cache.sh), so a warm run only
# rebuilds the workspace crates and then takes seconds:
#   tools/bin/mdbook         mdBook, from crates.io, installed on first use
#                            (scripts/mdbook.sh)
#   cargo/debug/             examples/widget built with its tests: metahook,
#                            metahook-testing and every crate the examples
#                            link to; the widget shares the workspace's
#                            profiles, so most of it is what `cargo test`
#                            built already
#   target/guide-deps/lib/   links to exactly those crates (tests/guide/deps.py)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/cache.sh

mdbook="$(scripts/mdbook.sh)"

# The crates the examples link to: those of examples/widget (the crate the
# guide writes, its tests' dev-dependencies included), by path to this
# checkout, built into the shared target/; deps.py picks this build's
# artifacts out of it, one per crate an example may name.
target=$CARGO_TARGET_DIR
deps=$PWD/target/guide-deps
mkdir -p "$deps"
(cd examples/widget &&
  CARGO_TARGET_DIR="$target" cargo test --locked --no-run \
    --message-format=json-render-diagnostics >"$deps/artifacts.json" &&
  cargo tree --locked -e normal,dev --depth 1 --prefix none -f '{lib}|{f}' >"$deps/direct.txt")
python3 tests/guide/deps.py "$deps/artifacts.json" "$deps/direct.txt" "$deps/lib"

# mdBook reports a missing include or a broken HTML tag as a warning and
# goes on: here a warning fails.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$mdbook" build docs 2>&1 | tee "$log"
if grep -Eq '^ *(WARN|ERROR)' "$log"; then
  echo "mdbook build warned (above)" >&2
  exit 1
fi

# Every ```rust block of the guide, compiled and run as a doctest (no_run
# ones compiled only). mdBook prints nothing for a chapter that passes.
"$mdbook" test docs -L "$deps/lib"
python3 - <<'EOF'
import glob, re
run = no_run = 0
for page in glob.glob("docs/*.md"):
    for info in re.findall(r"^```(rust[^\n]*)$", open(page).read(), re.M):
        if "no_run" in info:
            no_run += 1
        else:
            run += 1
print(f"mdbook test: {run + no_run} Rust examples compiled, {run} of them run")
EOF

python3 tests/guide/check_links.py target/book README.md
# A user's binary for every command but `new`, which is the metahook
# binary's alone.
cargo build --locked --quiet --bin metahook
python3 tests/guide/check_cli.py "$target/debug/widget-operator" "$target/debug/metahook" docs/cli.md
