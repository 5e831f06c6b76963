# Sourced by the scripts that build a tool into target/ (mdBook, the Go
# builds). `build_lock NAME` waits until no other process holds NAME, then
# holds it until the sourcing shell exits: scripts/test.sh builds these
# tools in the background while its first steps run, and a step that needs
# one waits here for that build instead of compiling the same packages
# beside it (Go's and cargo's caches are safe to share, not to fill twice).
build_lock() {
    local dir
    dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/target/locks"
    mkdir -p "$dir"
    exec {build_lock_fd}>"$dir/$1.lock"
    if ! flock --nonblock "$build_lock_fd"; then
        echo "waiting for the build of $1 another process is running (target/locks/$1.lock)" >&2
        flock "$build_lock_fd"
    fi
}
