#!/usr/bin/env bash
# Fuzzes the request decoder and every hook in the registry for a bounded
# time per target; fails if any target finds a crash, and keeps each crash
# under fuzz/regressions/<target>/, where `cargo test` replays it
# (tests/fuzz_regressions.rs).
#
#   fuzz/run.sh            # 60 s, the targets side by side
#   fuzz/run.sh 10         # 10 s per target (a smoke run)
#   FUZZ_SANITIZER=address fuzz/run.sh   # with ASan (slower; the crates
#                                        # forbid unsafe code, so off by default)
#   FUZZ_BUILD_ONLY=1 fuzz/run.sh        # cargo-fuzz and the build, no run
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-${FUZZ_SECONDS:-60}}
sanitizer=${FUZZ_SANITIZER:-none}
targets=(decode hooks hooks_json)

# cargo-fuzz passes nightly-only -Z flags; this machine has the stable
# toolchain only, which accepts them with RUSTC_BOOTSTRAP=1.
export RUSTC_BOOTSTRAP=1

# cargo-fuzz and the fuzz build's intermediate artifacts in the
# machine-wide cache (scripts/lib/cache.sh: tools/, cargo-fuzz/): a fresh
# clone rebuilds only the workspace crates. The build in a directory of its
# own: the fuzz flags would make every crate in the shared one rebuild.
CARGO_FUZZ_VERSION=0.13.2
source scripts/lib/build-lock.sh
tools="$METAHOOK_CACHE/tools"
export PATH="$tools/bin:$PATH"
if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
    build_lock cargo-fuzz
    if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
        echo "== installing cargo-fuzz $CARGO_FUZZ_VERSION"
        env -u CARGO_TARGET_DIR -u CARGO_BUILD_BUILD_DIR cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "$tools"
    fi
    build_unlock
fi
export CARGO_TARGET_DIR="$PWD/target/fuzz"
export CARGO_BUILD_BUILD_DIR="$METAHOOK_CACHE/cargo-fuzz"

echo "== building the fuzz targets (sanitizer: $sanitizer)"
cargo fuzz build --release --sanitizer "$sanitizer"
if [ -n "${FUZZ_BUILD_ONLY:-}" ]; then
    exit 0
fi

# Seed the byte-level targets with every fixture, as sent (compact) and as
# written (indented), so the fuzzer starts from requests that reach the hooks.
for target in decode hooks; do
    mkdir -p "fuzz/corpus/$target"
    for f in fixtures/*/*.json; do
        seed="fuzz/corpus/$target/fixture-$(basename "$(dirname "$f")")-$(basename "$f")"
        cp "$f" "$seed"
        python3 -c 'import json,sys; sys.stdout.write(json.dumps(json.load(open(sys.argv[1])),separators=(",",":")))' \
            "$f" >"${seed%.json}.compact.json"
    done
done
mkdir -p fuzz/corpus/hooks_json

# One target: its run, then what it found kept as a regression. Prints
# "failed" when the run failed or found something (its log says what).
fuzz_target() {
    local target=$1 max_len dict artifacts verdict=
    case $target in
        hooks_json) max_len=4096 ; dict=() ;;
        *)          max_len=65536; dict=(-dict=fuzz/json.dict) ;;
    esac
    artifacts="fuzz/artifacts/$target"
    mkdir -p "$artifacts"
    # The kept regressions are a second, read-only corpus: every run starts
    # by replaying them. -rss_limit_mb makes unbounded allocation a finding.
    if ! cargo fuzz run --release --sanitizer "$sanitizer" "$target" \
        "fuzz/corpus/$target" "fuzz/regressions/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=512 -max_len="$max_len" \
        -timeout=10 -print_final_stats=1 "${dict[@]}" \
        -artifact_prefix="$artifacts/" 2>"fuzz/artifacts/$target.log"; then
        verdict=failed
    fi
    for crash in "$artifacts"/crash-* "$artifacts"/oom-* "$artifacts"/timeout-* "$artifacts"/slow-unit-*; do
        [ -e "$crash" ] || continue
        cp "$crash" "fuzz/regressions/$target/"
        echo "kept $crash as fuzz/regressions/$target/$(basename "$crash")" >&2
        rm "$crash"
        verdict=failed
    done
    echo "$verdict"
}

# The targets side by side: each libFuzzer process is one thread, and the
# time bound is wall time, so running them one after another left a core
# idle for ${#targets[@]} × the bound (-rss_limit_mb holds each to 512 MB).
echo "== fuzzing ${targets[*]} side by side for ${seconds}s"
mkdir -p fuzz/artifacts
for target in "${targets[@]}"; do
    fuzz_target "$target" >"fuzz/artifacts/$target.verdict" &
done
wait
failed=()
for target in "${targets[@]}"; do
    echo "== $target"
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)' "fuzz/artifacts/$target.log" || true
    if grep -qx failed "fuzz/artifacts/$target.verdict"; then
        failed+=("$target")
        tail -40 "fuzz/artifacts/$target.log" >&2
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED: ${failed[*]} (inputs kept under fuzz/regressions/; replay: cargo test --test fuzz_regressions)" >&2
    exit 1
fi
echo "== no crash in ${#targets[@]} targets × ${seconds}s"
