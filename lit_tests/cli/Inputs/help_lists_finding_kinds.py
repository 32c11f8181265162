"""Checks that a `loupe diff --help` text lists every row of inspector/diff/finding_kinds.def,
in the table's order, as "name  base  severity  doc" on a line of its own.

    help_lists_finding_kinds.py FINDING_KINDS_DEF HELP_TEXT   # exit 0: all listed; 1: what is not
"""

import re
import sys

ROW = re.compile(
    r'^FINDING_KIND\(\s*\w+,\s*"([a-z_]+)",\s*(\d+),\s*(\d+),\s*(\w+),\s*"([^"]*)"\)\s*$', re.M
)


def main(def_path: str, help_path: str) -> int:
    table = open(def_path).read()
    rows = ROW.findall(table)
    declared = len(re.findall(r"^FINDING_KIND\(", table, re.M))
    if not rows or len(rows) != declared:
        print(f"{def_path}: read {len(rows)} of {declared} FINDING_KIND rows")
        return 1
    lines = open(help_path).read().splitlines()
    problems, last = [], -1
    for name, base, _weak, severity, doc in rows:
        line = re.compile(
            rf"^\s+{re.escape(name)}\s+{base}\s+{severity.lower()}\s+{re.escape(doc)}$"
        )
        at = next((i for i, text in enumerate(lines) if line.match(text)), None)
        if at is None:
            problems.append(f"not listed: {name} {base} {doc}")
        elif at < last:
            problems.append(f"out of the table's order: {name}")
        else:
            last = at
    for problem in problems:
        print(problem)
    if not problems:
        print(f"all {len(rows)} finding kinds listed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
