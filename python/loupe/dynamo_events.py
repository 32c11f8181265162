"""Dynamo's compile events, captured in-process.

Dynamo writes its structured trace (what ``TORCH_TRACE=dir`` stores and tlparse reads)
through the Python logger ``torch._logging._internal.trace_log``, and only builds the
events while that logger has a handler. ``DynamoEventCapture`` attaches one, so no
environment variable is needed, and turns each record into a plain dataclass: the
compile and its input signature, graph breaks with the user stack, the guards of the
compiled entry, recompiles with the guard that failed, symbolic dims, and the source lines
each compile traced (``traced_lines.py``).

Torch renames these internals between versions. Anything unexpected becomes a
``Warning`` event; nothing here raises into the user's program.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Callable

from .traced_lines import TracedLine, TracedLineCapture

__all__ = [
    "StackFrame",
    "TensorInput",
    "CompileEvent",
    "GraphBreak",
    "Guard",
    "Recompile",
    "SymbolCreated",
    "TracedSource",
    "Warning",
    "DynamoEventCapture",
    "as_dict",
]


@dataclass(frozen=True)
class StackFrame:
    file: str
    line: int
    function: str
    code: str | None = None


@dataclass
class TensorInput:
    source: str  # Dynamo's name for the input, e.g. L['x']
    size: list[int]
    stride: list[int]
    dtype: str
    device: str
    dynamic_dims: list[int] = field(default_factory=list)


@dataclass
class CompileEvent:
    compile_id: str
    attempt: int
    frame_name: str
    frame_file: str
    frame_line: int
    inputs: list[TensorInput] = field(default_factory=list)
    fail_type: str | None = None
    fail_reason: str | None = None
    finished: bool = False  # Dynamo reported the compile's metrics: no more events for it


@dataclass
class GraphBreak:
    compile_id: str | None
    reason: str
    user_stack: list[StackFrame]

    @property
    def location(self) -> StackFrame | None:
        """The innermost user frame: where the break happened."""
        return self.user_stack[-1] if self.user_stack else None


@dataclass
class Guard:
    compile_id: str | None
    kind: str  # TENSOR_MATCH, LAMBDA_GUARD, ..., or SHAPE_ENV for a symbolic-shape guard
    expr: str
    source: str | None  # the guarded value, e.g. L['x'], when the guard tree names one
    user_stack: list[StackFrame]


@dataclass
class Recompile:
    compile_id: str | None  # the new compile
    failed_compile_id: str | None  # the cached entry whose guards rejected the inputs
    reason: str
    failed_guard: Guard | None


@dataclass
class SymbolCreated:
    compile_id: str | None
    symbol: str
    source: str
    hint: str | None
    value_range: str | None
    user_stack: list[StackFrame]


@dataclass
class TracedSource:
    """The lines a compile traced, in order: reported once Dynamo finishes the compile."""

    compile_id: str | None
    lines: list[TracedLine]


@dataclass
class Warning:  # noqa: A001 - the event kind users see in the trace
    compile_id: str | None
    message: str


DynamoEvent = CompileEvent | GraphBreak | Guard | Recompile | SymbolCreated | TracedSource | Warning

_SIZE_SOURCE = re.compile(r"^(?P<tensor>.*)\.size\(\)\[(?P<dim>\d+)\]$")
_GUARD_LINE = re.compile(r"^(?P<indent>[| ]*)\+- (?P<kind>[A-Za-z_]+): (?P<rest>.*)$")
_GUARD_MANAGER_SOURCE = re.compile(r"source=(?P<source>.*?), accessed_by=")
# Guard comments: "expr  # user code  # path:line in fn (note)"; Dynamo truncates the path.
_COMMENT_SEP = re.compile(r"\s{2,}# ")
_GUARD_LOCATION = re.compile(r"^(?P<file>\S+):(?P<line>\d+) in (?P<function>\S+)")
_TRACEBACK_FRAME = re.compile(
    r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$'
)
_TENSOR_IN_REASON = re.compile(r"tensor '(?P<name>[^']+)'")
_REASON_ENTRY = re.compile(r"^(?P<compile_id>!?[\d/]+): (?P<reason>.*)$", re.S)


def _torch_version() -> str:
    try:
        import torch

        return torch.__version__
    except Exception:  # torch itself is broken: still never raise
        return "unknown"


def _compile_id_of(metadata: dict[str, Any]) -> str | None:
    frame_id = metadata.get("frame_id")
    frame_compile_id = metadata.get("frame_compile_id")
    if frame_id is None or frame_compile_id is None:
        return None
    compile_id = f"{frame_id}/{frame_compile_id}"
    autograd_id = metadata.get("compiled_autograd_id")
    return f"!{autograd_id}/{compile_id}" if autograd_id is not None else compile_id


def _parse_traceback(text: str) -> list[StackFrame]:
    """Frames of a Python-formatted traceback: a File line, then the code line."""
    frames: list[StackFrame] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = _TRACEBACK_FRAME.match(line)
        if not match:
            continue
        following = lines[i + 1].strip() if i + 1 < len(lines) else ""
        code = None if not following or _TRACEBACK_FRAME.match(lines[i + 1]) else following
        frames.append(StackFrame(match["file"], int(match["line"]), match["function"], code))
    return frames


def _parse_graph_break(payload: str) -> tuple[str, list[StackFrame]]:
    """Splits Dynamo's graph-break report into its reason and the user code traceback.

    The report's tail is Dynamo's own Python traceback, which is not the user's stack.
    """
    head, _, after = payload.partition("User code traceback:")
    user_block = after.split("\nTraceback (most recent call last):", 1)[0]
    reason = head.split("Graph Break Reason:", 1)[-1].strip()
    return reason, _parse_traceback(user_block)


class DynamoEventCapture:
    """Records Dynamo's events while installed.

    Use as ``with DynamoEventCapture() as capture:`` or ``install()`` / ``uninstall()``.
    The logger's level, propagation and handlers are restored on uninstall; a handler
    that another tool (e.g. TORCH_TRACE) attached keeps receiving every event.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._events: list[DynamoEvent] = []
        self._warned: set[str] = set()
        self._compiles: dict[str, CompileEvent] = {}
        self._guard_tree_seen: set[str] = set()
        self._described: dict[tuple[Any, Any], dict[str, Any]] = {}
        self._interned: dict[int, str] = {}
        self._active_compile_id: str | None = None
        self._logger: logging.Logger | None = None
        self._saved_state: tuple[int, bool] | None = None
        self._listeners: list[Callable[[DynamoEvent], None]] = []
        self._record_ends: list[Callable[[], None]] = []
        self._handler = _CaptureHandler(self)
        self._traced_lines = TracedLineCapture(self.current_compile_id)
        self._parsers: dict[str, Callable[[dict[str, Any], Any, str | None], None]] = {
            "str": self._on_str,
            "dynamo_start": self._on_dynamo_start,
            "describe_tensor": self._on_describe_tensor,
            "describe_source": self._on_describe_source,
            "create_symbol": self._on_create_symbol,
            "guard_added_fast": self._on_guard_added_fast,
            "dynamo_cpp_guards_str": self._on_guards_str,
            "compilation_metrics": self._on_compilation_metrics,
        }
        self._artifact_parsers: dict[str, Callable[[dict[str, Any], Any, str | None], None]] = {
            "dynamo_graph_break_reason": self._on_graph_break,
            "recompile_reasons": self._on_recompile_reasons,
        }

    # -- lifecycle -------------------------------------------------------------------

    def install(self) -> DynamoEventCapture:
        with self._lock:
            if self._logger is not None:
                return self
            try:
                from torch._logging._internal import trace_log
            except Exception as error:
                self._warn(
                    None,
                    "dynamo event logger trace_log not available on torch"
                    f" {_torch_version()}: {error}",
                )
                return self
            self._logger = trace_log
            self._saved_state = (trace_log.level, trace_log.propagate)
            trace_log.setLevel(logging.DEBUG)
            trace_log.propagate = False
            trace_log.addHandler(self._handler)
            unavailable = self._traced_lines.install()
            if unavailable is not None:
                self._warn(None, f"{unavailable} on torch {_torch_version()}")
        return self

    def uninstall(self) -> None:
        with self._lock:
            if self._logger is None or self._saved_state is None:
                return
            self._traced_lines.uninstall()
            self._logger.removeHandler(self._handler)
            self._logger.setLevel(self._saved_state[0])
            self._logger.propagate = self._saved_state[1]
            self._logger = None
            self._saved_state = None

    def __enter__(self) -> DynamoEventCapture:
        return self.install()

    def __exit__(self, *exc_info: object) -> None:
        self.uninstall()

    def add_listener(
        self,
        listener: Callable[[DynamoEvent], None],
        end_of_record: Callable[[], None] | None = None,
    ) -> None:
        """Calls listener(event) as each event is captured, and again with a CompileEvent once
        it is finished. end_of_record() follows the events of each Dynamo log record (the guard
        tree of a compile is one record, hundreds of events): where a listener that batches its
        writes flushes them. A listener that raises is ignored: the compile goes on."""
        with self._lock:
            self._listeners.append(listener)
            if end_of_record is not None:
                self._record_ends.append(end_of_record)

    # -- queries ---------------------------------------------------------------------

    def __iter__(self) -> Iterator[DynamoEvent]:
        with self._lock:
            return iter(list(self._events))

    def events_for(self, compile_id: str) -> list[DynamoEvent]:
        with self._lock:
            return [event for event in self._events if event.compile_id == compile_id]

    def current_compile_id(self) -> str | None:
        """The compile a backend called right now is part of, or None outside Dynamo.

        Dynamo's own compile context is authoritative; the latest ``dynamo_start`` that
        has not finished covers torch versions where that context is missing.
        """
        try:
            from torch._guards import CompileContext

            compile_id = CompileContext.current_compile_id()
            if compile_id is not None:
                return str(compile_id)
        except Exception:
            pass
        with self._lock:
            return self._active_compile_id

    # -- record dispatch -------------------------------------------------------------

    def _handle(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        name = next(iter(metadata), "<unnamed>") if isinstance(metadata, dict) else "<no metadata>"
        try:
            if not isinstance(metadata, dict):
                raise TypeError(f"record has no metadata dict: {record.getMessage()!r}")
            payload = getattr(record, "payload", None)
            compile_id = _compile_id_of(metadata)
            with self._lock:
                if name == "artifact":
                    name = f"artifact {metadata['artifact'].get('name')}"
                    parser = self._artifact_parsers.get(metadata["artifact"].get("name"))
                else:
                    parser = self._parsers.get(name)
                if parser is not None:
                    parser(metadata, payload, compile_id)
        except Exception as error:
            self._warn(
                _compile_id_of(metadata) if isinstance(metadata, dict) else None,
                f"dynamo event {name} not available on torch {_torch_version()}: "
                f"{type(error).__name__}: {error}",
            )
        with self._lock:
            for end_of_record in self._record_ends:
                try:
                    end_of_record()
                except Exception:
                    pass

    def _warn(self, compile_id: str | None, message: str) -> None:
        with self._lock:
            if message in self._warned:
                return
            self._warned.add(message)
            self._emit(Warning(compile_id, message))

    def _emit(self, event: DynamoEvent) -> None:
        self._events.append(event)
        self._notify(event)

    def _notify(self, event: DynamoEvent) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                pass

    # -- stacks ----------------------------------------------------------------------

    def _file_name(self, index: Any) -> str:
        if isinstance(index, str):
            return index
        if index not in self._interned:
            # Strings interned before install never produce a "str" event; read the table.
            from torch._logging.structured import INTERN_TABLE

            self._interned.update({i: s for s, i in INTERN_TABLE.items()})
        return self._interned.get(index, f"<interned {index}>")

    def _stack(self, frames: list[dict[str, Any]] | None) -> list[StackFrame]:
        return [
            StackFrame(self._file_name(f["filename"]), int(f["line"]), f["name"], f.get("loc"))
            for f in frames or []
        ]

    def _full_path(self, compile_id: str | None, truncated: str) -> str:
        compile_event = self._compiles.get(compile_id) if compile_id else None
        if compile_event and compile_event.frame_file.endswith(truncated):
            return compile_event.frame_file
        return truncated

    # -- parsers, one per Dynamo event -----------------------------------------------

    def _on_str(self, metadata: dict[str, Any], _payload: Any, _compile_id: str | None) -> None:
        text, index = metadata["str"]
        self._interned[index] = text

    def _on_dynamo_start(
        self, metadata: dict[str, Any], _payload: Any, compile_id: str | None
    ) -> None:
        frame = self._stack(metadata["dynamo_start"]["stack"])[-1]
        self._active_compile_id = compile_id
        event = CompileEvent(
            compile_id, metadata.get("attempt", 0), frame.function, frame.file, frame.line
        )
        self._compiles[compile_id] = event
        self._emit(event)

    def _compile(self, compile_id: str | None) -> CompileEvent:
        if compile_id not in self._compiles:
            raise KeyError(f"no dynamo_start seen for compile {compile_id}")
        return self._compiles[compile_id]

    def _on_describe_tensor(
        self, metadata: dict[str, Any], _payload: Any, _compile_id: str | None
    ) -> None:
        tensor = metadata["describe_tensor"]
        self._described[(tensor["describer_id"], tensor["id"])] = tensor

    def _on_describe_source(
        self, metadata: dict[str, Any], _payload: Any, compile_id: str | None
    ) -> None:
        described = metadata["describe_source"]
        tensor = self._described.get((described["describer_id"], described["id"]))
        if tensor is None:
            return  # the source of a non-tensor or of a base storage
        compile_event = self._compile(compile_id)
        compile_event.attempt = max(compile_event.attempt, metadata.get("attempt", 0))
        source = described["source"]
        # A restarted attempt describes the same inputs again: replace, never duplicate.
        compile_event.inputs = [i for i in compile_event.inputs if i.source != source]
        compile_event.inputs.append(
            TensorInput(source, tensor["size"], tensor["stride"], tensor["dtype"], tensor["device"])
        )

    def _on_create_symbol(
        self, metadata: dict[str, Any], _payload: Any, compile_id: str | None
    ) -> None:
        symbol = metadata["create_symbol"]
        source = symbol["source"]
        self._emit(
            SymbolCreated(
                compile_id,
                symbol["symbol"],
                source,
                symbol.get("val"),
                symbol.get("vr"),
                self._stack(symbol.get("user_stack")),
            )
        )
        size_source = _SIZE_SOURCE.match(source)
        if size_source and compile_id in self._compiles:
            for tensor in self._compiles[compile_id].inputs:
                dim = int(size_source["dim"])
                if tensor.source == size_source["tensor"] and dim not in tensor.dynamic_dims:
                    tensor.dynamic_dims.append(dim)

    def _on_guard_added_fast(
        self, metadata: dict[str, Any], _payload: Any, compile_id: str | None
    ) -> None:
        guard = metadata["guard_added_fast"]
        self._emit(
            Guard(
                compile_id, "SHAPE_ENV", guard["expr"], None, self._stack(guard.get("user_stack"))
            )
        )

    def _on_guards_str(
        self, _metadata: dict[str, Any], payload: Any, compile_id: str | None
    ) -> None:
        if not isinstance(payload, str):
            raise TypeError("guard tree payload missing")
        self._guard_tree_seen.add(compile_id)
        # Guard managers nest by depth; a guard's source is its nearest enclosing manager's.
        sources_by_depth: dict[int, str] = {}
        for line in payload.splitlines():
            match = _GUARD_LINE.match(line)
            if not match:
                continue
            depth = len(match["indent"]) // 2
            kind, rest = match["kind"], match["rest"]
            if kind in ("GuardManager", "DictGuardManager", "DictSubclassGuardManager"):
                source = _GUARD_MANAGER_SOURCE.search(rest)
                sources_by_depth[depth] = source["source"] if source else None
                continue
            if kind == "RootGuardManager":
                continue
            self._emit(
                self._guard_from_tree_line(compile_id, kind, rest, sources_by_depth.get(depth - 1))
            )

    def _guard_from_tree_line(
        self, compile_id: str | None, kind: str, rest: str, source: str | None
    ) -> Guard:
        expr, *comments = _COMMENT_SEP.split(rest)
        user_stack: list[StackFrame] = []
        code = None
        for comment in comments:
            location = _GUARD_LOCATION.match(comment)
            if location and code is not None:
                file = self._full_path(compile_id, location["file"])
                user_stack.append(
                    StackFrame(file, int(location["line"]), location["function"], code)
                )
            elif code is None:
                code = comment.strip()
        return Guard(compile_id, kind, expr.strip(), source, user_stack)

    def _on_compilation_metrics(
        self, metadata: dict[str, Any], _payload: Any, compile_id: str | None
    ) -> None:
        metrics = metadata["compilation_metrics"]
        compile_id = metrics.get("compile_id", compile_id)
        if self._active_compile_id == compile_id:
            self._active_compile_id = None
        lines = self._traced_lines.take(compile_id)  # taken even when unused: nothing piles up
        compile_event = self._compiles.get(compile_id)
        if compile_event is None:
            return
        compile_event.fail_type = metrics.get("fail_type")
        compile_event.fail_reason = metrics.get("fail_reason")
        compile_event.finished = True
        if lines:
            self._emit(TracedSource(compile_id, lines))
        if self._traced_lines.error is not None:
            self._warn(
                compile_id,
                f"dynamo trace_source records not readable on torch {_torch_version()}: "
                f"{self._traced_lines.error}",
            )
        if compile_event.fail_type is None and compile_id not in self._guard_tree_seen:
            self._warn(
                compile_id,
                f"dynamo event dynamo_cpp_guards_str not available on torch {_torch_version()}: "
                f"compile {compile_id} finished with no guard tree",
            )
        self._notify(compile_event)

    def _on_graph_break(
        self, _metadata: dict[str, Any], payload: Any, compile_id: str | None
    ) -> None:
        if not isinstance(payload, str):
            raise TypeError("graph break payload missing")
        reason, user_stack = _parse_graph_break(payload)
        self._emit(GraphBreak(compile_id, reason, user_stack))

    def _on_recompile_reasons(
        self, _metadata: dict[str, Any], payload: Any, compile_id: str | None
    ) -> None:
        if not isinstance(payload, str):
            raise TypeError("recompile reasons payload missing")
        # One failing cache entry is logged as a plain string, several as a JSON list.
        reasons = json.loads(payload) if payload.lstrip().startswith("[") else [payload]
        for text in reasons:
            entry = _REASON_ENTRY.match(text.strip())
            failed_compile_id = entry["compile_id"] if entry else None
            reason = entry["reason"] if entry else text.strip()
            self._emit(
                Recompile(
                    compile_id,
                    failed_compile_id,
                    reason,
                    self._failed_guard(failed_compile_id, reason),
                )
            )

    def _latest_compile_events(self, compile_id: str | None) -> list[DynamoEvent]:
        """The events of the latest compile with this id: torch._dynamo.reset() numbers frames
        afresh, so an id seen before its latest dynamo_start names an earlier compile."""
        events: list[DynamoEvent] = []
        for event in reversed(self._events):
            if event.compile_id != compile_id:
                continue
            if isinstance(event, CompileEvent):
                break
            events.append(event)
        return events[::-1]

    def _failed_guard(self, failed_compile_id: str | None, reason: str) -> Guard | None:
        """The guard of the rejected entry that the reason text points at.

        Dynamo reports a failed guard either by its expression or, for TENSOR_MATCH,
        as "tensor 'x' <mismatch>" naming the input without its L[...] wrapper.
        """
        all_guards = [
            event
            for event in self._latest_compile_events(failed_compile_id)
            if isinstance(event, Guard)
        ]
        guards = [guard for guard in all_guards if guard.kind != "SHAPE_ENV"]
        for guard in guards:
            if guard.expr and guard.expr in reason:
                return guard
        # A symbolic-shape guard is reported in Python spelling, "(x.size()[0] % 2) == 0  #
        # <code>  # <file>:<line> in <function>", not the sympy expression the guard list
        # holds: it is found by the user line that created it.
        for guard in all_guards:
            if guard.kind == "SHAPE_ENV" and guard.user_stack:
                frame = guard.user_stack[-1]
                where = f"{os.path.basename(frame.file)}:{frame.line} in {frame.function}"
                if where in reason and (not frame.code or frame.code.strip() in reason):
                    return guard
        tensor = _TENSOR_IN_REASON.search(reason)
        if tensor:
            name = tensor["name"]
            for guard in guards:
                if guard.kind == "TENSOR_MATCH" and guard.source in (name, f"L['{name}']"):
                    return guard
        return None


class _CaptureHandler(logging.Handler):
    def __init__(self, capture: DynamoEventCapture) -> None:
        super().__init__(logging.DEBUG)
        self._capture = capture

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._capture._handle(record)
        except Exception:  # the last line of defence: a user's compile must go on
            pass


def as_dict(event: DynamoEvent) -> dict[str, Any]:
    """A JSON-ready form of an event, with its kind, for writing into the trace."""
    return {"kind": type(event).__name__, **dataclasses.asdict(event)}
