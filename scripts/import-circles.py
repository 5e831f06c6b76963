#!/usr/bin/env python3
"""Import circles between the source files of each crate in the workspace.

A file uses another when it names an item there: `crate::a::b::Item`,
`super::Item`, `self::child::f`, a `use` of any of those (braces expanded),
or a child module's path, bare (`child::f`). Methods called on a value of a
type defined elsewhere are not seen: this reads text, not types. A path that stops at a `pub use` re-export is
followed to where the item is defined, so a module that only re-exports is
no link in a chain. Test code is left out: a module declared under
`#[cfg(test)]`, and everything from an inline `#[cfg(test)] mod` on.

Prints each circle (a strongly connected set of files, with one path round
it) and exits 1 if there is any. No tool in the registries does this without
building rust-analyzer (cargo-modules), which is minutes of CI; this is text.

    scripts/import-circles.py [DIR ...]   (default: every crate below .)
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
PATH_RE = re.compile(rf"\b(crate|super|self)((?:::{IDENT})+|(?:::super)+(?:::{IDENT})*)")
USE_RE = re.compile(r"\b(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.S)
MOD_RE = re.compile(rf"^\s*(#\[cfg\(test\)\]\s*)?(?:pub(?:\([^)]*\))?\s+)?mod\s+({IDENT})\s*;", re.M)
PATH_ATTR_RE = re.compile(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;')
TEST_MOD_RE = re.compile(rf"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+{IDENT}\s*\{{")
BARE_RE = re.compile(rf"\b({IDENT})((?:::{IDENT})+)")
REEXPORT_RE = re.compile(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", re.S)


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = []
    for line in text.splitlines():
        # Strings rarely hold `//` in code that names paths; good enough here.
        idx = line.find("//")
        out.append(line if idx < 0 else line[:idx])
    return "\n".join(out)


def strip_strings(text: str) -> str:
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def expand_use(tree: str) -> list[str]:
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(rf"\s+as\s+{IDENT}", "", tree)
    tree = re.sub(r"\s+", "", tree)

    def split_top(s: str) -> list[str]:
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        return parts

    def walk(s: str) -> list[str]:
        brace = s.find("{")
        if brace < 0:
            return [s]
        prefix, inner = s[:brace], s[brace + 1 : s.rfind("}")]
        out = []
        for part in split_top(inner):
            for tail in walk(part):
                out.append(prefix + tail if tail != "self" else prefix.rstrip(":"))
        return out

    return walk(tree)


class Crate:
    def __init__(self, src: Path):
        self.src = src
        self.files: dict[tuple[str, ...], Path] = {}
        self.test: set[tuple[str, ...]] = set()
        root = src / "lib.rs" if (src / "lib.rs").exists() else src / "main.rs"
        self._load((), root, in_test=False)
        self.text = {m: self._code(p) for m, p in self.files.items()}
        self._reexports: dict[tuple[str, ...], dict[str, tuple[str, ...]]] = {}

    def _load(self, module: tuple[str, ...], path: Path, in_test: bool) -> None:
        self.files[module] = path
        if in_test:
            self.test.add(module)
        text = strip_comments(path.read_text())
        if path.name in ("lib.rs", "main.rs", "mod.rs"):
            base = path.parent
        else:
            base = path.parent / path.stem
        explicit = {name: rel for rel, name in PATH_ATTR_RE.findall(text)}
        for m in MOD_RE.finditer(text):
            cfg_test, name = bool(m.group(1)), m.group(2)
            if name in explicit:
                child = path.parent / explicit[name]
            elif (base / f"{name}.rs").exists():
                child = base / f"{name}.rs"
            elif (base / name / "mod.rs").exists():
                child = base / name / "mod.rs"
            else:
                continue
            self._load(module + (name,), child, in_test or cfg_test)

    def _code(self, path: Path) -> str:
        text = strip_strings(strip_comments(path.read_text()))
        m = TEST_MOD_RE.search(text)
        return text[: m.start()] if m else text

    def is_module(self, module: tuple[str, ...]) -> bool:
        return module in self.files

    def reexports(self, module: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
        """Names a module re-exports, mapped to the absolute path they name
        (read once a module: every path through it asks)."""
        if module in self._reexports:
            return self._reexports[module]
        out: dict[str, tuple[str, ...]] = {}
        self._reexports[module] = out
        for m in REEXPORT_RE.finditer(self.text.get(module, "")):
            for path in expand_use(m.group(1)):
                segs = tuple(s for s in path.split("::") if s)
                if not segs or segs[-1] == "*":
                    continue
                absolute = self.absolute(module, segs)
                if absolute:
                    out[segs[-1]] = absolute
        return out

    def absolute(self, here: tuple[str, ...], segs: tuple[str, ...]) -> tuple[str, ...] | None:
        if not segs:
            return None
        if segs[0] == "crate":
            return segs[1:]
        if segs[0] in ("self", "super"):
            cur = here
            i = 0
            while i < len(segs) and segs[i] in ("self", "super"):
                if segs[i] == "super":
                    cur = cur[:-1]
                i += 1
            return cur + segs[i:]
        # Uniform paths: a child module of this one.
        if self.is_module(here + (segs[0],)):
            return here + segs
        return None

    def resolve(self, path: tuple[str, ...], depth: int = 0) -> tuple[str, ...]:
        """The file-module that defines what an absolute path names."""
        best: tuple[str, ...] = ()
        for i in range(len(path), -1, -1):
            if self.is_module(path[:i]):
                best = path[:i]
                break
        rest = path[len(best) :]
        if rest and depth < 8:
            target = self.reexports(best).get(rest[0])
            if target and target != best + rest[:1]:
                return self.resolve(target + rest[1:], depth + 1)
        return best

    def edges(self) -> dict[tuple[str, ...], set[tuple[str, ...]]]:
        graph: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        for module, text in self.text.items():
            if module in self.test:
                continue
            uses: set[tuple[str, ...]] = set()
            for m in USE_RE.finditer(text):
                for path in expand_use(m.group(1)):
                    segs = tuple(s for s in path.split("::") if s and s != "*")
                    absolute = self.absolute(module, segs)
                    if absolute is not None:
                        uses.add(absolute)
            # A child module named bare in code (`report::reconciled(..)`).
            children = {m[-1] for m in self.files if m[:-1] == module and len(m) == len(module) + 1}
            for m in BARE_RE.finditer(text):
                if m.group(1) in children and text[max(0, m.start() - 2) : m.start()] != "::":
                    segs = tuple(s for s in m.group(0).split("::") if s)
                    uses.add(module + segs)
            for m in PATH_RE.finditer(text):
                segs = (m.group(1),) + tuple(s for s in m.group(2).split("::") if s)
                absolute = self.absolute(module, segs)
                if absolute is not None:
                    uses.add(absolute)
            targets = set()
            for absolute in uses:
                target = self.resolve(absolute)
                if target != module and target not in self.test:
                    targets.add(target)
            graph[module] = targets
        return graph


def circles(graph: dict) -> list[list]:
    """Tarjan's strongly connected components of more than one node."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on: set = set()
    out: list[list] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def cycle_path(graph: dict, comp: list) -> list:
    """One walk round a component, for the message."""
    members = set(comp)
    start = comp[0]
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph.get(v, ())):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w in members and w not in prev:
                prev[w] = v
                queue.append(w)
    return comp


def crates(roots: list[Path]) -> list[Path]:
    found = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in ("target", ".git", ".venv", "node_modules", "fuzz")]
            if "Cargo.toml" in filenames:
                src = Path(dirpath) / "src"
                if (src / "lib.rs").exists() or (src / "main.rs").exists():
                    found.append(src)
    return sorted(found)


def crate_circles(crate: Crate) -> list[str]:
    """Each circle in `crate`: a walk round it, and all its files when the
    walk does not pass them all."""
    graph = crate.edges()
    lines = []
    for comp in circles(graph):
        walk = cycle_path(graph, comp)
        names = [str(crate.files[m]) for m in walk]
        line = f"import circle in {crate.src.parent} ({len(comp)} files): " + " -> ".join(names)
        if len(comp) > len(walk) - 1:
            line += "\n  all of: " + ", ".join(str(crate.files[m]) for m in comp)
        lines.append(line)
    return lines


def main(argv: list[str]) -> int:
    roots = [Path(a) for a in argv] or [Path(".")]
    lines = [line for src in crates(roots) for line in crate_circles(Crate(src))]
    for line in lines:
        print(line)
    if lines:
        print(f"{len(lines)} import circle(s)")
        return 1
    print("no import circles")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
