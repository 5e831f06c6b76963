# Sourced by the scripts that run builds beside other work (scripts/test.sh,
# tests/e2e/run.sh). `idle_background CMD...` starts CMD in the background
# under SCHED_IDLE (only cycles nothing else here wants), in a process group
# of its own (`kill -- -$background_pid` stops all of it), and sets
# background_pid. It stays in this shell's session: with autogroup scheduling
# (kernel.sched_autogroup_enabled, on here), a new session (setsid) is a
# scheduling group of its own that gets an equal share of the cores whatever
# its policy: a setsid'd SCHED_IDLE build would take half the cores from
# the steps it is meant to leave them to.
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
