#!/usr/bin/env python3
"""Checks the include rule of docs/architecture.md: each folder includes only its own layer and
the layers it is allowed to build on.

    scripts/check_layers.py   # exit 0: every include is allowed; 1: lists the ones that are not

The table below is the rule; docs/architecture.md draws the same picture. Every C++ file of the
project belongs to the longest folder prefix listed (a file outside them is an error too, so a
new folder has to be placed in a layer). CTest runs this script as the test `layers`.
"""

import pathlib
import re
import sys

COMPILER = [
    "compiler/ir",
    "compiler/tensor",
    "compiler/ops",
    "compiler/pass",
    "compiler/codegen",
    "compiler/runtime",
]


def below(layer: str) -> list[str]:
    """The compiler layers under `layer` (itself included):
    ir < tensor < ops < pass < codegen < runtime."""
    return COMPILER[: COMPILER.index(layer) + 1]


# folder -> the folders its files may include (its own is always allowed).
ALLOWED: dict[str, list[str]] = {
    **{layer: below(layer) for layer in COMPILER},
    # The CUDA host layer (driver API, cuBLASLt) needs only errors and dtypes, so that any layer
    # that runs on the GPU can use it without pulling in the CPU runtime.
    "compiler/runtime/cuda": ["compiler/ir"],
    "passes": COMPILER,
    "driver": COMPILER + ["passes"],
    "inspector/trace": [],
    # The recorder also ends a compile's record from the driver's result (CompileResult), so
    # that every entry point writes a compile's outcome the same way.
    "inspector/recorder": ["compiler/ir", "compiler/pass", "driver", "inspector/trace"],
    "inspector/export": ["compiler/ir"],
    "inspector/diff": ["compiler/ir", "inspector/trace"],
    "inspector/bisect": COMPILER + ["passes", "driver", "inspector/trace", "inspector/recorder"],
    # The reducer judges a candidate as the bisector judges a trial (its comparison, tolerance).
    "inspector/reduce": COMPILER + ["passes", "driver", "inspector/bisect"],
    "gui/viewmodel": ["compiler/ir", "inspector/trace", "inspector/diff"],
    "gui/tools": COMPILER + ["inspector/trace"],
    "gui/app": ["compiler/ir", "inspector/trace", "inspector/diff", "gui/viewmodel"],
    # The top of the stack: programs and the Python binding wire everything below together.
    "tools": COMPILER + ["passes", "driver", "inspector"],
    "python": COMPILER + ["passes", "driver", "inspector"],
    # Tests and benchmarks may reach anything they test.
    "unit_tests": ["compiler", "passes", "driver", "inspector", "gui", "tools", "python"],
    "bench": ["compiler", "passes", "driver", "inspector", "gui"],
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
PROJECT_ROOTS = {
    "compiler",
    "passes",
    "driver",
    "inspector",
    "gui",
    "tools",
    "python",
    "unit_tests",
    "bench",
}


def owner(path: str) -> str | None:
    """The longest folder of ALLOWED that holds `path`."""
    best = None
    for folder in ALLOWED:
        if path.startswith(folder + "/") and (best is None or len(folder) > len(best)):
            best = folder
    return best


def allowed(folder: str, header: str) -> bool:
    return any(header.startswith(prefix + "/") for prefix in [folder] + ALLOWED[folder])


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent
    problems = []
    sources = [
        p
        for top in sorted(PROJECT_ROOTS)
        for p in (root / top).rglob("*")
        if p.suffix in {".cpp", ".h", ".def", ".inc"}
    ]
    for path in sorted(sources):
        rel = path.relative_to(root).as_posix()
        folder = owner(rel)
        if folder is None:
            problems.append(f"{rel}: not in any layer of scripts/check_layers.py")
            continue
        text = path.read_text(errors="replace")
        for match in INCLUDE.finditer(text):
            header = match.group(1)
            if header.split("/")[0] not in PROJECT_ROOTS:
                continue  # a header beside the file ("random_graph.h") or a third-party one
            if not allowed(folder, header):
                line = text.count("\n", 0, match.start()) + 1
                problems.append(f"{rel}:{line}: {folder} may not include {header}")
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} include(s) break the layer rule (docs/architecture.md, 'Layers')")
        return 1
    print(f"layers ok: {len(sources)} files checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
