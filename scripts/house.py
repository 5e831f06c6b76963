#!/usr/bin/env python3
"""The house rules a change must keep (docs/architecture.md, "The house"):

- no import circle between a crate's source files (scripts/import-circles.py);
- no source file over 450 lines, counting its inline tests; test code (a
  module declared under `#[cfg(test)]`, a crate's tests/, benches/) is left
  out;
- at most a dozen entries at the top of driver/src, so that its folders say
  what the driver is made of;
- the pure crates (metahook-core, metahook-planner, and metahook-testing,
  a user's dev-dependency) have no runtime in their normal dependency
  tree: no tokio, hyper, rustls, actix, OpenTelemetry or kube client
  (`cargo tree -e normal`, from Cargo.lock, builds nothing);
- the crates outside the workspace that build into its build directory
  (examples/widget, the crate `metahook new` writes; scripts/lib/cache.sh)
  have its release and dev profiles: with others, every dependency builds a
  second time there;
- every repository path cited in a comment or a Markdown file exists, and
  every link to a heading finds it (scripts/citations.py says what counts
  as a citation and where it is looked for). The rule first checks itself
  on a small tree of good and broken citations, so a change that blinds it
  fails here too; `scripts/house.py --self-test` runs only that.

Exits 1, saying which rule and where, if any is broken.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 450
MAX_DRIVER_ENTRIES = 12

spec = importlib.util.spec_from_file_location("import_circles", ROOT / "scripts" / "import-circles.py")
assert spec and spec.loader
circles_module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(circles_module)
sys.path.insert(0, str(ROOT / "scripts"))
import citations  # noqa: E402  (beside this file)


# Those crates' manifests; the scaffold's is a template whose other
# sections hold placeholders, so only its [profile.*] tables are read.
SHARED_TARGET_MANIFESTS = ["examples/widget/Cargo.toml", "metahook/scaffold/Cargo.toml.in"]


def profiles(path: Path) -> dict:
    """The [profile.*] tables of a manifest, without `profiling` (the
    workspace's own, for callgrind and perf)."""
    text = path.read_text()
    sections = re.split(r"(?m)^(?=\[)", text)
    kept = "".join(s for s in sections if s.startswith("[profile."))
    found = tomllib.loads(kept).get("profile", {})
    found.pop("profiling", None)
    return found


def profile_drift() -> list[str]:
    want = profiles(ROOT / "Cargo.toml")
    return [
        f"{manifest}: profiles {have} differ from the workspace's {want} (Cargo.toml)"
        for manifest in SHARED_TARGET_MANIFESTS
        if (have := profiles(ROOT / manifest)) != want
    ]


PURE_CRATES = ["metahook-core", "metahook-planner", "metahook-testing"]
# Crate names (or their prefixes) that do I/O or run it.
RUNTIME = re.compile(r"^(tokio|hyper|rustls|actix|opentelemetry|kube-client|kube-runtime|reqwest|h2|tower)(-|$)")


def runtime_in_pure_crates() -> list[str]:
    broken = []
    for crate in PURE_CRATES:
        tree = subprocess.run(["cargo", "tree", "--locked", "--offline", "-p", crate, "-e", "normal", "--prefix", "none",
                               "--format", "{p}"], cwd=ROOT, capture_output=True, text=True)
        if tree.returncode != 0:
            broken.append(f"{crate}: cargo tree failed: {tree.stderr.strip()[-500:]}")
            continue
        found = sorted({line.split()[0] for line in tree.stdout.splitlines() if line and RUNTIME.match(line.split()[0])})
        if found:
            broken.append(f"{crate} depends on a runtime ({', '.join(found)}): `cargo tree -p {crate} -e normal -i NAME` says through what")
    return broken


def main() -> int:
    broken: list[str] = citations.self_test()
    if "--self-test" in sys.argv[1:]:
        print("\n".join(broken) or "the citation rule finds exactly the broken citations of its test tree")
        return 1 if broken else 0
    broken += profile_drift()
    for src in circles_module.crates([ROOT]):
        crate = circles_module.Crate(src)
        broken += circles_module.crate_circles(crate)
        for module, path in sorted(crate.files.items()):
            if module in crate.test:
                continue
            lines = len(path.read_text().splitlines())
            if lines > MAX_LINES:
                broken.append(f"{path.relative_to(ROOT)}: {lines} lines (at most {MAX_LINES}; move inline tests to a child test module, or split it by what it does)")
    entries = sorted(p.name for p in (ROOT / "driver" / "src").iterdir())
    if len(entries) > MAX_DRIVER_ENTRIES:
        broken.append(f"driver/src has {len(entries)} entries at its top (at most {MAX_DRIVER_ENTRIES}): {', '.join(entries)}")
    broken += citations.broken_citations(ROOT)
    broken += runtime_in_pure_crates()
    for line in broken:
        print(line)
    if broken:
        print(f"{len(broken)} house rule(s) broken")
        return 1
    print("house rules kept: no import circle, no source file over 450 lines, driver/src grouped, one set of profiles, every cited path and heading there, no runtime in the pure crates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
