"""Dynamo's events written into the trace of the compiles they belong to.

One ``DynamoEventCapture`` per process feeds ``DynamoTraceRecorder``, which writes each event
as soon as the trace row it belongs to exists:

- a guard goes to the first Loupe compile (forward or inference) of its Dynamo compile;
  Dynamo builds guards after the backend returns, so they usually land at once;
- a graph break goes to the compile of the graph before the break; Dynamo reports the break
  before compiling that graph, so it waits for the compile to begin, and becomes a run-level
  row if Dynamo finishes the compile without calling Loupe (an empty graph before the break);
- a recompile goes to the new compile, and marks the failed guard of the rejected compile;
- the lines a compile traced go to its first Loupe compile, like its guards;
- a capture warning (a hook this torch lacks) becomes a warnings row.

Whatever is still waiting when Dynamo finishes a compile or the process exits is written
run-level; guards of a compile Loupe never saw have no row to belong to and are dropped.
Nothing here raises into the user's program: a failed write is reported on stderr once.
"""

from __future__ import annotations

import atexit
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable

from .dynamo_events import (
    CompileEvent,
    DynamoEvent,
    DynamoEventCapture,
    GraphBreak,
    Guard,
    Recompile,
    StackFrame,
    TracedSource,
    Warning,
)


@dataclass(frozen=True)
class CompileRow:
    trace: Any  # _C.Trace
    run_id: int
    compile_id: int  # the row id in that trace


def _frame_number(compile_key: str | None) -> int | None:
    """The frame of a Dynamo compile key ("3/1" is frame 3's second compile)."""
    head = (compile_key or "").split("/", 1)[0]
    return int(head) if head.isdigit() else None


def _stack(frames: list[StackFrame]) -> list[tuple[str, int, str, str]]:
    return [(f.file, f.line, f.function, f.code or "") for f in frames]


class DynamoTraceRecorder:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._capture = DynamoEventCapture()
        self._frames: dict[str, CompileEvent] = {}  # compile key -> Dynamo's compile
        self._rows: dict[str, CompileRow] = {}  # compile key -> its entry's first Loupe compile
        self._pending: dict[str | None, list[DynamoEvent]] = {}
        self._last_run: CompileRow | None = None  # where run-level rows go
        self._installed = False
        self._write_failed = False
        # Guards waiting to be written together: (row, compile id, (kind, expr, stack)).
        self._guard_batch: list[tuple[CompileRow, int, tuple[str, str, list]]] = []

    def install(self) -> None:
        """Starts capturing, once per process; idempotent."""
        with self._lock:
            if self._installed:
                return
            self._installed = True
            self._capture.add_listener(self._on_event, end_of_record=self._write_guards)
            self._capture.install()
            atexit.register(self.flush)

    def frame_of(self, compile_key: str) -> CompileEvent | None:
        """Dynamo's view of the frame being compiled, when the capture saw it start."""
        with self._lock:
            return self._frames.get(compile_key)

    def compile_begun(self, trace: Any, run_id: int, compile_key: str, compile_id: int) -> None:
        """A Loupe compile row for Dynamo compile `compile_key` now exists in `trace`."""
        with self._lock:
            self._last_run = CompileRow(trace, run_id, compile_id)
            if not compile_key or compile_key in self._rows:
                return  # a backward graph: the entry's events belong to its forward
            self._rows[compile_key] = self._last_run
            for event in self._pending.pop(compile_key, []):
                self._write(event)
            for event in self._pending.pop(None, []):
                self._write(event)
            self._write_guards()

    def flush(self) -> None:
        """Writes everything still waiting: guards, then other events run-level."""
        with self._lock:
            self._write_guards()
            pending, self._pending = self._pending, {}
            for events in pending.values():
                for event in events:
                    self._write_run_level(event)

    # -- routing ---------------------------------------------------------------------

    def _on_event(self, event: DynamoEvent) -> None:
        with self._lock:
            if isinstance(event, CompileEvent):
                self._on_compile_event(event)
                return
            if isinstance(event, Recompile):
                self._mark_failed(event)
            if event.compile_id in self._rows or event.compile_id is None:
                self._write(event)
            else:
                self._pending.setdefault(event.compile_id, []).append(event)

    def _on_compile_event(self, event: CompileEvent) -> None:
        if not event.finished:
            # Dynamo numbers frames afresh after torch._dynamo.reset(): a key seen before
            # names a new compile now. A frame's first compile ("F/0") is how a reset shows:
            # every row of frame F or later is from before it, and must not take the events
            # of the new compiles (a recompile reason is logged before its compile starts).
            frame = _frame_number(event.compile_id)
            if frame is not None and event.compile_id.endswith("/0"):
                stale = [
                    k for k in self._rows if (f := _frame_number(k)) is not None and f >= frame
                ]
                for key in stale:
                    del self._rows[key]
            self._frames[event.compile_id] = event
            self._rows.pop(event.compile_id, None)
            return
        if event.compile_id not in self._rows:
            for pending in self._pending.pop(event.compile_id, []):
                self._write_run_level(pending)

    def _mark_failed(self, event: Recompile) -> None:
        row = self._rows.get(event.failed_compile_id)
        guard = event.failed_guard
        if row is not None and guard is not None:
            self._write_guards()  # the guard to mark may still be waiting
            self._guarded(row, row.trace.mark_guard_failed, row.compile_id, guard.kind, guard.expr)

    # -- writing ---------------------------------------------------------------------

    def _write(self, event: DynamoEvent) -> None:
        row = self._rows.get(event.compile_id)
        if row is not None:
            self._record(event, row, linked=True)
        elif self._last_run is not None:
            self._record(event, self._last_run, linked=False)
        else:
            self._pending.setdefault(event.compile_id, []).append(event)

    def _write_run_level(self, event: DynamoEvent) -> None:
        if self._last_run is not None:
            self._record(event, self._last_run, linked=False)

    def _record(self, event: DynamoEvent, row: CompileRow, linked: bool) -> None:
        """Writes event into row's trace, against row's compile when linked, else run-level."""
        trace, compile_id = row.trace, row.compile_id if linked else None
        if isinstance(event, Guard) and linked:
            # Written by _write_guards once the log record that brought it is done.
            guard = (event.kind, event.expr, _stack(event.user_stack))
            self._guard_batch.append((row, compile_id, guard))
        elif isinstance(event, GraphBreak):
            frame_name, stack = self._frame_name(event), _stack(event.user_stack)
            self._guarded(
                row,
                trace.record_graph_break,
                row.run_id,
                compile_id,
                frame_name,
                event.reason,
                stack,
            )
        elif isinstance(event, TracedSource) and linked:
            self._guarded(row, trace.record_traced_lines, compile_id, event.lines)
        elif isinstance(event, Recompile) and linked:
            failed = event.failed_guard
            failed_guard = f"{failed.kind}: {failed.expr}" if failed else None
            previous_key = event.failed_compile_id or ""
            self._guarded(
                row, trace.record_recompile, compile_id, previous_key, event.reason, failed_guard
            )
        elif isinstance(event, Recompile):
            message = (
                f"dynamo recompile {event.compile_id} (rejected {event.failed_compile_id}) "
                f"compiled no graph with loupe: {event.reason}"
            )
            self._guarded(row, trace.record_warning, row.run_id, message)
        elif isinstance(event, Warning):
            self._guarded(row, trace.record_warning, row.run_id, event.message, compile_id)
        # else: a guard or traced lines of a compile Loupe never saw have no row to belong to

    def _write_guards(self) -> None:
        """Writes the waiting guards, a transaction per compile (one per guard would cost more
        than the rest of a compile's recording: a large model's entry has hundreds)."""
        with self._lock:
            batch, self._guard_batch = self._guard_batch, []
            by_compile: dict[tuple[int, int], tuple[CompileRow, int, list]] = {}
            for row, compile_id, guard in batch:
                key = (id(row.trace), compile_id)
                by_compile.setdefault(key, (row, compile_id, []))[2].append(guard)
            for row, compile_id, guards in by_compile.values():
                self._guarded(row, row.trace.record_guards, compile_id, guards)

    def _frame_name(self, event: GraphBreak) -> str:
        frame = self._frames.get(event.compile_id)
        if frame is not None:
            return frame.frame_name
        return event.location.function if event.location else ""

    def _guarded(self, row: CompileRow, write: Callable[..., Any], *args: Any) -> None:
        try:
            write(*args)
        except Exception as error:
            if not self._write_failed:
                self._write_failed = True
                print(
                    f"loupe: could not record a dynamo event in {row.trace.path}: {error}",
                    file=sys.stderr,
                )


recorder = DynamoTraceRecorder()
