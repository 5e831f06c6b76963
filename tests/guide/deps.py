"""The crates the guide's Rust examples link to, one candidate each.

`mdbook test -L DIR` hands rustdoc one search directory, and an example's
`use serde::…` fails when DIR holds two `libserde-*.rlib` (E0464). Cargo
builds a crate twice in one graph when build scripts or proc macros need
it with other features, and scripts/guide.sh builds examples/widget into
the shared target/ (so it reuses what the workspace built), where other
builds' artifacts lie beside them too. So this links into DIR exactly the
artifacts of that build, from cargo's JSON messages: every library of the
graph and the proc macros (which rustdoc loads, not links). Of a crate
the examples may name (examples/widget itself and its direct dependencies,
with the features `cargo tree` resolved for them) only the build with those
features is linked. A crate built twice deeper in the graph may stay
twice: rustc finds a dependency's dependency by its hash, not its name.

    python3 tests/guide/deps.py ARTIFACTS.json DIRECT.txt DIR

DIRECT.txt: `cargo tree -e normal,dev --depth 1 --prefix none -f '{lib}|{f}'`
run in examples/widget.
"""

import json
import os
import re
import sys

ARTIFACT = re.compile(r"^lib(?P<name>\w+)-(?P<hash>[0-9a-f]{16})\.(rlib|rmeta|so)$")


def direct_features(tree_path):
    """Library name -> its features, for the crate and its direct dependencies."""
    direct = {}
    for line in open(tree_path):
        line = line.strip()
        # `(*)` marks a repeat; a package without a library prints no name.
        line = line.removesuffix(" (*)")
        name, sep, features = line.partition("|")
        if not sep or not name:
            continue
        direct[name] = sorted(f for f in features.split(",") if f)
    return direct


def main(messages_path, tree_path, out_dir):
    direct = direct_features(tree_path)
    candidates = {}  # crate name -> [(features, path)]
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
            name = os.path.basename(path)
            if "proc-macro" in kinds and name.endswith(".so"):
                linked[name] = path
            elif name.endswith(".rlib"):
                crate = ARTIFACT.match(name)
                if crate:
                    candidates.setdefault(crate["name"], []).append((sorted(message["features"]), path))
    if not candidates:
        sys.exit(f"{messages_path}: no library artifacts in cargo's messages")

    twice = []
    for crate, builds in candidates.items():
        if len(builds) > 1 and crate in direct:
            builds = [b for b in builds if b[0] == direct[crate]]
            if len(builds) != 1:
                sys.exit(f"{crate}: {len(builds)} builds with the features cargo tree gives, {direct[crate]}")
        elif len(builds) > 1:
            twice.append(crate)
        for _, path in builds:
            linked[os.path.basename(path)] = path
    missing = sorted(set(direct) - set(candidates))
    if missing:
        sys.exit(f"{messages_path}: no library built for {', '.join(missing)}")

    os.makedirs(out_dir, exist_ok=True)
    for old in os.listdir(out_dir):
        os.remove(os.path.join(out_dir, old))
    for name, path in linked.items():
        os.symlink(path, os.path.join(out_dir, name))
    print(
        f"{out_dir}: {len(linked)} crates linked"
        + (f"; built twice deeper in the graph (found by hash): {', '.join(sorted(twice))}" if twice else "")
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
