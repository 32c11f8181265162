"""Eager, TorchInductor (CPU) and Loupe on the same models and inputs, in one process.

    nice -n 5 python bench/cpu.py [--models mlp,cnn] [--runs 50] [--threads 2] [--quick]

The models are today's small ones (mlp, cnn, attention, gpt2, bert: tens of microseconds to a
couple of milliseconds a step, where Python and dispatch show) and compute-bound ones whose
eager step takes a millisecond or more on a 2-core machine (`*_large`: an MLP block of width
512 at batch 64, the CNN on 32 images of 64x64, causal attention over 256 tokens of width 256,
a pointwise chain over 4M floats, a 2-layer GPT-2 and BERT of width 256 on 4 x 128 tokens).
Inductor's caches are off (TORCHINDUCTOR_FORCE_DISABLE_CACHES=1) so its first calls are cold.
For each model and mode (inference under no_grad; a training step: forward, a scalar loss and
backward into the parameters' grads) it prints:

- steady-state median latency over --runs calls after --warmup calls, per backend, measured in
  interleaved rounds (eager, inductor, loupe, eager, ...) so load bursts hit all three alike;
- first-call time, cold: the wall time of the first call, compile included, each backend in a
  fresh process of its own with empty caches (bench/cold_start.py), for Inductor, Loupe and
  Dynamo with aot_autograd alone (below). This is the first call the targets are checked on:
  within one process Inductor keeps what it compiled in memory, so a later row is not cold for
  it (--first-call in-process skips these processes);
- first-call time in this process (the wall time of the first call, compile included, after
  collecting the garbage of the rows before). Both compilers start with a cold on-disk cache,
  the same way:
  each has a fresh temporary cache folder for the whole process (TORCHINDUCTOR_CACHE_DIR,
  LOUPE_CACHE_DIR), so a kernel one row compiled may serve a later row, as it would for a user
  compiling several models in one process. With --cache-per-compile each Loupe compile gets a
  folder of its own instead (nothing reused). Loupe is then compiled a second time over the
  same cache (warm), and last the model goes through Dynamo and aot_autograd alone, with
  compilers that return the graph unchanged (dynamo+aot): the part of every first call that
  any backend built on them pays, Inductor's included, before compiling anything;
- the largest |output - eager| (and |grad - eager| when training), so a fast wrong answer
  cannot win;
- the fallback nodes of the Loupe trace (`loupe show --json`);
- where Loupe's steady-state time goes: its kernels' own time by implementation kind, and the
  rest of the call (guards, autograd wrappers, conversions in and out of the runtime);
- the cost of recording: every captured Loupe graph compiled again by the C++ pipeline (warm
  kernel cache) with the trace and without one, alternately, median of --record-repeats.

The CPU-speed targets are checked at the end, over the rows run. Progress goes to stderr,
results to stdout.
"""

from __future__ import annotations

import argparse
import copy
import functools
import gc
import json
import math
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

SCRATCH = Path(tempfile.mkdtemp(prefix="loupe-bench-"))
# Inductor reads its cache location when it is imported: set it before torch is. Its caches
# are off too, in memory as on disk, so every Inductor compile is cold, as Loupe's first is.
os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(SCRATCH / "inductor")
os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "unit_tests" / "python"))
import models as model_zoo  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_start import child_spec, fresh_first_call, report_seconds  # noqa: E402
from front_end import dynamo_and_aot_only  # noqa: E402
from recording import captured, recording_cost  # noqa: E402
from recording import install as capture_loupe_graphs  # noqa: E402

capture_loupe_graphs()


class PointwiseChain(torch.nn.Module):
    """Six pointwise ops on one tensor (exp, tanh and sigmoid among them): one fused kernel."""

    def forward(self, x):
        return torch.relu(x * torch.sigmoid(x) + torch.tanh(x) * 0.5)


def pointwise_chain(elements: int):
    torch.manual_seed(0)
    return PointwiseChain(), (torch.randn(elements),)


# The compute-bound cases: eager takes a millisecond or more a step on this kind of machine, so
# the kernels, not Python, take the time.
LARGE = {
    "mlp_large": functools.partial(model_zoo.mlp, batch=64, width=512, hidden=2048),
    "cnn_large": functools.partial(model_zoo.cnn, batch=32, image=64),
    "attention_large": functools.partial(model_zoo.attention, batch=4, width=256, seq=256),
    "pointwise_large": functools.partial(pointwise_chain, 4 * 2**20),
    "gpt2_large": functools.partial(
        model_zoo.gpt2, batch=4, width=256, heads=4, seq=128, vocab=1000
    ),
    "bert_large": functools.partial(
        model_zoo.bert, batch=4, width=256, heads=4, seq=128, vocab=1000, intermediate=1024
    ),
}
# Cases without parameters have no training step.
INFERENCE_ONLY = {"pointwise_large"}
SMALL = ("mlp", "cnn", "attention", "gpt2", "bert")
BUILDERS = {**{name: model_zoo.MODELS[name] for name in SMALL}, **LARGE}
BENCH_MODELS = tuple(BUILDERS)
MODES = ("infer", "train")

# The CPU-speed targets, on this kind of 2-core machine at torch's threads, in one run.
LATENCY_VS_INDUCTOR = 1.25  # on every row
AHEAD_OF_INDUCTOR_SHARE = 0.5  # rows at or ahead of Inductor
GEOMEAN_VS_EAGER = 0.8  # and no row slower than eager
COMPILE_VS_INDUCTOR = 0.25
RECORDING_OVERHEAD = 0.10


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- one model, one mode ---------------------------------------------------------------------


def step_fn(model: torch.nn.Module, inputs: tuple, mode: str) -> Callable[[], list]:
    """One call of the model: the output, and in training mode the parameters' grads too."""
    params = [p for p in model.parameters() if p.requires_grad]

    def infer():
        with torch.no_grad():
            return [model(*inputs)]

    def train():
        for p in params:
            p.grad = None
        out = model(*inputs)
        out.float().square().mean().backward()
        return [out.detach()] + [p.grad for p in params]

    return infer if mode == "infer" else train


def max_diff(results: list, reference: list) -> float:
    worst = 0.0
    for got, want in zip(results, reference, strict=True):
        if got is None or want is None:
            if got is not want:
                return math.inf
            continue
        worst = max(worst, (got.double() - want.double()).abs().max().item())
    return worst


def timed(fn: Callable[[], list]) -> tuple[float, list]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def first_call(fn: Callable[[], list]) -> tuple[float, list]:
    """Wall time of a first call. The garbage earlier rows left (compiled models, traces,
    caches) is collected first, outside the timing: otherwise a cyclic collection of it lands in
    whichever compile happens to trigger it, which made a warm Loupe compile slower than the
    cold one before it (bert/infer 1.36 s against 0.81 s). Not before every timed call: a
    collection evicts the caches, and steady-state calls would then measure cold caches."""
    gc.collect()
    return timed(fn)


def median_latencies(
    fns: list[Callable[[], list]],
    warmup: int,
    runs: int,
    time_call: Callable[[Callable[[], list]], float] = lambda fn: timed(fn)[0],
) -> list[float]:
    """Median time per call of each function (seconds by the wall clock unless `time_call`
    times a call otherwise), measured in interleaved rounds (one call of each per round), so a
    burst of load on a shared machine slows every backend alike instead of whichever happened
    to be measured during it."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for fn, mine in zip(fns, samples):
            mine.append(time_call(fn))
    return [statistics.median(mine) for mine in samples]


@dataclass
class Row:
    model: str
    mode: str
    eager_ms: float = 0.0
    inductor_ms: float = 0.0
    loupe_ms: float = 0.0
    inductor_first_s: float = 0.0
    loupe_cold_s: float = 0.0
    loupe_warm_s: float = 0.0
    floor_s: float = 0.0
    # The same first calls each in a fresh process (bench/cold_start.py); None: not measured.
    fresh_inductor_s: float | None = None
    fresh_loupe_s: float | None = None
    fresh_floor_s: float | None = None
    inductor_diff: float = 0.0
    loupe_diff: float = 0.0
    graphs: int = 0
    eager_graphs: int = 0
    fallback_nodes: int = 0
    kernel_ms_by_kind: dict[str, float] = field(default_factory=dict)
    top_kernels: list[tuple[str, str, float]] = field(default_factory=list)
    record_on_ms: float = 0.0
    record_off_ms: float = 0.0


def fresh_compile(model, backend, options: dict | None = None):
    torch._dynamo.reset()
    return torch.compile(model, backend=backend, options=options)


# The backends whose first calls are measured in fresh processes, by name.
COLD_BACKENDS = {
    "inductor": lambda: ("inductor", None),
    "loupe": lambda: ("loupe", {"trace": str(SCRATCH / "first-call.db")}),
    "dynamo+aot": lambda: (dynamo_and_aot_only(), None),
}


def first_call_in_this_process(spec: dict) -> None:
    """The child of bench/cold_start.py: one model, mode and backend, its first call timed."""
    torch.set_num_threads(spec["threads"])
    module, inputs = BUILDERS[spec["model"]]()
    module.train(spec["mode"] == "train")
    backend, options = COLD_BACKENDS[spec["backend"]]()
    step = step_fn(torch.compile(module, backend=backend, options=options), inputs, spec["mode"])
    report_seconds(first_call(step)[0])


def fresh_first_calls(row: Row, args) -> None:
    for backend, field_name in (
        ("inductor", "fresh_inductor_s"),
        ("loupe", "fresh_loupe_s"),
        ("dynamo+aot", "fresh_floor_s"),
    ):
        progress(f"{row.model}/{row.mode}: {backend}, first call in a fresh process")
        spec = {"model": row.model, "mode": row.mode, "backend": backend, "threads": args.threads}
        setattr(row, field_name, fresh_first_call(Path(__file__), spec))


def kernel_profile(graphs: list, before: list[dict], row: Row, calls: int) -> None:
    """Per timed call: kernel time by implementation kind and the slowest kernels. The runtime's
    stats are cumulative since the compile, so `before` (taken after warmup) is subtracted."""
    kernels = []
    for graph, baseline in zip(graphs, before, strict=True):
        for name, (implementation, _, total_ms, _) in graph.compiled.stats().items():
            kernels.append(
                (name, implementation, (total_ms - baseline.get(name, (0, 0, 0.0, 0))[2]) / calls)
            )
    for _, implementation, ms in kernels:
        kind = implementation.split(":")[0]
        row.kernel_ms_by_kind[kind] = row.kernel_ms_by_kind.get(kind, 0.0) + ms
    row.top_kernels = sorted(kernels, key=lambda k: -k[2])[:5]


def fallback_nodes(trace_path: str) -> int:
    command = ["loupe", "show", trace_path, "--json"]
    shown = subprocess.run(command, check=True, capture_output=True, text=True)
    return int(json.loads(shown.stdout)["fallback_nodes"])


def eager_graphs(trace_path: str) -> int:
    """Compiles that failed and so ran eagerly: their latency is eager's, not Loupe's."""
    with sqlite3.connect(trace_path) as db:
        return db.execute("SELECT count(*) FROM compiles WHERE status != 'ok'").fetchone()[0]


def bench(name: str, mode: str, args) -> Row:
    row = Row(name, mode)
    module, inputs = BUILDERS[name]()
    module.train(mode == "train")
    copies = {
        backend: copy.deepcopy(module)
        for backend in ("eager", "inductor", "loupe", "warm", "floor")
    }

    progress(f"{name}/{mode}: eager")
    eager = step_fn(copies["eager"], inputs, mode)
    reference = eager()

    progress(f"{name}/{mode}: inductor (first call compiles)")
    inductor = step_fn(fresh_compile(copies["inductor"], "inductor"), inputs, mode)
    row.inductor_first_s, result = first_call(inductor)
    row.inductor_diff = max_diff(result, reference)

    progress(f"{name}/{mode}: loupe, cold kernel cache")
    trace_path = str(SCRATCH / f"{name}-{mode}.db")
    os.environ["LOUPE_CACHE_DIR"] = str(
        SCRATCH / (f"loupe-cache-{name}-{mode}" if args.cache_per_compile else "loupe-cache")
    )
    captured.clear()
    loupe = step_fn(fresh_compile(copies["loupe"], "loupe", {"trace": trace_path}), inputs, mode)
    row.loupe_cold_s, result = first_call(loupe)
    row.loupe_diff = max_diff(result, reference)
    graphs = list(captured)
    row.graphs = len(graphs)
    progress(f"{name}/{mode}: latency, eager, inductor and loupe interleaved")
    for _ in range(args.warmup):
        for fn in (eager, inductor, loupe):
            fn()
    before = [graph.compiled.stats() for graph in graphs]  # after warmup: timed calls only
    row.eager_ms, row.inductor_ms, row.loupe_ms = (
        seconds * 1e3 for seconds in median_latencies([eager, inductor, loupe], 0, args.runs)
    )
    kernel_profile(graphs, before, row, args.runs)

    progress(f"{name}/{mode}: loupe, warm kernel cache")
    warm_trace = str(SCRATCH / f"{name}-{mode}-warm.db")
    warm = step_fn(fresh_compile(copies["warm"], "loupe", {"trace": warm_trace}), inputs, mode)
    row.loupe_warm_s, _ = first_call(warm)

    progress(f"{name}/{mode}: Dynamo and aot_autograd alone")
    floor = step_fn(fresh_compile(copies["floor"], dynamo_and_aot_only()), inputs, mode)
    row.floor_s, _ = first_call(floor)
    if args.first_call == "fresh-process":
        fresh_first_calls(row, args)

    progress(f"{name}/{mode}: recording cost over {row.graphs} graph(s)")
    row.record_on_ms, row.record_off_ms = recording_cost(graphs, warm_trace, args.record_repeats)
    row.fallback_nodes = fallback_nodes(trace_path)
    row.eager_graphs = eager_graphs(trace_path)
    torch._dynamo.reset()
    return row


# --- report ----------------------------------------------------------------------------------


def ratio(a: float, b: float) -> float:
    return a / b if b else math.inf


def recording_ms(row: Row) -> float:
    return row.record_on_ms - row.record_off_ms


def recording_share(row: Row, first_call_s: float) -> float:
    """What recording adds to a first call: its cost over the same call without it."""
    return ratio(recording_ms(row), first_call_s * 1e3 - recording_ms(row))


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = lambda cells: "| " + " | ".join(c.rjust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    rule = "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"
    return "\n".join([line(headers), rule] + [line(r) for r in rows])


def report(rows: list[Row], args) -> None:
    threads = torch.get_num_threads()
    print(
        f"\n## Latency (median of {args.runs} calls after {args.warmup} warmup,"
        f" {threads} threads)\n"
    )
    print(
        table(
            [
                "model",
                "mode",
                "eager ms",
                "inductor ms",
                "loupe ms",
                "loupe/inductor",
                "loupe/eager",
                "max diff inductor",
                "max diff loupe",
                "loupe graphs",
                "ran eagerly",
                "fallback nodes",
            ],
            [
                [
                    r.model,
                    r.mode,
                    f"{r.eager_ms:.3f}",
                    f"{r.inductor_ms:.3f}",
                    f"{r.loupe_ms:.3f}",
                    f"{ratio(r.loupe_ms, r.inductor_ms):.2f}",
                    f"{ratio(r.loupe_ms, r.eager_ms):.2f}",
                    f"{r.inductor_diff:.1e}",
                    f"{r.loupe_diff:.1e}",
                    str(r.graphs),
                    str(r.eager_graphs),
                    str(r.fallback_nodes),
                ]
                for r in rows
            ],
        )
    )
    geomean = math.exp(statistics.fmean(math.log(ratio(r.loupe_ms, r.eager_ms)) for r in rows))
    print(f"\ngeometric mean of loupe/eager latency: {geomean:.2f}")

    fresh = [r for r in rows if r.fresh_loupe_s is not None]
    if fresh:
        print(
            "\n## First call, compile included, each in a fresh process"
            " (empty caches: the targets' cold first call)\n"
        )
        print(
            table(
                [
                    "model",
                    "mode",
                    "inductor s",
                    "loupe s",
                    "dynamo+aot s",
                    "loupe/inductor",
                    "dynamo+aot/inductor",
                ],
                [
                    [
                        r.model,
                        r.mode,
                        f"{r.fresh_inductor_s:.2f}",
                        f"{r.fresh_loupe_s:.2f}",
                        f"{r.fresh_floor_s:.2f}",
                        f"{ratio(r.fresh_loupe_s, r.fresh_inductor_s):.3f}",
                        f"{ratio(r.fresh_floor_s, r.fresh_inductor_s):.3f}",
                    ]
                    for r in fresh
                ],
            )
        )
    caches = (
        "a fresh Loupe cache per compile"
        if args.cache_per_compile
        else "one fresh cache per backend for the process"
    )
    print(
        "\n## First call, compile included, in this process after the rows before"
        f" (on-disk caches: {caches}; loupe also warm)\n"
    )
    print(
        table(
            [
                "model",
                "mode",
                "inductor s",
                "loupe cold s",
                "loupe warm s",
                "dynamo+aot s",
                "loupe cold/inductor",
                "dynamo+aot/inductor",
            ],
            [
                [
                    r.model,
                    r.mode,
                    f"{r.inductor_first_s:.2f}",
                    f"{r.loupe_cold_s:.2f}",
                    f"{r.loupe_warm_s:.2f}",
                    f"{r.floor_s:.2f}",
                    f"{ratio(r.loupe_cold_s, r.inductor_first_s):.3f}",
                    f"{ratio(r.floor_s, r.inductor_first_s):.3f}",
                ]
                for r in rows
            ],
        )
    )
    print(
        "\n## Where a Loupe call goes (ms per call: kernel time by implementation;"
        " the rest outside kernels)\n"
    )
    kinds = sorted({k for r in rows for k in r.kernel_ms_by_kind})
    print(
        table(
            ["model", "mode", "loupe ms", *kinds, "outside kernels", "slowest kernel"],
            [
                [
                    r.model,
                    r.mode,
                    f"{r.loupe_ms:.3f}",
                    *(f"{r.kernel_ms_by_kind.get(k, 0.0):.3f}" for k in kinds),
                    f"{r.loupe_ms - sum(r.kernel_ms_by_kind.values()):.3f}",
                    (f"{r.top_kernels[0][1]} {r.top_kernels[0][2]:.3f}" if r.top_kernels else "-"),
                ]
                for r in rows
            ],
        )
    )
    compiled = [
        r for r in rows if r.graphs
    ] or rows  # rows that ran eagerly have nothing to measure
    repeats = args.record_repeats
    print(
        "\n## Cost of recording (captured graphs compiled again, warm kernel cache,"
        f" median of {repeats})\n"
    )
    print(
        table(
            [
                "model",
                "mode",
                "C++ compile, trace ms",
                "no trace ms",
                "recording ms",
                "of C++ compile",
                "of warm first call",
                "of cold first call",
            ],
            [
                [
                    r.model,
                    r.mode,
                    f"{r.record_on_ms:.1f}",
                    f"{r.record_off_ms:.1f}",
                    f"{recording_ms(r):.1f}",
                    f"{ratio(recording_ms(r), r.record_off_ms):+.1%}",
                    f"{recording_share(r, r.loupe_warm_s):+.1%}",
                    f"{recording_share(r, r.loupe_cold_s):+.1%}",
                ]
                for r in compiled
            ],
        )
    )
    print(
        "\nThe backend has no option to turn recording off:"
        " 'no trace' compiles through loupe._C directly."
    )

    def worst(candidates: list[Row], measure: Callable[[Row], float]) -> str:
        row = max(candidates, key=measure)
        return f"worst {row.model}/{row.mode} {measure(row):.3g}"

    latency = lambda r: ratio(r.loupe_ms, r.inductor_ms)  # noqa: E731
    against_eager = lambda r: ratio(r.loupe_ms, r.eager_ms)  # noqa: E731
    ahead = [f"{r.model}/{r.mode}" for r in rows if latency(r) <= 1.0]
    slower = [f"{r.model}/{r.mode} {against_eager(r):.2f}" for r in rows if against_eager(r) > 1.0]
    # The cold first call: in fresh processes where measured, else this process's.
    cold = fresh or rows
    loupe_first = (lambda r: r.fresh_loupe_s) if fresh else (lambda r: r.loupe_cold_s)  # noqa: E731
    inductor_first = (  # noqa: E731
        (lambda r: r.fresh_inductor_s) if fresh else (lambda r: r.inductor_first_s)
    )
    where = "each in a fresh process" if fresh else "in this process"
    compile_share = lambda r: ratio(loupe_first(r), inductor_first(r))  # noqa: E731
    record_share = lambda r: recording_share(r, r.loupe_warm_s)  # noqa: E731
    total_cold = sum(map(loupe_first, cold))
    total_inductor = sum(map(inductor_first, cold))
    recorded_ms = sum(recording_ms(r) for r in compiled)
    record_cpp = ratio(recorded_ms, sum(r.record_off_ms for r in compiled))
    goals = [
        (
            f"latency within {LATENCY_VS_INDUCTOR}x of Inductor on every model",
            max(map(latency, rows)) <= LATENCY_VS_INDUCTOR,
            f"loupe/inductor {worst(rows, latency)}",
        ),
        (
            f"at or ahead of Inductor on at least {AHEAD_OF_INDUCTOR_SHARE:.0%} of the rows",
            len(ahead) >= AHEAD_OF_INDUCTOR_SHARE * len(rows),
            f"{len(ahead)} of {len(rows)}: " + (", ".join(ahead) or "none"),
        ),
        (
            f"geometric mean latency at most {GEOMEAN_VS_EAGER}x eager's",
            geomean <= GEOMEAN_VS_EAGER,
            f"{geomean:.2f}x eager",
        ),
        (
            "no row slower than eager",
            not slower,
            ", ".join(slower) or f"loupe/eager {worst(rows, against_eager)}",
        ),
        (
            f"first-call compile at most {COMPILE_VS_INDUCTOR} of Inductor's",
            max(map(compile_share, cold)) <= COMPILE_VS_INDUCTOR,
            f"{where}, loupe/inductor {worst(cold, compile_share)};"
            f" all rows {total_cold:.1f} s vs {total_inductor:.1f} s",
        ),
        (
            f"recording at most {RECORDING_OVERHEAD:.0%} of the first call (compile included)",
            max(map(record_share, compiled)) <= RECORDING_OVERHEAD,
            f"share of the warm first call {worst(compiled, record_share)};"
            f" of the C++ compile alone, all rows {record_cpp:+.1%}",
        ),
    ]
    print("\n## Goals\n")
    for goal, met, figure in goals:
        print(f"- {goal}: {'MET' if met else 'NOT MET'} ({figure})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models",
        default=",".join(BENCH_MODELS),
        help="comma-separated, of " + ",".join(BENCH_MODELS),
    )
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: infer, train")
    parser.add_argument("--runs", type=int, default=50, help="timed calls per backend (default 50)")
    parser.add_argument(
        "--warmup", type=int, default=5, help="untimed calls before them (default 5)"
    )
    parser.add_argument(
        "--threads", type=int, default=os.cpu_count(), help="torch threads (default: all cores)"
    )
    parser.add_argument(
        "--record-repeats", type=int, default=5, help="compiles per measurement of recording"
    )
    parser.add_argument(
        "--quick", action="store_true", help="mlp and attention, inference, 10 runs"
    )
    parser.add_argument(
        "--cache-per-compile",
        action="store_true",
        help="a fresh Loupe kernel cache for every compile"
        " (default: one for the process, like Inductor's)",
    )
    parser.add_argument(
        "--first-call",
        choices=("fresh-process", "in-process"),
        default="fresh-process",
        help="also time each backend's first call in a fresh process of its own, the cold"
        " first call the targets are checked on (default); in-process: only in this one",
    )
    args = parser.parse_args()
    if args.quick:
        args.models, args.modes, args.runs, args.warmup, args.record_repeats = (
            "mlp,attention",
            "infer",
            10,
            2,
            1,
        )
    torch.set_num_threads(args.threads)

    names = args.models.split(",")
    modes = args.modes.split(",")
    unknown = (set(names) - set(BENCH_MODELS)) | (set(modes) - set(MODES))
    if unknown:
        parser.error(f"unknown model(s) or mode(s): {sorted(unknown)}")
    progress(f"torch {torch.__version__}, {args.threads} threads, scratch {SCRATCH}")
    start = time.perf_counter()
    rows = [
        bench(name, mode, args)
        for name in names
        for mode in modes
        if not (mode == "train" and name in INFERENCE_ONLY)
    ]
    report(rows, args)
    print(f"\ntorch {torch.__version__}; bench wall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    if (spec := child_spec(sys.argv)) is not None:
        first_call_in_this_process(spec)
    else:
        main()
