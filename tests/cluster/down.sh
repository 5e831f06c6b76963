#!/usr/bin/env bash
# Stops the control plane tests/cluster/up.sh started in DIR (default
# target/cluster/run). Its data stays in DIR; --wipe removes DIR too.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/go-env.sh"
wipe=
if [ "${1:-}" = "--wipe" ]; then wipe=1; shift; fi
dir="${1:-$root/target/cluster/run}"
if [ -f "$dir/pid" ]; then
    pid="$(cat "$dir/pid")"
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        # Bounded: SIGKILL after 60 s (its components die with it).
        for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
    rm -f "$dir/pid" "$dir/env"
fi
if [ -n "$wipe" ]; then rm -rf "$dir"; fi
