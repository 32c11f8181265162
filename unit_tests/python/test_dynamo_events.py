"""DynamoEventCapture against the installed torch, on CPU, with Dynamo's eager backend."""

import inspect
import logging

import pytest
import torch
from torch._logging._internal import trace_log

from branching import branch_on_parity, line_of
from loupe import dynamo_events
from loupe.dynamo_events import (
    CompileEvent,
    DynamoEventCapture,
    GraphBreak,
    Guard,
    Recompile,
    SymbolCreated,
    TracedSource,
    Warning,
)
from loupe.traced_lines import LOGGER_NAME


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def of_type(capture, kind):
    return [event for event in capture if isinstance(event, kind)]


def break_in_the_middle(x):
    y = x * 2
    torch._dynamo.graph_break()
    return y.sin()


def add_one(x):
    return (x + 1).cos()


def even_batch_only(x):
    if x.shape[0] % 2 == 0:
        return x * 3
    return x


def test_graph_break_has_reason_and_user_line():
    with DynamoEventCapture() as capture:
        torch.compile(break_in_the_middle, backend="eager")(torch.randn(4, 3))

    breaks = of_type(capture, GraphBreak)
    assert len(breaks) == 1
    assert "graph_break()" in breaks[0].reason
    where = breaks[0].location
    assert where.file == __file__
    assert where.line == line_of(break_in_the_middle, "graph_break()")
    assert where.function == "break_in_the_middle"
    assert where.code == "torch._dynamo.graph_break()"
    assert not of_type(capture, Warning)


def test_compile_records_frame_and_input_signature():
    with DynamoEventCapture() as capture:
        torch.compile(add_one, backend="eager")(torch.randn(4, 3).t())

    (compile_event,) = of_type(capture, CompileEvent)
    assert compile_event.frame_name == "add_one"
    assert compile_event.frame_file == __file__
    assert compile_event.frame_line == inspect.getsourcelines(add_one)[1]
    (tensor,) = compile_event.inputs
    assert (tensor.source, tensor.size, tensor.stride) == ("L['x']", [3, 4], [1, 3])
    assert tensor.dtype == "torch.float32"
    assert tensor.dynamic_dims == []
    assert all(
        event.compile_id == compile_event.compile_id
        for event in capture.events_for(compile_event.compile_id)
    )


def test_guards_of_compiled_entry_include_tensor_match_for_input():
    with DynamoEventCapture() as capture:
        torch.compile(add_one, backend="eager")(torch.randn(4, 3))

    (compile_event,) = of_type(capture, CompileEvent)
    guards = [e for e in capture.events_for(compile_event.compile_id) if isinstance(e, Guard)]
    (tensor_match,) = [g for g in guards if g.kind == "TENSOR_MATCH"]
    assert tensor_match.source == "L['x']"
    assert "size=[4, 3]" in tensor_match.expr
    assert tensor_match.user_stack[-1].file == __file__
    assert tensor_match.user_stack[-1].line == line_of(add_one, "return")


def test_second_shape_recompiles_naming_the_failed_guard():
    with DynamoEventCapture() as capture:
        compiled = torch.compile(add_one, backend="eager")
        compiled(torch.randn(4, 3))
        compiled(torch.randn(6, 3))

    first, second = of_type(capture, CompileEvent)
    (recompile,) = of_type(capture, Recompile)
    assert recompile.compile_id == second.compile_id
    assert recompile.failed_compile_id == first.compile_id
    assert "size mismatch at index 0" in recompile.reason
    assert "expected 4, actual 6" in recompile.reason
    assert recompile.failed_guard.kind == "TENSOR_MATCH"
    assert recompile.failed_guard.compile_id == first.compile_id
    assert recompile.failed_guard.source == "L['x']"
    # Automatic dynamic: the recompile makes the batch dim symbolic.
    assert second.inputs[0].dynamic_dims == [0]


def test_dynamic_shapes_record_symbols_and_shape_guards():
    with DynamoEventCapture() as capture:
        torch.compile(even_batch_only, backend="eager", dynamic=True)(torch.randn(8, 3))

    (compile_event,) = of_type(capture, CompileEvent)
    assert sorted(compile_event.inputs[0].dynamic_dims) == [0, 1]
    symbols = {s.source: s for s in of_type(capture, SymbolCreated)}
    batch = symbols["L['x'].size()[0]"]
    assert batch.hint == "8"
    assert batch.user_stack[-1].file == __file__

    shape_guards = [g for g in of_type(capture, Guard) if g.kind == "SHAPE_ENV"]
    (parity,) = [g for g in shape_guards if f"Mod({batch.symbol}, 2)" in g.expr]
    assert parity.user_stack[-1].line == line_of(even_batch_only, "% 2")


def test_current_compile_id_inside_backend_matches_the_compile():
    seen = []

    def backend(graph_module, example_inputs):
        seen.append(capture.current_compile_id())
        return graph_module.forward

    with DynamoEventCapture() as capture:
        torch.compile(add_one, backend=backend)(torch.randn(2))
        assert capture.current_compile_id() is None

    (compile_event,) = of_type(capture, CompileEvent)
    assert seen == [compile_event.compile_id]


@pytest.mark.parametrize("dynamic", [False, None])
def test_each_compile_records_the_lines_it_traced(dynamic):
    with DynamoEventCapture() as capture:
        compiled = torch.compile(branch_on_parity, backend="eager", dynamic=dynamic)
        for size in (4, 5):
            compiled(torch.randn(size))

    traced = {event.compile_id: event.lines for event in of_type(capture, TracedSource)}
    assert set(traced) == {"0/0", "0/1"}, traced
    condition = line_of(branch_on_parity, "if h.size(0)")
    even, odd = line_of(branch_on_parity, "h + 1"), line_of(branch_on_parity, "h - 1")
    file = inspect.getsourcefile(branch_on_parity)
    for compile_id, taken, skipped in (("0/0", even, odd), ("0/1", odd, even)):
        lines = [line for f, line, function, depth in traced[compile_id] if f == file]
        assert all(f == file and fn == "branch_on_parity" for f, _, fn, _ in traced[compile_id])
        assert lines.index(taken) == lines.index(condition) + 1, (compile_id, lines)
        assert skipped not in lines


def test_traced_lines_reach_no_user_handler_and_the_logger_is_restored():
    received = []

    class UserHandler(logging.Handler):
        def emit(self, record):
            received.append(record)

    source_log = logging.getLogger(LOGGER_NAME)
    before = (source_log.level, source_log.propagate, list(source_log.handlers))
    root = logging.getLogger()
    user_handler = UserHandler(logging.DEBUG)
    root.addHandler(user_handler)
    try:
        capture = DynamoEventCapture().install()
        torch.compile(branch_on_parity, backend="eager")(torch.randn(4))
        capture.uninstall()
    finally:
        root.removeHandler(user_handler)
    assert of_type(capture, TracedSource)
    assert not [r for r in received if r.name == LOGGER_NAME]
    if not any(isinstance(h, type(capture._traced_lines._handler)) for h in before[2]):
        # No other capture (the backend's process-wide one) holds the logger: restored as found.
        assert (source_log.level, source_log.propagate, list(source_log.handlers)) == before


def test_uninstall_restores_logger_exactly():
    original = (trace_log.level, trace_log.propagate)
    trace_log.setLevel(logging.WARNING)
    trace_log.propagate = True
    before = (trace_log.level, trace_log.propagate, list(trace_log.handlers))
    try:
        capture = DynamoEventCapture().install()
        assert trace_log.level == logging.DEBUG and trace_log.propagate is False
        capture.uninstall()
        assert (trace_log.level, trace_log.propagate, list(trace_log.handlers)) == before
    finally:
        trace_log.setLevel(original[0])
        trace_log.propagate = original[1]


def test_existing_trace_handler_keeps_receiving_events():
    received = []

    class UserTraceHandler(logging.Handler):
        def emit(self, record):
            received.append(record)

    user_handler = UserTraceHandler()
    trace_log.addHandler(user_handler)
    try:
        with DynamoEventCapture() as capture:
            torch.compile(add_one, backend="eager")(torch.randn(2))
        # The user's handler stays; this capture's own handler is gone (another capture, such as
        # the backend's process-wide one, may legitimately remain).
        assert user_handler in trace_log.handlers
        assert capture._handler not in trace_log.handlers
        assert any("dynamo_start" in r.metadata for r in received)
        assert of_type(capture, CompileEvent)
    finally:
        trace_log.removeHandler(user_handler)


def test_broken_parser_becomes_warning_not_exception(monkeypatch):
    def broken(payload):
        raise ValueError("unexpected format")

    monkeypatch.setattr(dynamo_events, "_parse_graph_break", broken)
    with DynamoEventCapture() as capture:
        result = torch.compile(break_in_the_middle, backend="eager")(torch.ones(3))

    torch.testing.assert_close(result, (torch.ones(3) * 2).sin())
    (warning,) = of_type(capture, Warning)
    assert "dynamo_graph_break_reason" in warning.message
    assert f"torch {torch.__version__}" in warning.message
    assert "unexpected format" in warning.message
    assert not of_type(capture, GraphBreak)
    assert of_type(capture, CompileEvent)
