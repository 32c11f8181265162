"""`loupe bisect SCRIPT.py [script args]`: runs a model script with the loupe backend in bisect
mode. The first call of every compiled graph is also run eagerly; a graph whose compiled
results differ is bisected to the pass and the decision that made them differ, which is
printed and recorded in the trace, and the script carries on. Exit status: 1 when a culprit was
found, 0 when no graph diverged, 2 for a usage error. See docs/bisect.md.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys

USAGE = "loupe bisect [--inject-fault N|KIND:N] [--trace FILE] SCRIPT.py [script args]"


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog="loupe bisect", usage=USAGE)
    parser.add_argument(
        "--inject-fault",
        metavar="N|KIND:N",
        help="testing aid: miscompile the first graph (of KIND: forward, backward, inference) "
        "after decision N",
    )
    parser.add_argument("--trace", help="trace file (default: LOUPE_TRACE or ./loupe_traces/)")
    parser.add_argument("script", help="the model script (.py)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    options = parser.parse_args(argv)
    return options, [options.script, *options.args]


def main(argv: list[str]) -> int:
    options, script_argv = parse(argv)
    # The backend reads its options from the environment, so torch.compile calls in the script
    # need no change.
    os.environ["LOUPE_BISECT"] = "1"
    if options.inject_fault:
        os.environ["LOUPE_INJECT_FAULT"] = options.inject_fault
    if options.trace:
        os.environ["LOUPE_TRACE"] = options.trace

    # After the environment is set. Importing the backend installs Dynamo's hooks.
    from . import backend  # noqa: F401
    from .compiled import bisections
    from .config import Config

    try:
        Config.resolve(None)
    except ValueError as error:
        print(f"loupe: error: {error}", file=sys.stderr)
        return 2
    sys.argv = script_argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(options.script)))
    try:
        runpy.run_path(options.script, run_name="__main__")
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            print(f"loupe bisect: {options.script} exited with {exit_.code}", file=sys.stderr)
    culprits = [b for b in bisections if b["diverged"]]
    print(
        f"loupe bisect: {len(bisections)} graph(s) checked, {len(culprits)} diverged",
        file=sys.stderr,
    )
    return 1 if culprits else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
