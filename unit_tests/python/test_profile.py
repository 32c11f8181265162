"""Profiling (docs/profile.md): with options={"profile": True} (or LOUPE_PROFILE=1) calls 2 to 6
of a compiled graph time every kernel, and the trace's kernel_stats get each one's median time,
bytes and FLOPs from the IR; on the CPU no peak is known, so no share of it. Off, every profile
column stays null."""

import pytest
import torch
import torch.nn as nn

from conftest import query, show_json
from loupe.config import Config

PROFILE_COLUMNS = (
    "kernel, implementation, profile_ms, profile_runs, bytes, flops, peak_fraction, bound"
)


def profile_rows(path: str) -> list[tuple]:
    return query(path, f"SELECT {PROFILE_COLUMNS} FROM kernel_stats")


def run_mlp(trace_path, calls: int, **options):
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16))
    options = {"trace": trace_path, "stats_interval": 0, **options}
    compiled = torch.compile(model, backend="loupe", options=options)
    with torch.no_grad():
        for _ in range(calls):
            compiled(torch.randn(8, 32))


def test_a_profiled_graph_has_every_kernels_time_bytes_and_flops(trace_path):
    run_mlp(trace_path, calls=8, profile=True)
    rows = profile_rows(trace_path)
    assert rows
    for kernel, implementation, ms, runs, nbytes, flops, fraction, bound in rows:
        assert runs == 5, (kernel, implementation)  # calls 2 to 6
        assert ms is not None and ms >= 0, (kernel, implementation)
        assert nbytes is not None and flops is not None, (kernel, implementation)
        assert fraction is None and bound is None  # no known peak on the CPU
    # The first linear layer: an [8,32] x [32,64] product, 2*M*N*K FLOPs whatever its kernel.
    matmul_flops = {
        flops for _, implementation, _, _, _, flops, _, _ in rows if "mm" in implementation
    }
    assert 2 * 8 * 64 * 32 in matmul_flops, rows
    assert any(
        ms > 0 for _, implementation, ms, *_ in rows if implementation.startswith("library:")
    )

    # loupe show --json carries the columns and the split of a call's time.
    compile = next(
        c for r in show_json(trace_path)["detail"] for c in r["compiles"] if c["kernel_stats"]
    )
    assert all(k["profile_runs"] == 5 for k in compile["kernel_stats"])
    shares = compile["profile"]["share_by_implementation"]
    assert shares and abs(sum(shares.values()) - 1) < 1e-6


def test_profiling_counts_only_the_calls_made(trace_path):
    run_mlp(trace_path, calls=3, profile=True)  # the first call is never profiled
    assert {runs for _, _, _, runs, *_ in profile_rows(trace_path)} == {2}


def test_without_profile_every_profile_column_is_null(trace_path):
    run_mlp(trace_path, calls=8)
    rows = profile_rows(trace_path)
    assert rows
    assert all(row[2:] == (None,) * 6 for row in rows), rows


@pytest.mark.parametrize(
    ("env", "options", "expected"),
    [
        ("1", {}, True),
        ("", {}, False),
        ("1", {"profile": False}, False),
        ("", {"profile": True}, True),
    ],
)
def test_the_profile_option_falls_back_to_loupe_profile(monkeypatch, env, options, expected):
    monkeypatch.setenv("LOUPE_PROFILE", env)
    assert Config.resolve(options).profile is expected
