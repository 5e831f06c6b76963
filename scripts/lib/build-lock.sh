# Sourced by the scripts that build a tool into the machine-wide cache
# (mdBook, the Go builds). `build_lock NAME` waits until no other process
# holds NAME, then holds it until the sourcing shell exits: scripts/test.sh
# builds these tools in the background while its first steps run, and a
# step that needs one waits here for that build instead of compiling the
# same packages beside it (Go's and cargo's caches are safe to share, not to
# fill twice); the locks live in the cache, so two clones wait for each
# other too.
#
# The background build runs under SCHED_IDLE (scripts/lib/background.sh):
# once a step waits for it, it is no longer spare work, so the waiter moves
# the holder and everything it runs to the normal policy (otherwise a cold
# run's step waits many minutes on an idle build beside three clusters).
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"
build_lock() {
    local dir="$METAHOOK_CACHE/locks"
    mkdir -p "$dir"
    exec {build_lock_fd}>"$dir/$1.lock"
    if ! flock --nonblock "$build_lock_fd"; then
        echo "waiting for the build of $1 another process is running ($dir/$1.lock)" >&2
        boost_holder "$dir/$1.holder"
        flock "$build_lock_fd"
    fi
    # Beside the lock, not in it: opening the lock to wait on it truncates it.
    echo "$BASHPID" >"$dir/$1.holder"
}
# build_unlock: lets go of the lock build_lock took, before the shell exits.
build_unlock() {
    exec {build_lock_fd}>&-
}
# boost_holder FILE: the process FILE names and all its descendants to
# SCHED_OTHER. Twice, for what was forked while the first pass ran (a child
# forked after its parent was moved inherits the normal policy). Best effort:
# a holder that has ended, or a user not allowed to, leaves the build as it is.
boost_holder() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 0
    [ -n "$pid" ] || return 0
    boost_tree "$pid"
    boost_tree "$pid"
}
boost_tree() {
    local child
    chrt --other --all-tasks --pid 0 "$1" >/dev/null 2>&1 || return 0
    for child in $(pgrep -P "$1"); do
        boost_tree "$child"
    done
}
