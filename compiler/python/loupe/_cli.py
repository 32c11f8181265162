"""The `loupe` console script: runs the C++ CLI installed inside the package."""

import os
import sys
from pathlib import Path


def executable() -> Path:
    return Path(__file__).resolve().parent / "bin" / "loupe"


def main() -> None:
    path = executable()
    os.execv(path, [str(path), *sys.argv[1:]])


if __name__ == "__main__":
    main()
