"""What recording costs a compile, for bench/cpu.py and bench/gpu.py.

`install()` makes the Loupe backend keep every graph it compiles in `captured` (the backend
builds its LoupeGraph through loupe.compiled, which this replaces with a subclass).
`recording_cost` compiles those graphs again through the C++ pipeline, alternately with the
trace and without one (the backend has no option to turn recording off: 'no trace' compiles
through loupe._C directly), over a warm kernel cache, so the difference is recording alone.
"""

from __future__ import annotations

import statistics
import time

import loupe.compiled as loupe_compiled
from loupe import _C
from loupe.config import Config
from loupe.traces import open_trace

captured: list = []  # the LoupeGraph of every graph compiled since the last clear


class CapturedLoupeGraph(loupe_compiled.LoupeGraph):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        captured.append(self)


def install() -> None:
    loupe_compiled.LoupeGraph = CapturedLoupeGraph  # what compile_graph builds


def recording_cost(graphs: list, trace_path: str, repeats: int) -> tuple[float, float]:
    """C++ compile time in ms of `graphs` with the trace at `trace_path` and without one
    (warm kernel cache): the medians of `repeats` compiles of each, alternating."""
    trace, run_id = open_trace(Config(trace=trace_path))
    pipeline = _C.resolve_pipeline("default", [])

    def compile_all(record: bool) -> float:
        start = time.perf_counter()
        for graph in graphs:
            device = graph.lir.device
            arguments = {
                "fallback": loupe_compiled.fallback_for(graph.lir),
                "device": device,
                "allocator": loupe_compiled._device_allocator(device),
            }
            if record:
                info = _C.CompileInfo()
                info.graph_kind = "graph"
                arguments["trace"] = trace
                arguments["compile_id"] = trace.begin_compile(run_id, info)
            compiled = _C.CompiledGraph(graph.lir.text, pipeline, **arguments)
            compiled.wait_for_kernels()  # loaded from the warm cache, in the background
        return time.perf_counter() - start

    on, off = [], []
    for _ in range(repeats):
        on.append(compile_all(True))
        off.append(compile_all(False))
    return statistics.median(on) * 1e3, statistics.median(off) * 1e3
