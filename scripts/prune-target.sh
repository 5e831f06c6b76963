#!/usr/bin/env bash
# Removes this workspace's own build output from target/ so the cache keeps
# only what is expensive to rebuild: dependencies, the Go-built control
# plane, images. Cargo never deletes an artifact it has replaced, and a
# workspace crate gets a new file name whenever its dependencies change, so
# without this the cache grew by gigabytes a day (49 GB of stale test
# binaries and incremental state seen here) until CI's disk filled up. Every
# change rebuilds the workspace crates anyway.
#
#   scripts/prune-target.sh      prints what it freed
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target}
packages=$(cargo metadata --no-deps --format-version 1 --locked |
  python3 -c 'import json, sys; print("\n".join(p["name"] for p in json.load(sys.stdin)["packages"]))')

python3 - "$PWD" "$target" "$packages" <<'EOF'
import glob, os, shutil, sys

root, target, packages = sys.argv[1], sys.argv[2], sys.argv[3].split()
ours_prefix = root.rstrip("/") + "/"
generated = os.path.realpath(target).rstrip("/") + "/"


def ours(dep_info):
    # A dep-info file names the sources its artifact was built from; ours
    # are in this checkout, a dependency's in cargo's registry. Matching
    # by name would not do: test targets called `http` or `tls` share
    # their names with crates.
    with open(dep_info, errors="replace") as f:
        for line in f:
            _, sep, sources = line.partition(": ")
            if not sep:
                continue
            for source in sources.split():
                # Cargo writes a workspace member's sources relative to
                # the workspace, everything else absolute.
                if not source.startswith("/") or (
                    source.startswith(ours_prefix) and not source.startswith(generated)
                ):
                    return True
    return False


def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


freed = 0
# The profiles, and fuzz/run.sh's build (target/fuzz: host and fuzz triple).
bases = [os.path.join(target, p) for p in ("debug", "release", "profiling")]
bases += glob.glob(os.path.join(target, "fuzz", "release")) + glob.glob(os.path.join(target, "fuzz", "*", "release"))
for base in bases:
    if not os.path.isdir(os.path.join(base, "deps")):
        continue
    doomed = [os.path.join(base, "incremental")]
    deps = os.path.join(base, "deps")
    names = os.listdir(deps) if os.path.isdir(deps) else []
    stems = {n[:-2] for n in names if n.endswith(".d") and ours(os.path.join(deps, n))}
    for n in names:
        stem = n[3:] if n.startswith("lib") else n
        if n in stems or stem.split(".", 1)[0] in stems or n.split(".", 1)[0] in stems:
            doomed.append(os.path.join(deps, n))
    for sub in (".fingerprint", "build"):
        d = os.path.join(base, sub)
        if os.path.isdir(d):
            doomed += [os.path.join(d, n) for n in os.listdir(d)
                       if any(n.startswith(p + "-") and n[len(p) + 1:].isalnum() for p in packages)]
    for path in doomed:
        if not os.path.lexists(path):
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            for dirpath, _, files in os.walk(path):
                freed += sum(os.lstat(os.path.join(dirpath, f)).st_size for f in files)
        else:
            freed += os.lstat(path).st_size
        remove(path)
print(f"pruned {freed // 2**20} MiB of this workspace's build output from {target}")
EOF
