"""Checks the links of the built guide and of README.md.

In every HTML page of the book: each internal href must name a file the
book has, and its #fragment an id in that page; each img, script and
stylesheet must exist. Links to this repository on GitHub
(https://github.com/metahook/metahook/blob/main/PATH, tree/main/PATH,
edit/main/PATH) must name a path the checkout has. In README.md: each
relative link must name a file of the checkout, a fragment into docs/X.md
an id of the built X.html, and a bare #fragment one of README's own
headings. Other external links are
not fetched (CI has no internet).

    python3 tests/guide/check_links.py BOOK_DIR [README.md]

Prints each broken link with the page it is on, and exits 1 if there is one.
"""

import html.parser
import os
import re
import sys
import urllib.parse

REPO = "https://github.com/metahook/metahook/"
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


class Page(html.parser.HTMLParser):
    """The ids a page defines, and what it links to."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []  # (what, url)
        self.base = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if attrs.get(key):
                self.ids.add(attrs[key])
        if tag == "base" and attrs.get("href"):
            self.base = attrs["href"]
        elif tag == "a" and attrs.get("href") is not None:
            self.links.append(("link", attrs["href"]))
        elif tag == "link" and attrs.get("href") and "stylesheet" in (attrs.get("rel") or ""):
            self.links.append(("stylesheet", attrs["href"]))
        elif tag == "link" and attrs.get("href") and "icon" in (attrs.get("rel") or ""):
            self.links.append(("icon", attrs["href"]))
        elif tag in ("img", "script", "iframe") and attrs.get("src"):
            self.links.append((tag, attrs["src"]))


def parse(path):
    page = Page()
    with open(path, encoding="utf-8") as f:
        page.feed(f.read())
    return page


def repo_link_problem(url):
    """For a link to this repository on GitHub: why it is broken, or None."""
    rest = url[len(REPO) :]
    m = re.match(r"(blob|tree|edit)/main/([^#?]*)", rest)
    if not m:
        return None  # the repository itself, its issues...
    kind, path = m.group(1), urllib.parse.unquote(m.group(2)).rstrip("/")
    full = os.path.join(ROOT, path)
    if kind in ("blob", "edit") and not os.path.isfile(full):
        return f"no file {path} in the repository"
    if kind == "tree" and not os.path.isdir(full):
        return f"no directory {path} in the repository"
    return None


def check_book(book):
    book = os.path.abspath(book)
    pages = {}
    for directory, _, files in os.walk(book):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(directory, name)
                pages[path] = parse(path)
    problems = []
    checked = 0
    for path, page in sorted(pages.items()):
        where = os.path.relpath(path, book)
        base_dir = os.path.dirname(path)
        if page.base and page.base.startswith("/"):
            base_dir = os.path.join(book, page.base.lstrip("/"))
        for what, url in page.links:
            checked += 1
            parsed = urllib.parse.urlsplit(url)
            if parsed.scheme or url.startswith("//"):
                if url.startswith(REPO):
                    problem = repo_link_problem(url)
                    if problem:
                        problems.append(f"{where}: {url}: {problem}")
                continue
            if url.startswith("#"):
                target, fragment = path, url[1:]
            else:
                target_path = urllib.parse.unquote(parsed.path)
                if target_path.startswith("/"):
                    target = os.path.join(book, target_path.lstrip("/"))
                else:
                    target = os.path.normpath(os.path.join(base_dir, target_path))
                if target_path.endswith("/") or os.path.isdir(target):
                    target = os.path.join(target, "index.html")
                fragment = urllib.parse.unquote(parsed.fragment)
                if not (target + os.sep).startswith(book + os.sep):
                    problems.append(f"{where}: {what} {url}: outside the book")
                    continue
                if not os.path.isfile(target):
                    problems.append(f"{where}: {what} {url}: no such file")
                    continue
            if fragment and target in pages and fragment not in pages[target].ids:
                problems.append(f"{where}: {what} {url}: no id {fragment!r} in {os.path.relpath(target, book)}")
    return problems, checked, len(pages)


def github_slug(heading):
    """The anchor GitHub gives a Markdown heading."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def check_readme(readme, book):
    name = os.path.basename(readme)
    text = open(readme, encoding="utf-8").read()
    slugs = {github_slug(h) for h in re.findall(r"^#+\s+(.*)$", text, re.M)}
    problems = []
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    for url in links:
        if urllib.parse.urlsplit(url).scheme:
            if url.startswith(REPO) and repo_link_problem(url):
                problems.append(f"{name}: {url}: {repo_link_problem(url)}")
            continue
        path, _, fragment = url.partition("#")
        if not path:
            if fragment not in slugs:
                problems.append(f"{name}: {url}: no heading with that anchor")
            continue
        full = os.path.join(os.path.dirname(os.path.abspath(readme)), path)
        if not os.path.exists(full):
            problems.append(f"{name}: {url}: no such file")
            continue
        if fragment:
            rel = os.path.relpath(full, os.path.join(ROOT, "docs"))
            if rel.startswith("..") or not rel.endswith(".md"):
                problems.append(f"{name}: {url}: a fragment outside docs/ is not checked")
                continue
            page = os.path.join(book, rel[: -len(".md")] + ".html")
            if not os.path.isfile(page) or fragment not in parse(page).ids:
                problems.append(f"{name}: {url}: no id {fragment!r} in {os.path.relpath(page, book)}")
    return problems, len(links)


def main(book, readme=None):
    problems, checked, pages = check_book(book)
    summary = f"{checked} links and images in {pages} pages"
    if readme:
        more, count = check_readme(readme, os.path.abspath(book))
        problems += more
        summary += f", {count} links in {os.path.basename(readme)}"
    for problem in problems:
        print(f"broken: {problem}")
    print(f"{summary}: {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
