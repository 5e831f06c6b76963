#!/usr/bin/env bash
# Memory under many big, slow hook requests, on loopback: the release binary
# with its defaults (--max-buffered-bytes 128 MiB, --max-body-bytes 32 MiB,
# --max-connections 256, one worker per CPU), then N clients at once, each
# sending a big hook request (below) in 64 KiB pieces 2 ms apart and, when
# refused with 429, trying again after Retry-After (as Metacontroller does). RSS is
# sampled from /proc every 50 ms, /healthz probed every 100 ms (2 s timeout),
# the bytes-buffered gauge read every 200 ms (bench/memory.py).
#
#   bench/memory.sh                 # every run below
#   ONLY=hello-40 bench/memory.sh   # the runs whose name contains "hello-40"
#   ONLY=hostile bench/memory.sh    # only the hostile shapes
#
# Then the hostile shapes (testkit/src/hostile.rs): every shape in the
# places where a shape costs most (the parent's ownerReferences and
# the children, or for customize the parent's conditions), for every hook,
# HOSTILE_BYTES each (default 30 MiB, under --max-body-bytes), as many at
# once as the server has workers (WORKERS, default 1 as in the chart). Each
# row is checked: every answer 200 or 4xx, /healthz always 200, peak RSS
# (VmHWM) under 256 MiB and under the stated bound: idle + the bodies + per
# worker K x body + C (docs/robustness.md, "Hostile shapes").
#
# The server runs with MALLOC_MMAP_THRESHOLD_=131072, as the Dockerfile sets
# it, except in the run named "glibc-default" (as `cargo run` would).
#
# Prints a Markdown table; writes it to target/bench/memory-<UTC time>.md.
# Exits non-zero unless every run marked "checked" met the acceptance: every
# answer a 200 or a 429 with Retry-After, every client served in the end,
# /healthz always 200, peak RSS under the chart's 256 MiB memory limit and
# under the stated bound: idle RSS + the budget + per worker the hook's own
# use besides the body (measured alone: Hello 0.7 times its body, Hikawa 2.7
# times) + 160 KiB per connection (actix's read and payload buffers).
set -euo pipefail
cd "$(dirname "$0")/.."

ONLY=${ONLY:-}
PORT=${PORT:-18090}
LIMIT_MIB=256                    # the chart's resources.limits.memory
MALLOC=MALLOC_MMAP_THRESHOLD_=131072
OUT=target/bench
mkdir -p "$OUT"
REPORT="$OUT/memory-$(date -u +%Y%m%dT%H%M%SZ).md"
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null || true; }
trap cleanup EXIT

echo "== building the release binary and the request generator"
{ cargo build --release --locked --bin metahook && cargo build --release --locked -p metahook-testkit --example gen_request; } 2>&1 | grep -E '^error' || true
BIN=target/release/metahook
GEN=target/release/examples/gen_request
[ -x "$BIN" ] && [ -x "$GEN" ] || { echo "build failed" >&2; exit 1; }

# About 4.8 and 15.6 MB: a request holds at most 1,000 Deployments and
# 11,001 Zundokos and Kiyoshis (ObservedWord's Object::MAX in seeds/src/hikawa/observed.rs).
HELLO="$OUT/hello-1000.json"
"$GEN" hello 1000 >"$HELLO"
HIKAWA="$OUT/hikawa-11000.json"
"$GEN" hikawa 11000 >"$HIKAWA"
SMALL="$OUT/hello-ready.json"
python3 -c 'import json,sys; sys.stdout.write(json.dumps(json.load(open(sys.argv[1])),separators=(",",":")))' \
    fixtures/hello/ready.json >"$SMALL"

CPU=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== machine: $(nproc) cores ($CPU), load average $LOADAVG"

ROWS=()
FAILED=0
# run NAME HOOK BODY CONNECTIONS checked|reported SERVER_ENV [server flags...]
run() {
    local name=$1 hook=$2 body=$3 conns=$4 check=$5 env=$6
    shift 6
    [[ -z "$ONLY" || "$name" == *"$ONLY"* ]] || return 0
    read -r PID _ < <(env $env python3 bench/start.py "$PORT" /hello/sync "$SMALL" -- "$BIN" --listen "127.0.0.1:$PORT" "$@")
    sleep 0.5
    echo "== $name: $conns connections, $hook, $(stat -c %s "$body") bytes, flags: ${*:-none} (pid $PID)"
    local result
    result=$(HOOK=$hook python3 bench/memory.py "$PID" "$PORT" "$body" "$conns")
    kill "$PID" 2>/dev/null || true
    PID=
    echo "   $result"
    local row verdict
    row=$(python3 - "$result" "$name" "$hook" "$conns" "$(stat -c %s "$body")" "${*:-defaults}" "$env" "$LIMIT_MIB" "$(nproc)" <<'EOF'
import json, sys
r = json.loads(sys.argv[1])
name, hook, conns, size, flags, env, limit = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7], int(sys.argv[8])
mib = lambda kib: kib / 1024
refused = r["refused"] + r["refused_without_retry_after"]
reasons = ", ".join(f"{k}" for k in sorted(r["refused_reasons"])) or "-"
other = ", ".join(f"{k}: {v}" for k, v in sorted(r["other"].items())) or "0"
health = f'{r["healthz_ok"]}/{r["healthz_ok"] + r["healthz_failed"]} (slowest {r["healthz_max_ms"]:.0f} ms)'
# The stated bound: idle + the budget + per worker the hook's own use of
# memory besides the body (measured: Hello 0.7x its body, Hikawa 2.7x) +
# actix's buffers, up to 160 KiB per connection.
workers = int(flags.split("--workers ")[1].split()[0]) if "--workers " in flags else int(sys.argv[9])
factor = {"/hello/sync": 0.7, "/hikawa/sync": 2.7}[hook]
budget = 128 if "--max-buffered-bytes" not in flags else float("inf")
bound = mib(r["rss_idle_kib"]) + budget + workers * factor * size / 2**20 + conns * 160 / 1024
ok = (not r["other"] and r["refused_without_retry_after"] == 0 and r["served_connections"] == conns
      and r["healthz_failed"] == 0 and mib(r["rss_peak_kib"]) < limit and mib(r["rss_peak_kib"]) <= bound)
malloc = "glibc default" if not env else env.split("=")[0] + " " + env.split("=")[1]
print(f'| {name} | {hook} {size / 1e6:.1f} MB | {conns} | {flags}; {malloc} | {r["ok"]} | {refused} '
      f'({reasons}; without Retry-After: {r["refused_without_retry_after"]}) | {other} | '
      f'{r["buffered_peak"] / 2**20:.0f} MiB | {mib(r["rss_idle_kib"]):.0f} / **{mib(r["rss_peak_kib"]):.0f}** / '
      f'{mib(r["rss_after_kib"]):.0f} MiB | {bound:.0f} MiB | {health} | {r["seconds"]} s |')
print("ok" if ok else "not met")
EOF
)
    verdict=$(tail -1 <<<"$row")
    ROWS+=("$(head -1 <<<"$row")")
    echo "   acceptance: $verdict ($check)"
    if [ "$check" = checked ] && [ "$verdict" != ok ]; then FAILED=1; fi
}

run hello-40 /hello/sync "$HELLO" 40 checked "$MALLOC"
run hello-256 /hello/sync "$HELLO" 256 checked "$MALLOC"
# The chart's CPU limit (1) gives one worker: one hook decodes at a time.
run hikawa-40-chart /hikawa/sync "$HIKAWA" 40 checked "$MALLOC" --workers 1
# Hikawa's hook uses about 2.7 times its body besides it, per worker.
run hikawa-40 /hikawa/sync "$HIKAWA" 40 reported "$MALLOC"
# glibc's dynamic mmap threshold keeps freed bodies in its arenas.
run hello-40-glibc-default /hello/sync "$HELLO" 40 reported ""
# Before the budget: nothing bounds the bodies held.
run hello-40-no-budget /hello/sync "$HELLO" 40 reported "$MALLOC" --max-buffered-bytes 1099511627776

HOSTILE_BYTES=${HOSTILE_BYTES:-31457280}
WORKERS=${WORKERS:-1}
HROWS=()
# hostile HOOK PLACE SHAPE
hostile() {
    local hook=$1 place=$2 shape=$3 name="hostile $1 $2 $3"
    [[ -z "$ONLY" || "$name" == *"$ONLY"* ]] || return 0
    local body="$OUT/hostile.json"
    "$GEN" hostile "$hook" "$place" "$shape" "$HOSTILE_BYTES" >"$body"
    read -r PID _ < <(env $MALLOC python3 bench/start.py "$PORT" /hello/sync "$SMALL" -- "$BIN" --listen "127.0.0.1:$PORT" --workers "$WORKERS")
    local result row
    result=$(HOOK="/${hook%%,*}" python3 bench/memory.py hostile "$PID" "$PORT" "$body" "$WORKERS")
    kill "$PID" 2>/dev/null || true
    PID=
    row=$(python3 bench/memory.py row "$result" "$hook" "$place" "$shape" "$(stat -c %s "$body")" "$WORKERS" "$LIMIT_MIB")
    HROWS+=("$(head -1 <<<"$row")")
    echo "   $row" | tr '\n' ' '; echo
    [ "$(tail -1 <<<"$row")" = ok ] || FAILED=1
}

SHAPES="empty-objects empty-arrays deep-nesting long-keys tiny-strings numbers minimal-objects"
for hook in "hello/sync" "hello/sync, invalid spec" "hello/finalize" "hikawa/sync" "foo/customize" "foo/sync" "foo/sync, invalid spec"; do
    if [ "$hook" = foo/customize ]; then
        places="parent.metadata.ownerReferences parent.status.conditions"
    else
        places="parent.metadata.ownerReferences children"
    fi
    for place in $places; do
        for shape in $SHAPES; do
            hostile "$hook" "$place" "$shape"
        done
    done
done

{
    echo "$(date -u +%Y-%m-%d) $(date -u +%H:%M) UTC; $(nproc) vCPUs ($CPU), shared by the server and the clients"
    echo "(loopback); load average before: $LOADAVG. Command: \`bench/memory.sh\`."
    echo
    echo "| run | request | connections | server | 200s | refusals (429) | other | buffered peak (gauge) | RSS idle / peak / after | stated bound | /healthz 200 | took |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "Hostile shapes, --workers $WORKERS, $WORKERS at once:"
    echo
    echo "| hook | place | shape | body | answers | RSS idle / peak | stated bound | /healthz 200 |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${HROWS[@]}"
} | tee "$REPORT"
echo
echo "(written to $REPORT)"
exit "$FAILED"
