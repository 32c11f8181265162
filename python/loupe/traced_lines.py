"""The source lines Dynamo traces for each compile, captured in-process.

Dynamo logs every source line it starts tracing through the artifact logger
``torch._dynamo.symbolic_convert.__trace_source`` (what ``TORCH_LOGS=trace_source`` prints),
as a ``LazyString`` around the instruction translator's method that would format the line.
Reading the translator behind it (its code object, line and inline depth) instead of
formatting that text keeps the capture cheap. While installed the logger is at DEBUG and,
unless the user asked for that log, does not propagate: nothing reaches the user's handlers.

A compile's sequence starts afresh with each root translator (inline depth 0): Dynamo restarts
a trace (after a graph break, say) with a new one, and the last attempt is the one compiled.
Two compiles of one frame whose sequences differ took different branches; the differ names
the line where they part (docs/differ.md, `diverged_branch`).
"""

from __future__ import annotations

import logging
import weakref
from typing import Any, Callable

# (file, line, function, inline depth): one line Dynamo traced.
TracedLine = tuple[str, int, str, int]

LOGGER_NAME = "torch._dynamo.symbolic_convert.__trace_source"


class TracedLineCapture:
    """Collects the lines of each compile, keyed by the compile id `compile_id_of()` gives
    when a compile's trace (re)starts. Use install() / uninstall() and take(compile_id)."""

    def __init__(self, compile_id_of: Callable[[], str | None]) -> None:
        self._compile_id_of = compile_id_of
        self._by_compile: dict[str | None, list[TracedLine]] = {}
        self._lines: list[TracedLine] = []
        self._root: weakref.ref[Any] | None = None
        self._logger: logging.Logger | None = None
        self._saved_state: tuple[int, bool] | None = None
        self._handler = _TracedLineHandler(self)
        self.error: str | None = None  # why a record could not be read, the first time

    def install(self) -> str | None:
        """Starts capturing; returns why it cannot on this torch, else None."""
        if self._logger is not None:
            return None
        try:
            from torch._dynamo.symbolic_convert import trace_source_log
        except Exception as error:
            return f"dynamo trace_source log not available: {error}"
        if trace_source_log.name != LOGGER_NAME:
            return f"dynamo trace_source log is named {trace_source_log.name}"
        self._logger = trace_source_log
        self._saved_state = (trace_source_log.level, trace_source_log.propagate)
        if not trace_source_log.isEnabledFor(logging.DEBUG):
            # The user did not ask for this log: take it without printing it.
            trace_source_log.setLevel(logging.DEBUG)
            trace_source_log.propagate = False
        trace_source_log.addHandler(self._handler)
        return None

    def uninstall(self) -> None:
        if self._logger is None or self._saved_state is None:
            return
        self._logger.removeHandler(self._handler)
        self._logger.setLevel(self._saved_state[0])
        self._logger.propagate = self._saved_state[1]
        self._logger = None
        self._saved_state = None

    def take(self, compile_id: str | None) -> list[TracedLine]:
        """The lines of the compile's last trace, forgotten here once taken."""
        lines = self._by_compile.pop(compile_id, [])
        if lines is self._lines:
            self._root = None
        return lines

    def on_record(self, record: logging.LogRecord) -> None:
        translator = record.args[0].func.__self__  # the LazyString's bound method
        depth = translator.inline_depth
        if depth == 0 and (self._root is None or self._root() is not translator):
            self._root = weakref.ref(translator)
            self._lines = []
            self._by_compile[self._compile_id_of()] = self._lines
        code = translator.f_code
        self._lines.append((code.co_filename, translator.lineno, code.co_name, depth))


class _TracedLineHandler(logging.Handler):
    def __init__(self, capture: TracedLineCapture) -> None:
        super().__init__(logging.DEBUG)
        self._capture = capture

    # handle(), not emit(): one record per traced line, so no lock or filters around it.
    def handle(self, record: logging.LogRecord) -> bool:  # type: ignore[override]
        try:
            self._capture.on_record(record)
        except Exception as error:  # a user's compile must go on
            if self._capture.error is None:
                self._capture.error = f"{type(error).__name__}: {error}"
        return True

    def emit(self, record: logging.LogRecord) -> None:
        self.handle(record)
