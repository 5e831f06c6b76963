#!/usr/bin/env python3
"""The house rules a change must keep (docs/architecture.md, "The house"):

- no import circle between a crate's source files (scripts/import-circles.py);
- no source file over 450 lines, counting its inline tests; test code (a
  module declared under `#[cfg(test)]`, a crate's tests/, benches/) is left
  out;
- at most a dozen entries at the top of driver/src, so that its folders say
  what the driver is made of.

Exits 1, saying which rule and where, if any is broken.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 450
MAX_DRIVER_ENTRIES = 12

spec = importlib.util.spec_from_file_location("import_circles", ROOT / "scripts" / "import-circles.py")
assert spec and spec.loader
circles_module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(circles_module)


def main() -> int:
    broken: list[str] = []
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
    for line in broken:
        print(line)
    if broken:
        print(f"{len(broken)} house rule(s) broken")
        return 1
    print("house rules kept: no import circle, no source file over 450 lines, driver/src grouped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
