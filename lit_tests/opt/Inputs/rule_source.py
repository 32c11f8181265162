"""Reads `loupe-opt --print-decisions` lines on stdin and prints, for each, the decision's kind
and the source line its rule location names: `mul-by-one: row("mul-by-one", ...`.
Usage: rule_source.py REPOSITORY_ROOT"""

import re
import sys

root = sys.argv[1]
for line in sys.stdin:
    m = re.match(r"decision \d+: \[[^]]*\] ([^:]+): .*\[([^]:]+):(\d+)\]$", line.rstrip("\n"))
    if m:
        kind, path, number = m.group(1), m.group(2), int(m.group(3))
        with open(f"{root}/{path}", encoding="utf-8") as source:
            print(f"{kind}: {source.readlines()[number - 1].strip()}")
