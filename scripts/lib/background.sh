# Sourced by the scripts that run builds beside other work (scripts/test.sh,
# tests/e2e/run.sh). Each starts CMD in the background in a process group of
# its own (`kill -- -$background_pid` stops all of it) and sets
# background_pid:
#
#   idle_background CMD...      under SCHED_IDLE: only cycles nothing else here wants
#   nice_background N CMD...    at nice N: before idle work, after normal work
#
# Both stay in this shell's session: with autogroup scheduling
# (kernel.sched_autogroup_enabled, on here), a new session (setsid) is a
# scheduling group of its own that gets an equal share of the cores whatever
# its policy — measured here: a setsid'd SCHED_IDLE Go build took half the
# cores from the cargo steps and doubled clippy's time.
idle_background() {
    set -m
    chrt --idle 0 "$@" &
    background_pid=$!
    set +m
}
# stop_background PID: stops PID's process group if it still runs (PID may be empty).
stop_background() {
    if [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; then
        kill -- "-$1" 2>/dev/null || true
    fi
}
nice_background() {
    local level=$1
    shift
    set -m
    nice -n "$level" "$@" &
    background_pid=$!
    set +m
}
