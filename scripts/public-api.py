#!/usr/bin/env python3
"""The public surface of the crates a user compiles against, one line per
item, checked in beside each crate (`<crate>/public-api.txt`) so that a
change to it shows in review: every public path from the crate's root (its
modules, re-exports followed), each item's kind, and the public methods,
fields, variants and trait items under a type; trait implementations are
left out. Read from rustdoc's JSON output (`--output-format json`, unstable:
RUSTC_BOOTSTRAP=1 on the pinned stable toolchain; its format_version is
checked, so a toolchain that writes another fails here and says so).

  scripts/public-api.py           write the listings
  scripts/public-api.py --check   fail, with the difference, if one is stale
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The crates a user's code names: the library, its pure core, the test
# library. (The planner and the runtime's crates are theirs, not a user's.)
CRATES = {"metahook": "metahook", "metahook-core": "core", "metahook-testing": "testing"}
# The rustdoc JSON format this reader knows (Rust 1.95's).
FORMAT_VERSION = 57


def build_dir() -> Path:
    """A build directory of its own: RUSTC_BOOTSTRAP changes how two dozen
    dependencies build (proc-macro2 and what depends on it), so sharing the
    machine's (scripts/lib/cache.sh) would rebuild them there, and again
    for the next ordinary build. Cargo keys this workspace's crates by their
    path inside it, so another checkout's build of them is removed first,
    as scripts/prune-target.sh does for the shared one."""
    cache = Path(os.environ.get("METAHOOK_CACHE") or Path.home() / ".cache" / "metahook")
    path = cache / "cargo-rustdoc-json"
    owner = path / ".checkout"
    if not owner.exists() or owner.read_text() != str(ROOT):
        for profile in path.glob("*/.fingerprint"):
            for unit in profile.glob("metahook*"):
                shutil.rmtree(unit, ignore_errors=True)
        path.mkdir(parents=True, exist_ok=True)
        owner.write_text(str(ROOT))
    return path


def rustdoc_json(package: str) -> dict:
    build = build_dir()
    env = dict(os.environ, RUSTC_BOOTSTRAP="1", CARGO_BUILD_BUILD_DIR=str(build),
               CARGO_TARGET_DIR=str(build / "target"))
    done = subprocess.run(["cargo", "rustdoc", "--quiet", "--locked", "-p", package, "--lib", "--",
                           "-Z", "unstable-options", "--output-format", "json"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"cargo rustdoc -p {package} failed:\n{done.stderr[-3000:]}")
    doc = json.loads((build / "target" / "doc" / f"{package.replace('-', '_')}.json").read_text())
    if doc["format_version"] != FORMAT_VERSION:
        sys.exit(f"rustdoc JSON format {doc['format_version']}, this reader knows {FORMAT_VERSION}: "
                 "check what changed and update scripts/public-api.py")
    return doc


def listing(doc: dict) -> list[str]:
    index = doc["index"]
    lines: set[str] = set()
    seen: set[tuple[str, str]] = set()

    def item(id_: int | str) -> dict | None:
        return index.get(str(id_))

    def public(it: dict) -> bool:
        return it.get("visibility") == "public"

    def members(it: dict, path: str) -> None:
        """A type's public methods and fields, an enum's variants, a
        trait's items."""
        kind, inner = next(iter(it["inner"].items()))
        if kind == "struct":
            shape = inner.get("kind")
            fields = []
            if isinstance(shape, dict):
                fields = shape.get("plain", {}).get("fields", []) or [f for f in shape.get("tuple", []) if f]
            for f in fields:
                field = item(f)
                if field and public(field):
                    lines.add(f"field {path}::{field['name']}")
        if kind == "enum":
            for v in inner.get("variants", []):
                variant = item(v)
                if variant:
                    lines.add(f"variant {path}::{variant['name']}")
        if kind == "trait":
            for t in inner.get("items", []):
                member = item(t)
                if member:
                    lines.add(f"{next(iter(member['inner']))} {path}::{member['name']}")
        for impl_id in inner.get("impls", []) if kind in ("struct", "enum", "union") else []:
            impl = item(impl_id)
            if not impl or impl["inner"]["impl"].get("trait") is not None:
                continue
            for m in impl["inner"]["impl"]["items"]:
                method = item(m)
                if method and public(method):
                    lines.add(f"{next(iter(method['inner']))} {path}::{method['name']}")

    def walk(id_: int | str, path: str) -> None:
        it = item(id_)
        if it is None or (str(id_), path) in seen:
            return
        seen.add((str(id_), path))
        kind, inner = next(iter(it["inner"].items()))
        if kind == "module":
            lines.add(f"mod {path}")
            for child in inner["items"]:
                sub = item(child)
                if sub is None or not public(sub):
                    continue
                sub_kind, sub_inner = next(iter(sub["inner"].items()))
                if sub_kind == "use":
                    target = item(sub_inner["id"]) if sub_inner.get("id") is not None else None
                    if target is None:
                        # Another crate's item, re-exported.
                        lines.add(f"use {path}::{sub_inner['name']} = {sub_inner['source']}")
                    elif sub_inner["is_glob"]:
                        lines.add(f"use {path}::* = {sub_inner['source']}::*")
                    else:
                        walk(sub_inner["id"], f"{path}::{sub_inner['name']}")
                elif sub_kind != "impl":
                    walk(child, f"{path}::{sub['name']}")
            return
        lines.add(f"{kind} {path}")
        members(it, path)

    walk(doc["root"], index[str(doc["root"])]["name"])
    return sorted(lines)


def main() -> int:
    check = "--check" in sys.argv[1:]
    stale = []
    for package, folder in CRATES.items():
        path = ROOT / folder / "public-api.txt"
        text = "\n".join(listing(rustdoc_json(package))) + "\n"
        if not check:
            path.write_text(text)
            print(f"{path.relative_to(ROOT)}: {text.count(chr(10))} items")
            continue
        have = path.read_text() if path.exists() else ""
        if have != text:
            stale.append(package)
            sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), text.splitlines(True),
                                                       f"{folder}/public-api.txt", "now"))
    if stale:
        print(f"the public API of {', '.join(stale)} changed: scripts/public-api.py writes the listings; "
              "review the difference above and commit them")
        return 1
    if check:
        print("public APIs as listed: " + ", ".join(f"{f}/public-api.txt" for f in CRATES.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
