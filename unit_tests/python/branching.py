"""A function whose traced code depends on a size (Dynamo takes one branch at an even batch and
the other at an odd one), and how tests find its source lines: shared by the tests of the
traced-lines capture and of the differ's diverged_branch finding."""

import inspect


def branch_on_parity(x):
    h = x * 2
    if h.size(0) % 2 == 0:
        y = h + 1
    else:
        y = h - 1
    return y.sum()


def line_of(fn, text: str) -> int:
    """The file line of the first source line of fn containing text."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)
