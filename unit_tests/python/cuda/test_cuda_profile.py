"""Profiling on CUDA (docs/profile.md): every kernel of calls 2 to 6 is timed with CUDA events,
and the trace's kernel_stats get a positive time for generated and cuBLASLt kernels, the bytes
and FLOPs from the IR, and a plausible share of the H100's (or any known GPU's) peak. Skipped
without a CUDA device."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from conftest import query

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_profiled_kernels_on_cuda_have_times_and_a_share_of_the_peak(trace_path, dtype):
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda().to(dtype)
    options = {"trace": trace_path, "strict": True, "stats_interval": 0, "profile": True}
    compiled = torch.compile(model, backend="loupe", options=options)
    x = torch.randn(2048, 1024, device="cuda", dtype=dtype)
    with torch.no_grad():
        for _ in range(8):
            compiled(x)
    torch.cuda.synchronize()
    rows = query(
        trace_path,
        "SELECT kernel, implementation, profile_ms, profile_runs, bytes, flops, peak_fraction,"
        " bound FROM kernel_stats",
    )
    timed = [row for row in rows if row[1].split(":")[0] in ("generated", "library")]
    assert any(row[1].startswith("generated:") for row in timed), rows
    assert any(row[1].startswith("library:") for row in timed), rows
    for kernel, implementation, ms, runs, nbytes, flops, fraction, bound in timed:
        what = (kernel, implementation, ms, nbytes, flops, fraction)
        assert runs == 5, what
        assert ms > 0, what
        assert nbytes > 0, what
        assert fraction is not None and 0 < fraction < 1.5, what
        assert bound in ("memory", "compute"), what
    # The products are compute-bound: a 2048x1024x4096 matmul is 17 GFLOP over at most 29 MB.
    matmuls = [row for row in timed if row[1].startswith("library:")]
    assert any(row[5] == 2 * 2048 * 4096 * 1024 for row in matmuls), matmuls
    assert all(row[7] == "compute" for row in matmuls), matmuls
