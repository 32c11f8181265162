"""Loupe's matrix products on torch's threads (docs/cpu-codegen.md, "Threads"): one OpenMP
runtime in the process whichever of torch and loupe loads first, and products split across any
number of torch threads give eager's results."""

import ast
import subprocess
import sys
import textwrap

import pytest
import torch

from conftest import query

# Runs an MLP through Loupe in a fresh process (so the import order is the one given), then
# prints every OpenMP runtime mapped into the process.
RUNTIMES = textwrap.dedent(
    """
    import {first}, {second}
    import torch
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64))
    compiled = torch.compile(model, backend="loupe", options={{"trace": {trace!r}}})
    x = torch.randn(32, 64)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    with open("/proc/self/maps") as maps:
        names = ("libgomp", "libomp", "libiomp")
        print(sorted({{line.split()[-1] for line in maps if any(n in line for n in names)}}))
    """
)


@pytest.mark.parametrize("first,second", [("torch", "loupe._C"), ("loupe._C", "torch")])
def test_one_openmp_runtime_whichever_loads_first(tmp_path, first, second):
    script = RUNTIMES.format(first=first, second=second, trace=str(tmp_path / "trace.db"))
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True
    )
    runtimes = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert len(runtimes) == 1, runtimes


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_products_match_eager_at_each_thread_count(trace_path, threads):
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(0)
        layers = [torch.nn.Linear(96, 200), torch.nn.ReLU(), torch.nn.Linear(200, 72)]
        model = torch.nn.Sequential(*layers)
        compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
        for batch in (64, 5):  # split along the weight's columns; too few rows to split
            x = torch.randn(batch, 96)
            with torch.no_grad():
                torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
            x.requires_grad_()  # the backward's products too
            compiled(x).sum().backward()
            grad = x.grad
            x.grad = None
            model(x).sum().backward()
            torch.testing.assert_close(grad, x.grad, rtol=1e-5, atol=1e-5)
    finally:
        torch.set_num_threads(previous)


@pytest.mark.parametrize("threads", [1, 2])
def test_the_trace_records_the_threads_each_kernel_ran_on(trace_path, threads):
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU())
        # stats_interval 0: the kernel stats are written after every call.
        options = {"trace": trace_path, "stats_interval": 0}
        compiled = torch.compile(model, backend="loupe", options=options)
        with torch.no_grad():
            compiled(torch.randn(16, 32))
    finally:
        torch.set_num_threads(previous)
    rows = query(
        trace_path, "SELECT implementation, launch FROM kernel_stats WHERE kernel NOT LIKE 'v%'"
    )
    ran = {implementation: launch for implementation, launch in rows}
    expected = "1 thread" if threads == 1 else f"{threads} threads"
    assert ran["library:aten.addmm"] == expected, rows  # the product onto its bias
    assert ran["generated:aten.gelu"] == expected, rows
