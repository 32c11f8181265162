"""Loupe: a debugging compiler backend for torch.compile.

Select it with ``torch.compile(model, backend="loupe")``; see docs/python-adapter.md.
"""

from ._C import __version__

__all__ = ["__version__"]
