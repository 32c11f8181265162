"""What the trace says is what ran: per-kernel times (written while running, at exit, and
surviving a SIGKILL), the measured memory beside the plan, one-file traces, and compiled runs
that fail recorded and run eagerly."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch
import torch.nn as nn

from conftest import query, show_json


class Mlp(nn.Module):
    def __init__(self, width=32, hidden=64):
        super().__init__()
        self.fc1 = nn.Linear(width, hidden)
        self.fc2 = nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


def kernel_stats(path: str) -> list[tuple]:
    return query(path, "SELECT kernel, implementation, calls, total_ms FROM kernel_stats")


def test_every_kernel_has_its_calls_and_time_after_a_run(trace_path):
    model = Mlp()
    options = {"trace": trace_path, "stats_interval": 0}  # written at the end of every call
    compiled = torch.compile(model, backend="loupe", options=options)
    with torch.no_grad():
        for _ in range(3):
            compiled(torch.randn(8, 32))

    rows = kernel_stats(trace_path)
    kernels = query(trace_path, "SELECT name FROM kernels")
    assert {name for name, *_ in rows} == {name for (name,) in kernels}
    assert all(calls == 3 and total_ms >= 0 for _, _, calls, total_ms in rows)
    assert any(implementation.startswith("library:") for _, implementation, *_ in rows)


def run_script(tmp_path, body: str, **env) -> subprocess.Popen:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    environment = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    environment.update(env)
    return subprocess.Popen(
        [sys.executable, str(script)],
        env=environment,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# Compiles a small MLP and calls it forever, saying "running" once it has run for a while.
RUN_FOREVER = """
    import time
    import torch
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    compiled = torch.compile(model, backend="loupe")
    x = torch.randn(16, 64)
    start = time.monotonic()
    told = False
    with torch.no_grad():
        while True:
            compiled(x)
            if not told and time.monotonic() - start > 1.0:
                print("running", flush=True)
                told = True
"""


def test_kernel_stats_survive_a_sigkill_and_the_db_alone_holds_them(tmp_path):
    trace = tmp_path / "killed.db"
    child = run_script(tmp_path, RUN_FOREVER, LOUPE_TRACE=str(trace), LOUPE_STATS_INTERVAL="0.2")
    try:
        assert child.stdout.readline().strip() == "running", child.stderr.read()
        time.sleep(0.5)  # a few more periodic writes
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL

    rows = kernel_stats(str(trace))
    assert rows and all(calls > 0 for _, _, calls, _ in rows)
    # Every write of the stats is checkpointed: the .db copied without its -wal has them too.
    copy = tmp_path / "copy.db"
    shutil.copyfile(trace, copy)
    assert {kernel for kernel, *_ in kernel_stats(str(copy))} == {kernel for kernel, *_ in rows}
    assert show_json(str(copy))["compiles"] == 1


def test_a_normal_exit_leaves_the_whole_trace_in_the_db_file(tmp_path):
    trace = tmp_path / "exited.db"
    body = """
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU())
        compiled = torch.compile(model, backend="loupe")
        x = torch.randn(4, 16, requires_grad=True)
        for _ in range(5):
            compiled(x).sum().backward()
    """
    child = run_script(tmp_path, body, LOUPE_TRACE=str(trace))
    _, errors = child.communicate(timeout=600)
    assert child.returncode == 0, errors

    copy = tmp_path / "copy.db"
    shutil.copyfile(trace, copy)  # without any -wal: a user sharing the trace
    shown = show_json(str(copy))
    assert shown["compiles"] == 2  # forward and backward
    for compile in shown["detail"][0]["compiles"]:
        # The default interval is 5 s: these come from the exit handler.
        assert compile["kernel_stats"], compile["graph_kind"]
        assert all(k["calls"] == 5 for k in compile["kernel_stats"])
        assert compile["memory"]["layouts"], compile["graph_kind"]


def test_the_slowest_kernel_is_the_op_torch_profiler_finds_slowest(trace_path):
    # One large matmul (0.13 GFLOP) and pointwise ops on its small result (16K elements, few
    # enough for one thread: a parallel region could wait for a core that BLAS's threads hold on
    # a loaded machine): the matmul dominates by far, whatever else the machine runs.
    def model(x, w):
        return torch.relu(x @ w) * 2.0 + 1.0

    x, w = torch.randn(512, 4096), torch.randn(4096, 32)
    options = {"trace": trace_path, "stats_interval": 0}
    compiled = torch.compile(model, backend="loupe", options=options)
    for _ in range(5):
        compiled(x, w)
    ((implementation,),) = query(
        trace_path, "SELECT implementation FROM kernel_stats ORDER BY total_ms DESC LIMIT 1"
    )

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        for _ in range(5):
            model(x, w)
    slowest = max(profile.key_averages(), key=lambda event: event.self_cpu_time_total)
    assert slowest.key == "aten::mm"
    assert implementation == "library:aten.mm"


def test_the_measured_peak_is_the_planned_one_or_explained_by_kernel_scratch(trace_path):
    model = Mlp()
    options = {"trace": trace_path, "stats_interval": 0}
    compiled = torch.compile(model, backend="loupe", options=options)
    x = torch.randn(8, 32, requires_grad=True)
    compiled(x).sum().backward()

    layouts = query(
        trace_path, "SELECT compile_id, peak_bytes, measured_peak_bytes FROM memory_layouts"
    )
    assert len(layouts) == 2  # forward and backward, each run at one size
    for compile_id, planned, measured in layouts:
        ((scratch,),) = query(
            trace_path,
            "SELECT coalesce(max(scratch_bytes), 0) FROM kernel_stats WHERE compile_id = ?",
            compile_id,
        )
        assert measured <= planned * 1.25 or measured <= planned + scratch
        assert measured >= planned
        ((plan_peak, plan_measured),) = query(
            trace_path,
            "SELECT peak_bytes, measured_peak_bytes FROM memory_plans WHERE compile_id = ?",
            compile_id,
        )
        assert (plan_peak, plan_measured) == (planned, measured)


@torch.library.custom_op("loupe_test::grow", mutates_args=())
def grow(x: torch.Tensor) -> torch.Tensor:
    """One row more than its fake says: eager does not mind, a preallocated output does."""
    return torch.cat([x, x[:1]])


@grow.register_fake
def _(x):
    return torch.empty_like(x)


def grown_sum(x):
    return grow(torch.relu(x)).sum(0) * 2.0


def test_a_failed_compiled_run_is_recorded_and_that_graph_runs_eagerly(trace_path, capfd):
    compiled = torch.compile(grown_sum, backend="loupe", options={"trace": trace_path})
    x = torch.randn(4, 3)
    torch.testing.assert_close(compiled(x), grown_sum(x))
    assert "running inference graph eagerly" in capfd.readouterr().err

    ((node, message),) = query(trace_path, "SELECT node, message FROM run_errors")
    assert "loupe_test.grow" in node
    assert "not the f32[4,3] its shape function" in message, message
    # Not tried again compiled: a second call records nothing more.
    torch.testing.assert_close(compiled(x), grown_sum(x))
    assert query(trace_path, "SELECT count(*) FROM run_errors") == [(1,)]
    assert show_json(trace_path)["detail"][0]["compiles"][0]["run_errors"][0]["node"] == node


@torch.library.custom_op("loupe_test::double", mutates_args=())
def double(x: torch.Tensor) -> torch.Tensor:
    return x * 2.0


@double.register_fake
def _(x):
    return torch.empty_like(x)


def _double_backward(ctx, grad):
    # grow's extra row is summed away, so eager computes the right gradient; the compiled
    # backward, which preallocates grow's output from its fake, fails there.
    return grad * 2.0 + grow(grad).sum(0) * 0.0


double.register_autograd(_double_backward)


def test_a_failed_backward_run_runs_that_backward_eagerly(trace_path):
    def model(x):
        return double(x * 3.0).sum()

    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
    x = torch.randn(4, 3, requires_grad=True)
    compiled(x).backward()
    expected = x.detach().clone().requires_grad_(True)
    model(expected).backward()
    torch.testing.assert_close(x.grad, expected.grad)
    assert query(trace_path, "SELECT count(*) FROM run_errors") == [(1,)]


def test_strict_mode_raises_a_failed_run_after_recording_it(trace_path):
    options = {"trace": trace_path, "strict": True}
    compiled = torch.compile(grown_sum, backend="loupe", options=options)
    with pytest.raises(Exception, match="not the f32.4,3. its shape function"):
        compiled(torch.randn(4, 3))
    assert query(trace_path, "SELECT count(*) FROM run_errors") == [(1,)]


def test_median_of_a_0d_tensor_runs_compiled_forward_and_backward(trace_path):
    """median's backward on a 0-d input scatters into a 0-d tensor; it runs compiled, with no
    run error, and matches eager."""

    def model(x):
        return torch.median(x, 0)[0] + torch.nanmedian(x, 0, keepdim=True)[0].sum()

    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
    x = torch.randn((), requires_grad=True)
    compiled(x).backward()
    expected = x.detach().clone().requires_grad_(True)
    model(expected).backward()
    torch.testing.assert_close(x.grad, expected.grad)
    assert query(trace_path, "SELECT count(*) FROM run_errors") == [(0,)]
    statuses = query(trace_path, "SELECT status FROM compiles")
    assert statuses and all(status == "ok" for (status,) in statuses)


def test_a_mask_built_from_sizes_alone_runs_no_kernel_of_its_own(trace_path):
    """A model's mask built from aranges through expand and slice (as transformers builds its
    attention masks) is folded into constants at compile time: no cat, cumsum or index kernel
    runs per call, and the result is eager's."""

    def f(x):
        positions = torch.arange(x.shape[1]).unsqueeze(0).expand(x.shape[0], -1)
        shifted = torch.cat([positions[:, :1] - 1, positions], dim=-1)
        starts = (shifted[:, 1:] - shifted[:, :-1]) != 1
        rows = torch.arange(x.shape[0])[:, None]
        return x + starts.cumsum(-1)[rows, positions]

    x = torch.randn(4, 16)
    compiled = torch.compile(f, backend="loupe", dynamic=False, options={"trace": trace_path})
    torch.testing.assert_close(compiled(x), f(x))
    ops = [op for (op,) in query(trace_path, "SELECT op_summary FROM kernels")]
    assert not any(name in op for op in ops for name in ("cumsum", "aten.cat", "aten.index")), ops
