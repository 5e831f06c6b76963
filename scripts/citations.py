"""Citations that point nowhere, for scripts/house.py.

Where it looks: the comments of source files (`//`, `//!`, `///` in Rust
and Go; `#` in shell, Python, YAML, TOML, Dockerfiles; Python docstrings)
and the whole text of every Markdown file, in the files git knows (tracked,
or new and not ignored) outside `SKIP_FILES`.

A cited path is a token of letters, digits and `_ . - + /`, not glued to a
`/`, `:`, `~`, `$`, `<`, `{`, `*` or `@` (so no URL, absolute or home path,
shell variable, placeholder or glob: those name no one file), its trailing
`.` dropped, that is one of:

- a path with a `/` ending in one of `EXTENSIONS`;
- a path with a `/` whose first part is a top-level entry of the repository
  and whose last part has no `.` (`planner/src/decide/plan/`, `.ci/run`);
- a bare file name ending in `.rs` (this project's; a bare name of another
  kind is as often a user's file or another project's).

Not a cited path: one with a part in capitals or of one letter
(`examples/NAME/`, `DIR/x.json`; `README.md` is a name), one under
`target/` (built, not kept), and the few in `ALLOWED`. A path with a `/`
must exist below one of: the citing file's directory and its ancestors up
to the repository's root; every crate (a directory with a Cargo.toml) and
its `src/`; the directories of the paths cited before it on the same line
(a file `x.rs` also stands for its module's directory `x/`) and their
ancestors. So a comment in planner/src/decide/plan/mod.rs may say
`write/execute/mod.rs`, driver/Cargo.toml `hook/auth.rs`, and a doc
`driver/src/controller/cache.rs` and then `cache/object.rs`. A bare name
must be the name of some file of the repository.

A heading anchor is the part after `#` of a Markdown link, `[..](x.md#a)`,
`[..](#a)` or `[a]: x.md#a`, or of a cited `.md` path in a comment
(`docs/performance.md#memory`). It must be one the page's headings get,
as mdBook 0.5 makes them (mdbook-html's `id_from_content` and `unique_id`):
the heading's text without Markdown, trimmed and lowercased, letters,
digits, `_` and `-` kept, whitespace to `-`, the rest dropped; a repeated
one gets `-1`, `-2`, … on the same page; a heading in a fenced code block
is none. GitHub's anchors for README.md follow the same rule. A link's own
path must exist relative to its page, and a link to this repository's
files on GitHub (github.com/metahook/metahook/blob/main/PATH, tree/main/PATH)
must name a path of the checkout.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

EXTENSIONS = ("rs", "md", "sh", "py", "toml", "yaml", "yml", "json", "go", "snap", "lua", "jsonnet")

# Files not read: generated, locked or recorded text, whose paths are a
# copy of what their source says or no citation at all.
SKIP_FILES = re.compile(r"(^|/)(target|\.git|vendor|third_party)/|\.snap$|(^|/)Cargo\.lock$|^chart/(templates|crds)/")

# Paths that are not this repository's, each for a reason the rule cannot
# read from the text: (a regex of the citing file, a regex of the path).
ALLOWED = [
    # The crate `metahook new` writes, beside a checkout of metahook.
    (r"^docs/your-own-controller\.md$", r"^(\.\./metahook/|tests/gadget\.rs$)"),
    # Go outside tests/ is Metacontroller's, Kubernetes', CoreDNS's or Go's.
    (r"", r"^(?!tests/).*\.go$"),
    # Metacontroller's own examples and release archive, and the images
    # named after its repository (metacontroller/jsonnetd).
    (r"", r"^(examples/(webhook-auth|nodejs)/|examples/test\.sh$|manifests?/|metacontroller/jsonnetd$)"),
    # A dependency's Cargo feature (`runtime = ["metahook/runtime"]`).
    (r"", r"^metahook/runtime$"),
    # The examples' and seeds' upstream manifests (the CRD of a
    # Metacontroller example, sample-controller's, the kube-rs article's).
    (r"^(examples|samples)/", r"^(v1/crdv1\.yaml|artifacts/)"),
]

EXTENSION_ENDS = tuple(f".{e}" for e in EXTENSIONS)


def placeholder(part: str) -> bool:
    """A part in capitals or of one letter stands for any name
    (examples/NAME/, DIR/x.json, docs/X.md); a file's name in capitals
    is a name (README.md)."""
    stem, dot, _ = part.partition(".")
    return len(stem) == 1 or (re.fullmatch(r"[A-Z][A-Z0-9_+]*", stem) is not None and not dot)


TOKEN = re.compile(r"(?<![\w.+/:~$<{*@-])(?>(?:\.\.?/)*[\w.+-]+(?:/[\w.+-]+)*/?)(?![/*{<$@]|\w)")
COMMENT_HASH = {".sh", ".py", ".yaml", ".yml", ".toml", ".bash", ".in", ".txt"}
COMMENT_SLASH = {".rs", ".go"}
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^ {0,3}(```|~~~)")
# A link to this repository's own files on GitHub names a path too.
GITHUB = re.compile(r"https://github\.com/metahook/metahook/(?:blob|tree|edit)/main/([^\s)#?>\]\"'`]+)")
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)


def files(root: Path) -> list[str]:
    """The files git knows; outside a git checkout, every file."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=root, capture_output=True, text=True,
    )
    if listed.returncode == 0:
        out = listed.stdout.split("\n")
    else:
        out = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()]
    return sorted(f for f in out if f and not SKIP_FILES.search(f) and (root / f).is_file())


def quoted_before(code: str) -> bool:
    """Whether `code` ends inside a string literal (an odd count of `"`)."""
    code = re.sub(r"\\.", "", code)
    return code.count('"') % 2 == 1


def comments(name: str, text: str) -> list[tuple[int, str]]:
    """(line number, comment text) of a source file, by its kind."""
    suffix = Path(name).suffix
    base = Path(name).name
    if suffix in COMMENT_SLASH:
        marker = "//"
    elif suffix in COMMENT_HASH or base in ("Dockerfile", "run", ".gitignore", ".dockerignore", ".helmignore") or text.startswith("#!"):
        marker = "#"
    else:
        return []
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        start = 0
        while (at := line.find(marker, start)) >= 0:
            before = line[:at]
            glued = marker == "#" and (line[at:].startswith(("#!", "#[", "#{")) or before[-1:] in ("$", "{", "'", '"'))
            url = marker == "//" and before.endswith(":")
            if not glued and not url and not quoted_before(before) and (marker == "//" or before.strip() == "" or before[-1:].isspace()):
                found.append((number, line[at + len(marker):]))
                break
            start = at + len(marker)
    if suffix == ".py":
        found += docstrings(text)
    return found


def docstrings(text: str) -> list[tuple[int, str]]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                for offset, line in enumerate(first.value.value.splitlines()):
                    found.append((first.lineno + offset, line))
    return found


def anchor(heading: str) -> str:
    """mdBook 0.5's id for a heading's Markdown text, before `unique_id`."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = re.sub(r"(\*\*|__|\*|(?<!\w)_|_(?!\w))", "", text)  # emphasis
    text = text.replace("`", "").strip().lower()
    return "".join(c if c.isalnum() or c in "_-" else "-" if c.isspace() else "" for c in text)


def anchors(text: str) -> set[str]:
    """Every id a page's headings get, repeated ones numbered as mdBook does."""
    used: set[str] = set()
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if not m:
            continue
        base = explicit.group(1) if (explicit := re.search(r"\{#([\w-]+)\}\s*$", m.group(2))) else anchor(m.group(2))
        candidate, n = base, 0
        while candidate in used:
            n += 1
            candidate = f"{base}-{n}"
        used.add(candidate)
    return used


class Tree:
    """The repository as the rule sees it: its files, top-level entries,
    file names and each Markdown page's anchors (read once)."""

    def __init__(self, root: Path):
        self.root = root
        self.files = files(root)
        self.top = {f.split("/")[0] for f in self.files}
        self.names = {Path(f).name for f in self.files}
        crates = [(root / f).parent for f in self.files if f.endswith("Cargo.toml")]
        self.crates = [*crates, *(c / "src" for c in crates)]
        self._anchors: dict[Path, set[str]] = {}

    def anchors(self, page: Path) -> set[str]:
        if page not in self._anchors:
            self._anchors[page] = anchors(page.read_text(encoding="utf-8", errors="replace"))
        return self._anchors[page]

    def is_cited(self, token: str) -> bool:
        parts = token.strip("/").split("/")
        if parts[0] in (".", ".."):
            parts = [p for p in parts if p not in (".", "..")] or [""]
        if parts[0] == "target" or any(placeholder(p) for p in parts):
            return False
        if len(parts) == 1:
            return token.endswith(".rs") and token[0].isalpha()
        return token.endswith(EXTENSION_ENDS) or (parts[0] in self.top and "." not in parts[-1])

    def up_to_root(self, directory: Path) -> list[Path]:
        ancestors = [directory, *directory.parents]
        return ancestors[: ancestors.index(self.root) + 1] if self.root in ancestors else []

    def resolve(self, token: str, citing: str, context: list[Path]) -> Path | None:
        """Where a cited path is: the first of the citing file's directory
        and its ancestors, the crates and their src/, and the directories
        of the paths cited before it on the line and their ancestors, that
        holds it."""
        if "/" not in token:
            return self.root if token in self.names else None
        bases = [*self.up_to_root((self.root / citing).parent), *self.crates]
        for path in context:
            for directory in (path, path.with_suffix("")) if path.is_dir() or path.suffix == ".rs" else (path.parent,):
                bases += self.up_to_root(directory if directory.is_dir() else directory.parent)
        return next(((base / token).resolve() for base in bases if (base / token).exists()), None)

    def check_text(self, name: str, number: int, text: str) -> list[str]:
        broken = []
        context: list[Path] = []
        for m in TOKEN.finditer(text):
            token = m.group(0).rstrip(".")
            if not token or not self.is_cited(token):
                continue
            if any(re.search(f, name) and re.search(p, token) for f, p in ALLOWED):
                continue
            found = self.resolve(token, name, context)
            if found is not None and "/" in token:
                context.append(found)
            if found is None:
                broken.append(f"{name}:{number}: cites {token}, which does not exist")
                continue
            fragment = re.match(r"#([\w-]+)", text[m.end():])
            if fragment and found.suffix == ".md" and found.is_file() and fragment.group(1) not in self.anchors(found):
                broken.append(f"{name}:{number}: cites {token}#{fragment.group(1)}, a heading {token} does not have")
        return broken

    def check_links(self, name: str, text: str) -> list[str]:
        broken = []
        page = self.root / name
        for m in LINK.finditer(text):
            url = m.group(1) or m.group(2)
            number = text.count("\n", 0, m.start()) + 1
            if re.match(r"[a-z][a-z0-9+.-]*:|/", url):
                continue
            path, _, fragment = url.partition("#")
            target = (page.parent / path).resolve() if path else page
            if path and not target.exists():
                broken.append(f"{name}:{number}: links to {path}, which does not exist")
            elif fragment and target.suffix == ".md" and fragment not in self.anchors(target):
                broken.append(f"{name}:{number}: links to {url}, a heading {path or name} does not have")
        return broken

    def check(self) -> list[str]:
        broken = []
        for name in self.files:
            text = (self.root / name).read_text(encoding="utf-8", errors="replace")
            if name.endswith(".md"):
                lines = list(enumerate(text.splitlines(), 1))
                broken += self.check_links(name, text)
            else:
                lines = comments(name, text)
            for number, line in lines:
                broken += self.check_text(name, number, line)
                for m in GITHUB.finditer(line):
                    path = m.group(1).rstrip(".,;:")
                    if not any(placeholder(p) for p in path.split("/")) and not (self.root / path).exists():
                        broken.append(f"{name}:{number}: links to {path} on GitHub, which does not exist")
        return broken


def broken_citations(root: Path) -> list[str]:
    """Every citation of a path or heading that is not there."""
    return Tree(root).check()


# A tree with one citation of each kind, good and broken: the rule must
# find exactly the broken ones, or it is the rule that is broken.
SELF_TEST_FILES = {
    "Cargo.toml": "# the crate: driver/src/lib.rs, write/execute/mod.rs\n",
    "driver/Cargo.toml": "[package]\n# hook/auth.rs, hook_auth.rs\n",
    "driver/src/lib.rs": 'const URL: &str = "https://x/y.rs"; // see write/execute.rs\n'
    "// https://github.com/metahook/metahook/blob/main/driver/src/lib.rs, https://github.com/metahook/metahook/tree/main/core\n",
    "driver/src/write/execute/mod.rs": "//! its caller: ../lib.rs; the plan: docs/page.md#the-plan, docs/page.md#plan\n",
    "driver/src/hook/auth.rs": "/// [NAME/x.rs], `$DIR/y.rs`, /tmp/z.rs, target/book/a.md\n",
    "scripts/x.sh": "#!/bin/sh\necho ${A#b/c.rs} # scripts/run.sh, driver/src/write/\n",
    "docs/page.md": "# A page\n## The plan\n## The plan\n[x](#the-plan-1) [y](#the-plan-2) [z](b.md) [w](page.md#a-page)\n"
    "`driver/src/write/execute/mod.rs`: `execute/mod.rs`; `execute/gone.rs`; examples/NAME/, pkg/hooks/auth.go\n"
    "```sh\n# a comment, not a heading\n```\n[v](#a-comment-not-a-heading)\n",
}
SELF_TEST_BROKEN = [
    "docs/page.md:4: links to #the-plan-2, a heading docs/page.md does not have",
    "docs/page.md:4: links to b.md, which does not exist",
    "docs/page.md:5: cites execute/gone.rs, which does not exist",
    "docs/page.md:9: links to #a-comment-not-a-heading, a heading docs/page.md does not have",
    "driver/Cargo.toml:2: cites hook_auth.rs, which does not exist",
    "driver/src/lib.rs:1: cites write/execute.rs, which does not exist",
    "driver/src/lib.rs:2: links to core on GitHub, which does not exist",
    "driver/src/write/execute/mod.rs:1: cites docs/page.md#plan, a heading docs/page.md does not have",
    "scripts/x.sh:2: cites scripts/run.sh, which does not exist",
]


def self_test() -> list[str]:
    """What the rule gets wrong on `SELF_TEST_FILES`, in a repository of its own."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        for name, text in SELF_TEST_FILES.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        found = sorted(broken_citations(root))
    missed = [f"the citation rule missed: {b}" for b in SELF_TEST_BROKEN if b not in found]
    wrong = [f"the citation rule found what is not broken: {b}" for b in found if b not in SELF_TEST_BROKEN]
    return missed + wrong
