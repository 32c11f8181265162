"""Loupe: a debugging compiler backend for torch.compile.

Select it with ``torch.compile(model, backend="loupe")``; see docs/python-adapter.md.
"""

from .cuda_libraries import set_library_path

set_library_path()  # before the native module looks for NVRTC or cuBLASLt

from ._C import __version__  # noqa: E402

__all__ = ["__version__"]
