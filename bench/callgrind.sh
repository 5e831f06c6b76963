#!/usr/bin/env bash
# Instructions per Hello sync request through the whole server (HTTP,
# middleware, metrics, decode, hook, encode), counted by callgrind: the same
# count whatever else the machine is doing, so it compares builds on a busy
# machine where requests/s cannot.
#
#   bench/callgrind.sh [REQUESTS] [BODY]    # default 2000, the Hello fixture
#
# Runs the server (profiling build: release with symbols) under callgrind
# twice, with no requests and with REQUESTS sequential ones on one
# keep-alive connection, and prints (difference / REQUESTS), then the
# functions that cost most.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000}
OUT=target/bench
mkdir -p "$OUT"
BODY=${2:-$OUT/hello-ready.json}
if [ ! -s "$BODY" ]; then
    python3 -c 'import json,sys; sys.stdout.write(json.dumps(json.load(open(sys.argv[1])),separators=(",",":")))' \
        fixtures/hello/ready.json >"$BODY"
fi
cargo build --profile profiling --bin metahook 2>&1 | grep -E '^error' || true
BIN=target/profiling/metahook
PORT=${PORT:-18090}

run() {
    local n=$1 out=$2
    valgrind --tool=callgrind --callgrind-out-file="$out" "$BIN" \
        --listen "127.0.0.1:$PORT" --workers 1 >/dev/null 2>"$out.log" &
    local pid=$!
    python3 - "$PORT" "$BODY" "$n" <<'PY'
import http.client, sys, time
port, body, n = int(sys.argv[1]), open(sys.argv[2], "rb").read(), int(sys.argv[3])
deadline = time.time() + 120
while True:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/healthz"); conn.getresponse().read(); break
    except OSError:
        if time.time() > deadline: sys.exit("server did not start")
        time.sleep(0.2)
for _ in range(n):
    conn.request("POST", "/hello/sync", body, {"Content-Type": "application/json"})
    r = conn.getresponse(); r.read()
    assert r.status == 200, r.status
PY
    kill -INT "$pid"
    wait "$pid" || true
}

run 0 "$OUT/callgrind.idle.out"
run "$N" "$OUT/callgrind.load.out"
total() { grep -E '^(summary|totals):' "$1" | head -1 | awk '{print $2}'; }
IDLE=$(total "$OUT/callgrind.idle.out")
LOAD=$(total "$OUT/callgrind.load.out")
echo "instructions per request: $(( (LOAD - IDLE) / N ))  (body $(stat -c %s "$BODY") bytes, $N requests, 1 worker)"
callgrind_annotate --inclusive=no "$OUT/callgrind.load.out" 2>/dev/null | sed -n '1,60p' | grep -E '^ *[0-9,]+ ' | head -30
