"""The crates the guide's Rust examples link to, one candidate each.

`mdbook test -L DIR` hands rustdoc one search directory, and an example's
`extern crate serde;` fails when DIR holds two `libserde-*.rlib` (E0464):
cargo keeps every artifact it ever built, and builds a crate twice in one
graph when build scripts or proc macros need it with other features. So
scripts/guide.sh builds for the host triple explicitly (what the examples
link lands in target/guide-deps/<triple>/, the build scripts' and proc
macros' own dependencies in target/guide-deps/debug/), and this links into
DIR exactly the artifacts of that build, from cargo's JSON messages: every
library of the target graph, and the proc macros (which rustdoc loads, not
links). It also removes the earlier builds' leftovers of the same crates,
so that target/guide-deps does not grow with every dependency update.

    python3 tests/guide/deps.py ARTIFACTS.json TARGET_DEPS_DIR DIR
"""

import json
import os
import re
import sys

ARTIFACT = re.compile(r"^lib(?P<name>\w+)-(?P<hash>[0-9a-f]{16})\.(rlib|rmeta|so)$")


def main(messages_path, target_deps, out_dir):
    target_deps = os.path.abspath(target_deps)
    current = set()  # paths of this build's library files
    linked = {}  # file name -> path, what the examples may load
    for line in open(messages_path):
        if not line.startswith("{"):
            continue
        message = json.loads(line)
        if message.get("reason") != "compiler-artifact":
            continue
        kinds = message["target"]["kind"]
        for path in message["filenames"]:
            path = os.path.abspath(path)
            current.add(path)
            name = os.path.basename(path)
            if "proc-macro" in kinds and name.endswith(".so"):
                linked[name] = path
            elif name.endswith(".rlib") and os.path.dirname(path) == target_deps:
                linked[name] = path
    if not linked:
        sys.exit(f"{messages_path}: no library artifacts in cargo's messages")

    # One candidate per crate name, or rustdoc cannot choose.
    by_crate = {}
    for name in linked:
        crate = ARTIFACT.match(name)
        if crate and name.endswith(".rlib"):
            by_crate.setdefault(crate["name"], []).append(name)

    os.makedirs(out_dir, exist_ok=True)
    for old in os.listdir(out_dir):
        os.remove(os.path.join(out_dir, old))
    for name, path in linked.items():
        os.symlink(path, os.path.join(out_dir, name))

    # Leftovers: the same crates built before with other hashes.
    names = {ARTIFACT.match(os.path.basename(p))["name"] for p in current if ARTIFACT.match(os.path.basename(p))}
    dirs = {os.path.dirname(p) for p in current if ARTIFACT.match(os.path.basename(p))}
    removed = 0
    for d in dirs:
        for file in os.listdir(d):
            m = ARTIFACT.match(file)
            path = os.path.join(d, file)
            if m and m["name"] in names and path not in current:
                os.remove(path)
                removed += 1
    twice = sorted(c for c, files in by_crate.items() if len(files) > 1)
    print(
        f"{out_dir}: {len(linked)} crates linked; {removed} stale artifacts removed"
        + (f"; built in two versions (an example may not name them): {', '.join(twice)}" if twice else "")
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
