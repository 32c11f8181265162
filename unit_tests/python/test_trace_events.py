"""Dynamo's events in the trace of a torch.compile(backend="loupe") run: compile keys, frames and
input signatures, graph breaks, guards and recompiles, as SQL and `loupe show --json` see them."""

import inspect
import json

import torch

from conftest import query, show_json
from loupe.dynamo_events import CompileEvent, DynamoEventCapture
from loupe.dynamo_trace import recorder


def line_of(fn, text):
    """The file line of the first source line of fn containing text."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def break_in_the_middle(x):
    y = x * 2
    torch._dynamo.graph_break()
    return y.sin()


def scale_rows(x):
    return x * x.shape[0] + 1


def double_even_batches(x):
    if x.shape[0] % 2 == 0:
        return x * 2
    return x


def compiled(fn, trace_path, **kwargs):
    return torch.compile(fn, backend="loupe", options={"trace": trace_path}, **kwargs)


def compile_keys(trace_path):
    return [key for (key,) in query(trace_path, "SELECT compile_key FROM compiles ORDER BY id")]


def test_graph_break_gives_two_compiles_and_a_linked_break_with_user_stack(trace_path):
    with DynamoEventCapture() as capture:
        compiled(break_in_the_middle, trace_path)(torch.randn(4, 3))

    dynamo_keys = [event.compile_id for event in capture if isinstance(event, CompileEvent)]
    assert compile_keys(trace_path) == dynamo_keys == ["0/0", "1/0"]

    ((compile_key, frame_name, reason, stack_json),) = query(
        trace_path,
        "SELECT c.compile_key, b.frame_name, b.reason, b.user_stack FROM graph_breaks b "
        "JOIN compiles c ON c.id = b.compile_id",
    )
    assert compile_key == "0/0"  # the compile of the graph before the break
    assert frame_name == "break_in_the_middle"
    assert "graph_break" in reason
    innermost = json.loads(stack_json)[-1]
    assert innermost["file"] == __file__
    assert innermost["line"] == line_of(break_in_the_middle, "graph_break()")

    ((name, file, line),) = query(
        trace_path,
        "SELECT frame_name, frame_file, frame_line FROM compiles WHERE compile_key = '0/0'",
    )
    assert (name, file) == ("break_in_the_middle", __file__)
    assert line >= line_of(break_in_the_middle, "def break_in_the_middle")


def test_after_a_reset_each_trace_gets_its_own_recompiles(tmp_path):
    """torch._dynamo.reset() numbers frames afresh: the second function's "0/1" recompile
    belongs to its own trace, not to the first function's compile of the same key."""
    first, second = str(tmp_path / "first.db"), str(tmp_path / "second.db")
    fn = compiled(scale_rows, first)
    fn(torch.randn(4, 3))
    fn(torch.randn(8, 3))
    torch._dynamo.reset()
    other = compiled(double_even_batches, second)
    other(torch.randn(2, 3))
    other(torch.randn(6, 3))
    recompiles = "SELECT count(*) FROM recompiles"
    assert query(first, recompiles) == [(1,)]
    assert query(second, recompiles) == [(1,)]


def test_second_shape_records_recompile_with_failed_guard(trace_path):
    fn = compiled(scale_rows, trace_path)
    fn(torch.randn(4, 3))
    fn(torch.randn(8, 3))

    assert compile_keys(trace_path) == ["0/0", "0/1"]
    ((new_key, previous_key, reason, failed_guard),) = query(
        trace_path,
        "SELECT c.compile_key, r.previous_compile_key, r.reason, r.failed_guard FROM recompiles r "
        "JOIN compiles c ON c.id = r.compile_id",
    )
    assert (new_key, previous_key) == ("0/1", "0/0")
    assert "size mismatch" in reason
    assert "L['x']" in failed_guard

    guards_per_compile = dict(
        query(
            trace_path,
            "SELECT c.compile_key, count(*) FROM guards g JOIN compiles c ON c.id = g.compile_id "
            "GROUP BY c.compile_key",
        )
    )
    assert guards_per_compile.keys() == {"0/0", "0/1"}
    failed = query(
        trace_path,
        "SELECT c.compile_key, g.kind, g.expr FROM guards g JOIN compiles c ON c.id = g.compile_id "
        "WHERE g.failed = 1",
    )
    assert len(failed) == 1
    assert failed[0][0] == "0/0"
    assert f"{failed[0][1]}: {failed[0][2]}" == failed_guard

    counts = show_json(trace_path)
    assert counts["recompiles"] == 1
    assert counts["guards"] == sum(guards_per_compile.values())
    assert counts["graph_breaks"] == 0


def test_dynamic_marks_dim_zero_and_keeps_the_shape_guard_with_its_user_line(trace_path):
    fn = compiled(double_even_batches, trace_path, dynamic=True)
    for batch in (4, 6):
        x = torch.randn(batch, 3)
        torch.testing.assert_close(fn(x), double_even_batches(x))

    ((signature_json,),) = query(trace_path, "SELECT input_signature FROM compiles")
    (tensor,) = [entry for entry in json.loads(signature_json) if "shape" in entry]
    assert 0 in tensor["dynamic_dims"]
    assert tensor["shape"][0] != "4"  # a symbol, not the first call's size

    shape_guards = query(trace_path, "SELECT expr, user_stack FROM guards WHERE kind = 'SHAPE_ENV'")
    assert shape_guards
    lines = {
        (frame["file"], frame["line"]) for _, stack in shape_guards for frame in json.loads(stack)
    }
    assert (__file__, line_of(double_even_batches, "x.shape[0] % 2")) in lines
    assert query(trace_path, "SELECT count(*) FROM recompiles") == [(0,)]


def test_show_json_counts_graph_breaks_and_guards(trace_path):
    compiled(break_in_the_middle, trace_path)(torch.randn(4, 3))

    counts = show_json(trace_path)
    assert counts["compiles"] == 2
    assert counts["graph_breaks"] == 1
    assert counts["guards"] > 0
    assert counts["recompiles"] == 0


def test_a_dynamo_event_this_torch_lacks_becomes_a_warning_row(trace_path, monkeypatch):
    def renamed_internal(*_):
        raise KeyError("guard tree")

    monkeypatch.setitem(recorder._capture._parsers, "dynamo_cpp_guards_str", renamed_internal)
    x = torch.randn(4, 3)
    torch.testing.assert_close(compiled(scale_rows, trace_path)(x), scale_rows(x))

    messages = [message for (message,) in query(trace_path, "SELECT message FROM warnings")]
    assert any("dynamo_cpp_guards_str" in message and "KeyError" in message for message in messages)
