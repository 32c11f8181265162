"""torch.compile(backend="loupe") end to end: results against eager, and what the trace keeps."""

import copy
import os
import re
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

from conftest import query, show_json
from loupe import _C


class Mlp(nn.Module):
    def __init__(self, width=32, hidden=64):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


def forward_backward(model, x):
    x = x.detach().clone().requires_grad_(True)
    y = model(x)
    (y * y).sum().backward()
    grads = [x.grad] + [p.grad for p in model.parameters()]
    return y.detach(), grads


def test_mlp_forward_and_backward_match_float64_eager(trace_path):
    torch.manual_seed(0)
    model = Mlp()
    reference = copy.deepcopy(model).double()
    x = torch.randn(8, 32)

    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
    y, grads = forward_backward(compiled, x)
    y_ref, grads_ref = forward_backward(reference, x.double())

    torch.testing.assert_close(y, y_ref.float(), rtol=1e-4, atol=1e-5)
    assert len(grads) == len(grads_ref) == 7
    for grad, grad_ref in zip(grads, grads_ref):
        torch.testing.assert_close(grad, grad_ref.float(), rtol=1e-4, atol=1e-4)


def test_trace_has_one_snapshot_per_pass_per_compile(trace_path):
    model = Mlp()
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
    forward_backward(compiled, torch.randn(4, 32))

    pipeline = _C.default_pipeline()
    compiles = query(trace_path, "SELECT id, graph_kind, status, compile_key FROM compiles")
    assert sorted(kind for _, kind, _, _ in compiles) == ["backward", "forward"]
    for compile_id, kind, status, key in compiles:
        assert status == "ok", kind
        assert key == "0/0"
        passes = query(
            trace_path,
            "SELECT name, snapshot_id FROM passes WHERE compile_id = ? ORDER BY ordinal",
            compile_id,
        )
        assert [name for name, _ in passes] == pipeline
        assert all(snapshot is not None for _, snapshot in passes)

    # Errors are measured in check mode only.
    assert query(trace_path, "SELECT count(*) FROM kernels WHERE max_error IS NOT NULL") == [(0,)]
    shown = show_json(trace_path)
    assert shown["compiles"] == 2
    assert shown["passes"] == 2 * len(pipeline)
    assert shown["fallback_nodes"] == 0


def test_trace_keeps_fx_names_and_user_locations(trace_path):
    model = Mlp()
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
    compiled(torch.randn(4, 32))

    rows = query(
        trace_path,
        "SELECT n.name, n.file, n.line, n.module_path FROM snapshot_nodes n "
        "JOIN passes p ON p.snapshot_id = n.snapshot_id JOIN compiles c ON c.id = p.compile_id "
        "WHERE p.ordinal = 0 AND c.graph_kind = 'forward' AND n.op = 'aten.addmm'",
    )
    assert sorted(r[3] for r in rows) == ["fc1", "fc2"]
    forward_line = Mlp.forward.__code__.co_firstlineno + 1
    assert all(r[1] == __file__ and r[2] == forward_line for r in rows)
    assert {r[0] for r in rows} == {"addmm", "addmm_1"}


def cumulative(x):
    return torch.logcumsumexp(x * 2.0, dim=1) + 1.0


def test_unregistered_op_runs_through_the_fallback(trace_path):
    assert "aten.logcumsumexp" not in _C.registered_ops()
    x = torch.randn(3, 5)
    compiled = torch.compile(cumulative, backend="loupe", options={"trace": trace_path})
    torch.testing.assert_close(compiled(x), cumulative(x))

    shown = show_json(trace_path)
    assert shown["fallback_nodes"] > 0
    assert shown["kernels"]["fallback"] > 0
    summaries = query(trace_path, "SELECT op_summary FROM kernels WHERE kind = 'fallback'")
    assert [s for (s,) in summaries if "aten.logcumsumexp" in s]


def test_empty_tensors_filled_later_compile_without_fallback(trace_path):
    """new_empty_strided (Nystromformer's) and empty_like (Mixtral's routing) are factories."""

    def fill_buffers(x):
        buffer = x.new_empty_strided((4, 3), (3, 1))
        buffer.fill_(2.0)
        like = torch.empty_like(x)
        like.copy_(x * 2)
        return buffer.sum(0) + like

    x = torch.randn(5, 3)
    options = {"trace": trace_path, "strict": True}
    compiled = torch.compile(fill_buffers, backend="loupe", options=options)
    torch.testing.assert_close(compiled(x), fill_buffers(x))
    assert show_json(trace_path)["fallback_nodes"] == 0


def test_a_dynamic_size_used_as_a_number_compiles(trace_path):
    """Under dynamic shapes `x * x.shape[0]` passes the size's SymInt node where a number goes:
    it is the op's .Scalar form with a symbolic attribute, one compile for every size."""

    def scale_rows(x):
        return x * x.shape[0] + 1 - x.shape[1] * x

    options = {"trace": trace_path, "strict": True}
    compiled = torch.compile(scale_rows, backend="loupe", options=options)
    for batch in (4, 8, 5):  # 4 static, then one dynamic compile for 8 and 5
        x = torch.randn(batch, 3)
        torch.testing.assert_close(compiled(x), scale_rows(x))
    assert show_json(trace_path)["fallback_nodes"] == 0


def test_scatter_forward_and_backward_compile_without_fallback(trace_path):
    """scatter.src and scatter.value (MoE routing writes expert weights with them)."""

    def route(x, index, src):
        placed = torch.zeros_like(x).scatter(1, index, src)
        marked = x.scatter(0, index[:1], 3.0)
        return (placed * x).sum() + marked

    x = torch.randn(4, 5, requires_grad=True)
    src = torch.randn(4, 2, requires_grad=True)
    index = torch.tensor([[0, 2], [4, 1], [3, 3], [1, 0]])
    compiled = torch.compile(route, backend="loupe", options={"trace": trace_path, "strict": True})
    got, want = compiled(x, index, src), route(x, index, src)
    torch.testing.assert_close(got, want)
    got_grads = torch.autograd.grad(got.sum(), [x, src])
    for g, w in zip(got_grads, torch.autograd.grad(want.sum(), [x, src])):
        torch.testing.assert_close(g, w)
    assert show_json(trace_path)["fallback_nodes"] == 0


def test_internal_error_falls_back_to_eager_and_is_recorded(trace_path, capfd):
    x = torch.randn(4, 32)
    model = Mlp()
    options = {"trace": trace_path, "pipeline": "shape-propagation,no-such-pass"}
    compiled = torch.compile(model, backend="loupe", options=options)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))

    assert "running inference graph eagerly" in capfd.readouterr().err
    ((status, message, kind),) = query(
        trace_path, "SELECT status, error_message, graph_kind FROM compiles"
    )
    assert (status, kind) == ("eager_fallback", "inference")
    assert "no-such-pass" in message


def test_unsupported_dtype_runs_eagerly_with_the_graph_in_the_trace(trace_path, capfd):
    """Complex tensors are not Loupe's: the graph runs eagerly, and the trace keeps the error
    and the FX graph it is about as the compile's failed "import" pass."""

    def scale(x):
        return x * 2 + 1

    x = torch.randn(3, dtype=torch.complex64)
    compiled = torch.compile(scale, backend="loupe", options={"trace": trace_path})
    torch.testing.assert_close(compiled(x), scale(x))
    assert "running inference graph eagerly" in capfd.readouterr().err
    ((status, message, error_pass),) = query(
        trace_path, "SELECT status, error_message, error_pass FROM compiles"
    )
    assert (status, error_pass) == ("eager_fallback", "import") and "complex64" in message
    ((name, stored),) = query(
        trace_path, "SELECT p.name, s.lir FROM passes p JOIN snapshots s ON s.id = p.snapshot_id"
    )
    assert name == "import" and "torch.ops.aten.mul.Tensor" in stored


def test_input_graph_that_fails_to_verify_is_kept_in_the_trace(trace_path):
    """A graph rejected before any pass ran (here a result type that disagrees with shape
    inference) is recorded as a failed "import" pass holding the graph, so the trace shows
    what the error is about."""
    from loupe.config import Config
    from loupe.traces import open_trace

    trace, run_id = open_trace(Config(trace=trace_path))
    info = _C.CompileInfo()
    info.graph_kind = "graph"
    compile_id = trace.begin_compile(run_id, info)
    lir = "graph @bad(%x: f32[2,3]) -> (f32[3]) {\n  %y = aten.relu(%x) : f32[3]\n  return %y\n}\n"
    with pytest.raises(Exception, match="aten.relu"):
        _C.CompiledGraph(
            lir, _C.resolve_pipeline("default", []), trace=trace, compile_id=compile_id
        )

    ((status, error_pass),) = query(trace_path, "SELECT status, error_pass FROM compiles")
    assert (status, error_pass) == ("eager_fallback", "import")
    ((name, pass_status, message, stored),) = query(
        trace_path,
        "SELECT p.name, p.status, p.error_message, s.lir FROM passes p "
        "JOIN snapshots s ON s.id = p.snapshot_id",
    )
    assert (name, pass_status) == ("import", "failed")
    assert "f32[3]" in message and "%y = aten.relu(%x)" in stored
    assert query(trace_path, "SELECT op FROM snapshot_nodes") == [("aten.relu",)]


def test_strict_mode_raises_on_internal_error(trace_path):
    options = {"trace": trace_path, "pipeline": "no-such-pass", "strict": True}
    compiled = torch.compile(Mlp(), backend="loupe", options=options)
    with pytest.raises(Exception, match="no-such-pass"):
        compiled(torch.randn(4, 32))
    assert query(trace_path, "SELECT status FROM compiles") == [("error",)]


def test_a_failed_kernel_build_is_recorded_and_the_graph_runs_eagerly(
    trace_path, tmp_path, monkeypatch, capsys
):
    """Kernels are built after the backend returns; a build that fails (here: no compiler)
    still becomes the compile's recorded failure, and the graph runs eagerly."""
    monkeypatch.setenv("LOUPE_CACHE_DIR", str(tmp_path / "cache"))  # nothing cached
    monkeypatch.setenv("LOUPE_CXX", "/nonexistent/c++")
    x = torch.randn(4, 32)
    model = Mlp().eval()
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
        torch.testing.assert_close(compiled(x), model(x))
    assert "running inference graph eagerly" in capsys.readouterr().err
    ((status, message),) = query(trace_path, "SELECT status, error_message FROM compiles")
    assert status == "eager_fallback"
    assert "cannot run the C++ compiler '/nonexistent/c++'" in message

    strict = torch.compile(Mlp(), backend="loupe", options={"trace": trace_path, "strict": True})
    with pytest.raises(Exception, match="/nonexistent/c"):
        strict(x)


def test_each_generated_kernel_records_a_cache_hit_or_its_build(trace_path, tmp_path, monkeypatch):
    """An empty kernel cache: the first compile builds every generated kernel, a second one of
    the same model (after Dynamo forgot the first) finds them all in the cache."""
    monkeypatch.setenv("LOUPE_CACHE_DIR", str(tmp_path / "cache"))
    x = torch.randn(4, 32)
    model = Mlp().eval()
    for _ in range(2):
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x))
    builds = query(
        trace_path,
        "SELECT compile_id, cache, build_ms FROM kernels WHERE kind = 'generated' ORDER BY id",
    )
    first, second = ([(c, ms) for i, c, ms in builds if i == compile_id] for compile_id in (1, 2))
    assert first and all(cache == "built" and ms > 0 for cache, ms in first), first
    assert len(second) == len(first) and all(cache == "hit" for cache, _ in second), second
    others = "SELECT count(*) FROM kernels WHERE kind != 'generated' AND cache IS NOT NULL"
    assert query(trace_path, others) == [(0,)]
    # Each says the instruction set it was compiled for (docs/cpu-codegen.md).
    isas = query(trace_path, "SELECT DISTINCT resources FROM kernels WHERE kind = 'generated'")
    assert len(isas) == 1 and isas[0][0] in ("x86-64-v4", "x86-64-v3", "portable"), isas


def test_disabled_passes_are_left_out_of_the_pipeline(trace_path):
    options = {"trace": trace_path, "disable_passes": ["cse", "algebraic-simplification"]}
    compiled = torch.compile(cumulative, backend="loupe", options=options)
    compiled(torch.randn(2, 3))
    names = [r[0] for r in query(trace_path, "SELECT name FROM passes ORDER BY ordinal")]
    expected = [p for p in _C.default_pipeline() if p not in options["disable_passes"]]
    assert names == expected


def test_backend_is_found_without_importing_loupe_and_env_names_the_trace(tmp_path):
    trace = tmp_path / "env.db"
    script = (
        "import torch\n"
        "f = torch.compile(lambda x: torch.relu(x) * 3.0, backend='loupe')\n"
        "x = torch.randn(6)\n"
        "assert torch.equal(f(x), torch.relu(x) * 3.0)\n"
    )
    env = dict(os.environ, LOUPE_TRACE=str(trace), LOUPE_STRICT="1")
    subprocess.run([sys.executable, "-c", script], check=True, env=env, cwd=tmp_path)
    assert show_json(str(trace))["compiles"] == 1
    assert not (tmp_path / "loupe_traces").exists()


def test_default_trace_is_one_file_per_process_under_loupe_traces(tmp_path):
    script = (
        "import torch\n"
        "f = torch.compile(lambda x: x.sin() + 1.0, backend='loupe')\n"
        "f(torch.randn(3)); f(torch.randn(3, 2))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    traces = list((tmp_path / "loupe_traces").glob("*.db"))
    assert len(traces) == 1
    assert done.stderr.count("loupe: recording into") == 1
    assert show_json(str(traces[0]))["compiles"] >= 2


def top_half(x):
    return torch.topk(x, x.shape[0] // 2, dim=0).values * 2


def test_fallback_op_takes_a_symbolic_int_evaluated_per_call(trace_path):
    """aten.topk has no kernel; under dynamic shapes its k is s0//2, which the fallback
    evaluates from each call's sizes: the graph compiles once and stays compiled."""
    assert "aten.topk" not in _C.registered_ops()
    compiled = torch.compile(top_half, backend="loupe", dynamic=True, options={"trace": trace_path})
    for rows in (4, 6, 9):
        x = torch.randn(rows, 3)
        torch.testing.assert_close(compiled(x), top_half(x))
    assert query(trace_path, "SELECT status FROM compiles") == [("ok",)]
    summaries = query(trace_path, "SELECT op_summary FROM kernels WHERE kind = 'fallback'")
    assert [s for (s,) in summaries if "aten.topk" in s]


def numbers_as_tensors(x):
    # Floor division by a number decomposes to div.Tensor_mode(x, 4), which has no .Scalar
    # overload; 2 ** x is pow.Scalar, whose tensor form Loupe runs.
    return torch.floor_divide(x, 4) + 2**x


def test_numbers_in_tensor_slots_compile_as_0d_tensors(trace_path):
    compiled = torch.compile(numbers_as_tensors, backend="loupe", options={"trace": trace_path})
    x = torch.randn(5, 3) * 10
    torch.testing.assert_close(compiled(x), numbers_as_tensors(x))
    assert query(trace_path, "SELECT status FROM compiles") == [("ok",)]
    assert show_json(trace_path)["fallback_nodes"] == 0
    ops = {op for (op,) in query(trace_path, "SELECT DISTINCT op FROM snapshot_nodes")}
    assert {"aten.scalar_tensor", "aten.div.Tensor_mode", "aten.pow.Tensor_Tensor"} <= ops


def test_dynamic_batch_compiles_once_with_symbolic_dims(trace_path):
    torch.manual_seed(0)
    model = Mlp()
    compiled = torch.compile(model, backend="loupe", dynamic=True, options={"trace": trace_path})
    for batch in (3, 5, 9):
        x = torch.randn(batch, 32)
        y, grads = forward_backward(compiled, x)
        y_ref, grads_ref = forward_backward(model, x)
        torch.testing.assert_close(y, y_ref)
        for grad, grad_ref in zip(grads, grads_ref):
            torch.testing.assert_close(grad, grad_ref, rtol=1e-4, atol=1e-5)

    compiles = query(trace_path, "SELECT graph_kind, status FROM compiles ORDER BY id")
    assert compiles == [("forward", "ok"), ("backward", "ok")]
    (lir,) = query(
        trace_path,
        "SELECT s.lir FROM snapshots s JOIN passes p ON p.snapshot_id = s.id "
        "JOIN compiles c ON c.id = p.compile_id WHERE c.graph_kind = 'forward' AND p.ordinal = 0",
    )[0]
    assert re.search(r"%primals_\d+: f32\[s\d+,32\]", lir), lir


def test_check_mode_stores_each_kernels_error(trace_path):
    compiled = torch.compile(Mlp(), backend="loupe", options={"trace": trace_path, "check": True})
    with torch.no_grad():
        compiled(torch.randn(4, 32))
    errors = query(
        trace_path, "SELECT kind, max_error FROM kernels WHERE kind IN ('generated', 'library')"
    )
    assert errors and all(e is not None and e < 1e-4 for _, e in errors)


def test_sizes_torch_writes_under_its_guards_compile(trace_path):
    """torch spells these sizes under divisibility guards (24*(s0//8), s0//(s0//2)) and some
    strides as Max(1, ...): the graphs, forward and backward, must compile, not run eagerly."""

    def fold(x, w):
        h = torch.tanh(x @ w).reshape(8, -1)
        pairs = x.reshape(-1, 2, x.shape[1]).mean(dim=1)
        return h.mean(dim=1), pairs

    compiled = torch.compile(fold, backend="loupe", dynamic=True, options={"trace": trace_path})
    w = torch.randn(12, 24, requires_grad=True)
    for batch in (8, 16):
        x = torch.randn(batch, 12, requires_grad=True)
        got, expected = compiled(x, w), fold(x, w)
        for g, e in zip(got, expected):
            torch.testing.assert_close(g, e)
        (got[0].sum() + got[1].sum()).backward()
    statuses = query(trace_path, "SELECT graph_kind, status, error_message FROM compiles")
    assert statuses and all(status == "ok" for _, status, _ in statuses), statuses


def test_options_and_environment_configure_the_backend(monkeypatch):
    from loupe.config import Config

    monkeypatch.setenv("LOUPE_DROPOUT_RNG", "torch")
    monkeypatch.setenv("LOUPE_CHECK", "1")
    config = Config.resolve({"strict": True})
    assert (config.dropout_rng, config.check, config.strict) == ("torch", True, True)
    assert Config.resolve({"dropout_rng": "loupe"}).dropout_rng == "loupe"  # options win
    with pytest.raises(ValueError, match="dropout_rng must be one of"):
        Config.resolve({"dropout_rng": "numpy"})
    with pytest.raises(ValueError, match="unknown loupe option"):
        Config.resolve({"tracee": "x.db"})


def test_cuda_graphs_default_to_launch_plannings_choice(monkeypatch):
    from loupe.config import Config

    monkeypatch.delenv("LOUPE_CUDA_GRAPHS", raising=False)
    assert Config.resolve(None).cuda_graphs == "auto"
    assert Config.resolve(None, mode="reduce-overhead").cuda_graphs is True
    assert Config.resolve({"cuda_graphs": False}, mode="reduce-overhead").cuda_graphs is False
    for value, expected in (("1", True), ("off", False), ("auto", "auto"), ("", "auto")):
        monkeypatch.setenv("LOUPE_CUDA_GRAPHS", value)
        assert Config.resolve(None).cuda_graphs == expected, value
    monkeypatch.setenv("LOUPE_CUDA_GRAPHS", "sometimes")
    with pytest.raises(ValueError, match="LOUPE_CUDA_GRAPHS must be 1, 0 or auto, not 'sometimes'"):
        Config.resolve(None)
    monkeypatch.delenv("LOUPE_CUDA_GRAPHS")
    with pytest.raises(ValueError, match="cuda_graphs must be True, False or 'auto'"):
        Config.resolve({"cuda_graphs": "yes"})


def test_a_capture_checks_the_addresses_it_reads_in_place_by_position(monkeypatch):
    """A CUDA-graph capture reads some inputs in place and copies others; each replay checks
    that the inputs read in place are where they were. Torch's one-call check (CUDA builds)
    reads the expected address of input i at position i of the list it is given: with an input
    copied in the middle, a call passing every tensor where it was moves nothing, and one
    passing a tensor read in place elsewhere moves exactly that one. Runs on the CPU with the
    helper's contract written out, and with the plain loop."""
    import loupe.compiled as compiled

    answers = []

    def torchs_check(tensors, addresses, positions):  # torch/csrc/cuda/Module.cpp's loop
        answers.append(all(tensors[i].data_ptr() == addresses[i] for i in positions))
        return answers[-1]

    args = tuple(torch.randn(4) for _ in range(4))
    at = tuple(None if i == 1 else a.data_ptr() for i, a in enumerate(args))
    static_inputs = [a.clone() if i == 1 else a for i, a in enumerate(args)]
    outputs = [torch.randn(4), torch.randn(3)]
    for check in (torchs_check, None):
        monkeypatch.setattr(compiled, "_data_ptrs_equal", check)
        capture = compiled._Capture(None, static_inputs, outputs, at)
        assert [i for i, _ in capture.copied] == [1]
        assert capture.moved(args) == []
        assert check is None or answers[-1], "the one-call check must pass where nothing moved"
        assert capture.moved((args[0], torch.randn(4), args[2], args[3])) == []  # copied: free
        assert capture.moved((args[0], args[1], args[2], args[3].clone())) == [3]
        # What it hands out holds the capture until the caller drops it, views included.
        assert capture.free()
        handed = [out.detach() for out in capture.outputs]
        view = handed[0][1:]
        del handed
        assert not capture.free()
        del view
        assert capture.free()
