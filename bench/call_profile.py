"""Where one steady-state Loupe call goes, layer by layer.

    nice -n 5 python bench/call_profile.py --models gpt2,cnn --modes train --threads 1

For each model and mode, after warmup, every timed call is split into nested layers (ms per
call, medians over the runs):

- call: the whole step (forward, and in training the loss and backward), as bench/cpu.py times it;
- adapter: inside `LoupeGraph.__call__`, summed over the step's Loupe graphs;
- run: inside `CompiledGraph.run` (inputs borrowed, the executable, outputs handed back);
- kernels: the runtime's own per-kernel time (its stats), summed.

So "call - adapter" is Dynamo, aot_autograd's wrappers and eager work around the graphs,
"adapter - run" the adapter's Python, "run - kernels" conversions and the executable's own
bookkeeping. The slowest kernels follow, per call.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

import loupe.compiled as loupe_compiled

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "unit_tests" / "python"))
import models as model_zoo  # noqa: E402
from cpu import step_fn  # noqa: E402  (bench/cpu.py: one call of a model, as benchmarked)

graphs: list = []


class TimedRun:
    """Stands in for a CompiledGraph and accumulates the time spent in its run."""

    def __init__(self, compiled):
        self.compiled = compiled
        self.seconds = 0.0

    def run(self, *args):
        start = time.perf_counter()
        try:
            return self.compiled.run(*args)
        finally:
            self.seconds += time.perf_counter() - start

    def __getattr__(self, name):
        # Everything else (stats, wait_for_kernels, output_inputs, flush_stats, ...) is the
        # CompiledGraph's own, so the adapter sees no difference.
        return getattr(self.compiled, name)


class ProfiledLoupeGraph(loupe_compiled.LoupeGraph):
    def __init__(self, gm, lir, compiled, *rest):
        super().__init__(gm, lir, TimedRun(compiled), *rest)
        self.seconds = 0.0
        graphs.append(self)

    def __call__(self, *args):
        start = time.perf_counter()
        try:
            return super().__call__(*args)
        finally:
            self.seconds += time.perf_counter() - start


loupe_compiled.LoupeGraph = ProfiledLoupeGraph  # what compile_graph builds


def kernel_ms(graph) -> dict[str, tuple[str, float]]:
    return {name: (s[0], s[2]) for name, s in graph.compiled.stats().items()}


def profile(name: str, mode: str, warmup: int, runs: int) -> None:
    module, inputs = model_zoo.MODELS[name]()
    module.train(mode == "train")
    eager = step_fn(module, inputs, mode)
    eager_samples = []
    for i in range(warmup + runs):
        start = time.perf_counter()
        eager()
        if i >= warmup:
            eager_samples.append(time.perf_counter() - start)

    torch._dynamo.reset()
    graphs.clear()
    step = step_fn(torch.compile(module, backend="loupe"), inputs, mode)
    for _ in range(warmup):
        step()
    samples = {"call": [], "adapter": [], "run": [], "kernels": []}
    per_kernel: dict[str, float] = {}
    for _ in range(runs):
        before = [(g.seconds, g.compiled.seconds, kernel_ms(g)) for g in graphs]
        start = time.perf_counter()
        step()
        samples["call"].append(time.perf_counter() - start)
        adapter = run = kernels = 0.0
        for graph, (adapter0, run0, kernels0) in zip(graphs, before):
            adapter += graph.seconds - adapter0
            run += graph.compiled.seconds - run0
            for kernel, (implementation, ms) in kernel_ms(graph).items():
                spent = ms - kernels0.get(kernel, ("", 0.0))[1]
                kernels += spent / 1e3
                key = f"{implementation} ({kernel})"
                per_kernel[key] = per_kernel.get(key, 0.0) + spent / runs
        samples["adapter"].append(adapter)
        samples["run"].append(run)
        samples["kernels"].append(kernels)
    median = {k: statistics.median(v) * 1e3 for k, v in samples.items()}
    print(
        f"{name}/{mode}: eager {statistics.median(eager_samples) * 1e3:.3f}"
        f" | call {median['call']:.3f}"
        f" adapter {median['adapter']:.3f} run {median['run']:.3f} kernels {median['kernels']:.3f}"
        f" | outside adapter {median['call'] - median['adapter']:.3f}"
        f" adapter python {median['adapter'] - median['run']:.3f}"
        f" run outside kernels {median['run'] - median['kernels']:.3f} ms ({len(graphs)} graphs)"
    )
    for key, ms in sorted(per_kernel.items(), key=lambda item: -item[1])[:8]:
        print(f"    {ms:7.3f} ms  {key}")
    torch._dynamo.reset()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,cnn,attention,gpt2,bert")
    parser.add_argument("--modes", default="infer,train")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for name in args.models.split(","):
        for mode in args.modes.split(","):
            profile(name, mode, args.warmup, args.runs)


if __name__ == "__main__":
    main()
