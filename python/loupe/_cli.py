"""The `loupe` console script: runs the C++ CLI installed inside the package, except
`loupe bisect SCRIPT.py`, which needs Python to run the script (loupe/bisect.py)."""

import os
import sys
from pathlib import Path


def executable() -> Path:
    return Path(__file__).resolve().parent / "bin" / "loupe"


def bisects_a_script(args: list) -> bool:
    """`bisect` whose target (the first argument that is not an option or its value) is .py."""
    if not args or args[0] != "bisect":
        return False
    for arg in args[1:]:
        if arg.endswith(".py") and not arg.startswith("-"):
            return True
        if arg.endswith(".lir"):
            return False
    return False


def main() -> None:
    if bisects_a_script(sys.argv[1:]):
        from .bisect import main as bisect_main

        sys.exit(bisect_main(sys.argv[2:]))
    path = executable()
    os.execv(path, [str(path), *sys.argv[1:]])


if __name__ == "__main__":
    main()
