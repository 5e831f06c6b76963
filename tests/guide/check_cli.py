"""Checks the guide's command-line reference (docs/cli.md) against a binary.

For each command, the flags in the tables of its section must be exactly
the flags its `--help` lists (none missing, none made up). Where the help
names a default, the row must give it; where it names an environment
variable, that must be METAHOOK_ and the flag's name in capitals (the rule
the page states) or the variable the row names. The driver's flags
(docs/cli.md, "The driver's flags") belong to `serve` and `drive` alike.
Any binary built on `metahook::main` has the same command
line but `new`, which only the metahook binary has (the library's
`scaffold` feature): scripts/guide.sh checks the other commands on
examples/widget's binary, `new` on the metahook binary, and that the
first has no `new`.

    python3 tests/guide/check_cli.py BINARY METAHOOK_BINARY docs/cli.md
"""

import re
import subprocess
import sys

COMMANDS = ["serve", "drive", "render", "plan", "crds", "chart", "manifests", "new"]
# The commands only the metahook binary has.
METAHOOK_ONLY = {"new"}
DRIVER = "The driver's flags"


def help_flags(binary, command):
    """{flag: (env, default)} from `BINARY COMMAND --help`."""
    out = subprocess.run([binary, command, "--help"], capture_output=True, text=True, check=True).stdout
    options = out.split("\nOptions:\n", 1)[1]
    flags = {}
    current = None
    for line in options.splitlines():
        m = re.match(r"^\s+(?:-\w, )?(--[\w-]+)(?: <\w+>)?(.*)$", line)
        if m and not line.startswith(" " * 10):
            current = m.group(1)
            flags[current] = m.group(2)
        elif current:
            flags[current] += " " + line.strip()
    result = {}
    for flag, text in flags.items():
        if flag == "--help" or (flag == "--version" and text.strip() == "Print version"):
            continue
        env = re.search(r"\[env: (\w+)=", text)
        default = re.search(r"\[default: ([^\]]+)\]", text)
        result[flag] = (env and env.group(1), default and default.group(1))
    return result


def doc_sections(path):
    """{section title: {flag: row cells}} from the Markdown tables."""
    sections = {}
    title = None
    for line in open(path, encoding="utf-8"):
        heading = re.match(r"^#{2,3} (.+)$", line)
        if heading:
            title = heading.group(1).strip()
            sections.setdefault(title, {})
            continue
        row = re.match(r"^\| `(--[\w-]+)[^`]*` \|(.*)\|\s*$", line)
        if row and title:
            sections[title][row.group(1)] = [c.strip() for c in row.group(2).split("|")]
    return sections


def has_command(binary, command):
    """Whether `BINARY COMMAND --help` is a command's help."""
    return subprocess.run([binary, command, "--help"], capture_output=True).returncode == 0


def main(binary, metahook, doc):
    sections = doc_sections(doc)
    problems = []
    for command in sorted(METAHOOK_ONLY):
        if has_command(binary, command):
            problems.append(f"{command}: {binary} has it; only the metahook binary should")
    for command in COMMANDS:
        documented = dict(sections.get(command, {}))
        if command in ("serve", "drive"):
            documented.update(sections.get(DRIVER, {}))
        actual = help_flags(metahook if command in METAHOOK_ONLY else binary, command)
        for flag in sorted(set(actual) - set(documented)):
            problems.append(f"{command}: {flag} is in --help but not in {doc}")
        for flag in sorted(set(documented) - set(actual)):
            problems.append(f"{command}: {flag} is in {doc} but not in --help")
        for flag in sorted(set(actual) & set(documented)):
            env, default = actual[flag]
            cells = " | ".join(documented[flag])
            # The rule docs/cli.md states, or the variable named in the row.
            rule = "METAHOOK_" + flag[2:].upper().replace("-", "_")
            if env and env != rule and f"`{env}`" not in cells:
                problems.append(f"{command}: {flag}: --help says env {env}, {doc} does not")
            if default and f"`{default}`" not in cells:
                problems.append(f"{command}: {flag}: --help says default {default}, {doc} does not")
    for problem in problems:
        print(f"cli reference: {problem}")
    count = sum(len(help_flags(metahook if c in METAHOOK_ONLY else binary, c)) for c in COMMANDS)
    print(
        f"{doc}: {count} flags of {len(COMMANDS)} commands checked against {binary}"
        f" ({', '.join(sorted(METAHOOK_ONLY))}: {metahook}): {len(problems)} problems"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
