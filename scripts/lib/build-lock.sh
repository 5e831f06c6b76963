# Sourced by the scripts that build a tool into the machine-wide cache
# (mdBook, the Go builds). `build_lock NAME` waits until no other process
# holds NAME, then holds it until the sourcing shell exits: scripts/test.sh
# builds these tools in the background while its first steps run, and a
# step that needs one waits here for that build instead of compiling the
# same packages beside it (Go's and cargo's caches are safe to share, not to
# fill twice); the locks live in the cache, so two clones wait for each
# other too.
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"
build_lock() {
    local dir="$METAHOOK_CACHE/locks"
    mkdir -p "$dir"
    exec {build_lock_fd}>"$dir/$1.lock"
    if ! flock --nonblock "$build_lock_fd"; then
        echo "waiting for the build of $1 another process is running ($dir/$1.lock)" >&2
        flock "$build_lock_fd"
    fi
}
# build_unlock: lets go of the lock build_lock took, before the shell exits.
build_unlock() {
    exec {build_lock_fd}>&-
}
