# Sourced by the scripts that run builds beside other work (scripts/test.sh,
# tests/e2e/run.sh). `idle_background CMD...` starts CMD in the background
# under SCHED_IDLE, so it runs only on cycles nothing else here wants, in a
# process group of its own (`kill -- -$idle_pid` stops all of it), and sets
# idle_pid. It stays in this shell's session: with autogroup scheduling
# (kernel.sched_autogroup_enabled, on here), a new session (setsid) is a
# scheduling group of its own that gets an equal share of the cores whatever
# its policy — measured here: a setsid'd SCHED_IDLE Go build took half the
# cores from the cargo steps and doubled clippy's time.
idle_background() {
    set -m
    chrt --idle 0 "$@" &
    idle_pid=$!
    set +m
}
