#!/usr/bin/env bash
# Keeps the machine-wide Cargo build directories (scripts/lib/cache.sh:
# cargo/ and cargo-fuzz/) bounded, so the cache holds what is expensive to
# rebuild: the dependencies.
#
# 1. The workspace's own crates go, of every checkout that built there:
#    Cargo never deletes an artifact it has replaced, each clone's crates are
#    artifacts of their own (their path is part of their identity), and a
#    fresh clone rebuilds them anyway. A crate is the workspace's when its
#    dep-info names a source outside Cargo's registry and git checkouts.
# 2. Past METAHOOK_CACHE_CARGO_GIB (default 20) what is left is removed
#    whole: dependencies change rarely, so this happens rarely, and the next
#    run rebuilds them.
#
# A profile directory another Cargo holds (its .cargo-lock: another clone
# building) is left alone this time, and the exit status is then 75.
#
#   scripts/prune-target.sh      prints what it freed
set -euo pipefail
cd "$(dirname "$0")/.."
export METAHOOK_PRUNING=1
source scripts/lib/cache.sh

python3 - "${CARGO_HOME:-$HOME/.cargo}" "${METAHOOK_CACHE_CARGO_GIB:-20}" \
    "$CARGO_BUILD_BUILD_DIR" "$METAHOOK_CACHE/cargo-fuzz" <<'EOF'
import fcntl, glob, os, shutil, sys

cargo_home, limit_gib, build_dirs = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
dependency_prefixes = tuple(os.path.realpath(os.path.join(cargo_home, d)).rstrip("/") + "/" for d in ("registry", "git"))


def ours(dep_info, generated):
    # A dep-info file names the sources its artifact was built from; a
    # dependency's are in Cargo's registry or git checkouts (or generated in
    # the build directory). Matching by name would not do: test targets
    # called `http` or `tls` share their names with crates.
    with open(dep_info, errors="replace") as f:
        for line in f:
            _, sep, sources = line.partition(": ")
            if not sep:
                continue
            for source in sources.split():
                # Cargo writes a workspace member's sources relative to its
                # workspace, everything else absolute.
                if not source.startswith("/"):
                    return True
                if not source.startswith(dependency_prefixes) and not source.startswith(generated):
                    return True
    return False


def size(path):
    if os.path.isdir(path) and not os.path.islink(path):
        return sum(os.lstat(os.path.join(d, f)).st_size for d, _, files in os.walk(path) for f in files)
    return os.lstat(path).st_size if os.path.lexists(path) else 0


def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def profiles(build_dir):
    # The profiles, for the host and for an explicit --target (the fuzz
    # build's triple): each holds its own .cargo-lock.
    found = glob.glob(os.path.join(build_dir, "*", "deps")) + glob.glob(os.path.join(build_dir, "*", "*", "deps"))
    return sorted(os.path.dirname(d) for d in found)


def locked(base):
    """Holds base's .cargo-lock (None if another Cargo holds it)."""
    f = open(os.path.join(base, ".cargo-lock"), "a")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        return None
    return f


freed = 0
skipped = False
for build_dir in build_dirs:
    if not os.path.isdir(build_dir):
        continue
    generated = os.path.realpath(build_dir).rstrip("/") + "/"
    busy = False
    for base in profiles(build_dir):
        lock = locked(base)
        if lock is None:
            print(f"prune-target: {base} is in use by another cargo; left as it is")
            busy = skipped = True
            continue
        with lock:
            deps = os.path.join(base, "deps")
            names = os.listdir(deps)
            stems = {n[:-2] for n in names if n.endswith(".d") and ours(os.path.join(deps, n), generated)}
            hashes = {s.rsplit("-", 1)[-1] for s in stems}
            doomed = [os.path.join(base, "incremental")]
            for n in names:
                stem = n[3:] if n.startswith("lib") else n
                if n.split(".", 1)[0] in stems or stem.split(".", 1)[0] in stems:
                    doomed.append(os.path.join(deps, n))
            fingerprints = os.path.join(base, ".fingerprint")
            if os.path.isdir(fingerprints):
                doomed += [os.path.join(fingerprints, n) for n in os.listdir(fingerprints) if n.rsplit("-", 1)[-1] in hashes]
            for path in doomed:
                freed += size(path)
                remove(path)
    total = size(build_dir)
    if total > limit_gib * 2**30:
        if busy:
            print(f"prune-target: {build_dir} is {total / 2**30:.1f} GiB, over {limit_gib:g}, but in use; left as it is")
            continue
        print(f"prune-target: {build_dir} is {total / 2**30:.1f} GiB, over {limit_gib:g}: removed whole")
        freed += total
        shutil.rmtree(build_dir)
print(f"pruned {freed // 2**20} MiB of the workspaces' build output from {', '.join(build_dirs)}")
sys.exit(75 if skipped else 0)
EOF
