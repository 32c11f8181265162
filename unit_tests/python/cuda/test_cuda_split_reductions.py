"""Split reductions on CUDA: few, long rows run on many blocks (the `_split` entry,
docs/cuda-codegen.md "Variants"), and the result is still correct and deterministic.

Each result is compared with a float64 reference on the same inputs (float64_reference.py).
Device memory Loupe takes is filled with NaN bit patterns first (LOUPE_POISON_DEVICE_MEMORY),
the split workspace's included: its counters must be zeroed before the first launch. The sizes
are multiples of nothing, so the last split's chunk is a partial one. Skipped without a CUDA
device."""

from __future__ import annotations

import pytest
import torch
from float64_reference import assert_close_to_reference

from conftest import query

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

DTYPES = [torch.float32, torch.bfloat16]


@pytest.fixture(autouse=True)
def poisoned_device_memory(monkeypatch):
    monkeypatch.setenv("LOUPE_POISON_DEVICE_MEMORY", "1")


def compile_strict(fn, trace_path, dynamic=False):
    # stats_interval 0: kernel_stats (and its launch column) written after every call.
    options = {"trace": trace_path, "strict": True, "stats_interval": 0}
    return torch.compile(fn, backend="loupe", dynamic=dynamic, options=options)


def check(compiled, fn, inputs, what=""):
    got = compiled(*inputs)
    eager = fn(*inputs)
    reference = fn(*[x.double() for x in inputs])
    assert_close_to_reference(got, eager, reference, what)
    return got


def split_launches(trace_path) -> list[str]:
    """The launch descriptions of kernels whose last timed call took the split entry."""
    launches = [launch for (launch,) in query(trace_path, "SELECT launch FROM kernel_stats")]
    return [launch for launch in launches if launch and "_split " in launch]


def assert_split_ran(trace_path):
    launches = split_launches(trace_path)
    assert launches, query(trace_path, "SELECT launch FROM kernel_stats")
    assert all(": split" in launch for launch in launches), launches


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "fn",
    [lambda x: x.sum(), lambda x: x.mean(), lambda x: x.amax()],
    ids=["sum", "mean", "amax"],
)
def test_full_reduction_of_two_to_the_24(trace_path, fn, dtype):
    compiled = compile_strict(fn, trace_path)
    x = torch.randn((1 << 24) + 7, device="cuda", dtype=dtype)
    check(compiled, fn, (x,))
    assert_split_ran(trace_path)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("columns", [8, 100])  # one tile of 8; four of 32, the last partial
def test_column_sums_with_a_kept_innermost_dim(trace_path, dtype, columns):
    def fn(x):
        return x.sum(dim=0)

    compiled = compile_strict(fn, trace_path)
    x = torch.randn((1 << 20) + 3, columns, device="cuda", dtype=dtype)
    check(compiled, fn, (x,))
    assert_split_ran(trace_path)
    assert any("tiles" in launch for launch in split_launches(trace_path))


@pytest.mark.parametrize("dtype", DTYPES)
def test_row_norms_with_a_prologue_and_an_epilogue(trace_path, dtype):
    def fn(x):
        return (x * x).sum(-1).sqrt()

    compiled = compile_strict(fn, trace_path)
    x = torch.randn(4, (1 << 22) + 5, device="cuda", dtype=dtype)
    check(compiled, fn, (x,))
    assert_split_ran(trace_path)


def test_a_dynamic_size_is_one_kernel_for_both_sizes(trace_path):
    def fn(x):
        return x.sum(-1) * 2

    compiled = compile_strict(fn, trace_path, dynamic=True)
    for n in ((1 << 20) + 1, 3 * (1 << 19) + 11):
        x = torch.randn(3, n, device="cuda")
        check(compiled, fn, (x,), f"n={n}")
        assert_split_ran(trace_path)
    assert query(trace_path, "SELECT COUNT(*) FROM compiles WHERE status = 'ok'") == [(1,)]


def test_calls_in_a_row_reuse_the_reset_counters(trace_path):
    def fn(x):
        return x.sum(-1)

    compiled = compile_strict(fn, trace_path)
    x = torch.randn(2, (1 << 21) + 9, device="cuda")
    first = check(compiled, fn, (x,), "first call")
    second = check(compiled, fn, (x,), "second call")
    # The last split combines the partials in split order: the same bits every time.
    assert torch.equal(first, second)
    y = torch.randn_like(x)
    check(compiled, fn, (y,), "other input")
    assert_split_ran(trace_path)
