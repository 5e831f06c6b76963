#!/usr/bin/env bash
# Metacontroller's own examples (examples/*/test.sh in the v4.17.2 source
# archive, read from ../shared/metacontroller/ at run time) under the real
# Metacontroller and under `metahook drive`: each engine on a fresh stand-in
# control plane of tests/cluster/ (the two side by side), each example's hook
# server (sync.py under python3, sync.js under node, .jsonnet hooks under
# tests/examples/jsonnet-hooks/) on this machine, and once more with the
# hooks of its Rust port (examples/NAME/, run as NAME+rust) if it has one; the
# examples whose pods must really run (indexedjob) on a real node instead,
# one engine after the other, beside those. Prints
# a Markdown table, example x engine, and fails when an example does other
# than tests/examples/expected.txt says (tests/examples/examples.py does the
# work).
#
#   tests/examples/run.sh                          # both engines, every example
#   tests/examples/run.sh driver -k bluegreen      # one engine, one example (-k repeatable)
#   tests/examples/run.sh --serial                 # the engines one after the other
#
# METAHOOK_EXAMPLES_TIMEOUT: seconds per example (default 240). The last
# run's logs (each test.sh, engine and hook server): target/examples/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source scripts/lib/cache.sh

engines=()
filter=()
while [ $# -gt 0 ]; do
    case "$1" in
    metacontroller | driver) engines+=("$1") ;;
    -k) filter+=(-k "$2"); shift ;;
    --serial) filter+=(--serial) ;;
    *) echo "usage: tests/examples/run.sh [metacontroller] [driver] [-k EXAMPLE]... [--serial]" >&2; exit 2 ;;
    esac
    shift
done
[ ${#engines[@]} -gt 0 ] || engines=(metacontroller driver)

for tool in node python3; do
    command -v "$tool" >/dev/null || { echo "tests/examples: $tool is needed (the examples' hook servers)" >&2; exit 2; }
done
archive="${METAHOOK_METACONTROLLER_ARCHIVE:-$root/../shared/metacontroller/metacontroller-v4.17.2.tar.gz}"
# The Rust ports of the examples, expected.txt's NAME+rust rows: the crate
# examples/NAME/, binary metahook-example-NAME, each.
ports=()
for name in $(sed -nE 's/^([a-z0-9-]+)\+rust[[:space:]].*/\1/p' tests/examples/expected.txt | sort -u); do
    ports+=(-p "metahook-example-$name")
done
cargo build --locked --bin metahook
[ ${#ports[@]} -eq 0 ] || cargo build --locked "${ports[@]}"
bindir="$(cd "${CARGO_TARGET_DIR:-$root/target}" && pwd)/debug"
metahook="$bindir/metahook"
metacontroller=
case " ${engines[*]} " in *" metacontroller "*) metacontroller="$(tests/metacontroller/build.sh)" ;; esac

# service-per-pod's hook server (jsonnet-hooks/main.go, go-jsonnet).
jsonnet_hooks="$(tests/examples/jsonnet-hooks/build.sh)"

# Once here: the control planes below start side by side, and two builds
# of a changed control plane at once would write the same file.
tests/cluster/build.sh >/dev/null

# PyYAML from the chart tests' venv (tests/chart/requirements.txt pins it).
source scripts/lib/venv.sh
test_venv

exec "$venv/bin/python" tests/examples/examples.py run --engines "${engines[@]}" "${filter[@]}" \
    --archive "$archive" --metahook "$metahook" --jsonnet-hooks "$jsonnet_hooks" --rust-hooks "$bindir" ${metacontroller:+--metacontroller "$metacontroller"} \
    ${METAHOOK_EXAMPLES_TIMEOUT:+--timeout "$METAHOOK_EXAMPLES_TIMEOUT"}
