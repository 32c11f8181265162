"""Reductions over the innermost dim and over outer dims, at sizes of real layers, beside eager
and Inductor in one process at torch's threads.

    python3 bench/cpu_reductions.py [--runs 30]

Each case is one generated reduction kernel in Loupe (a row sum, a column sum: a bias
gradient, the statistics of a channels-last or [tokens, features] batch norm) with a pointwise
prologue, timed in interleaved rounds as in bench/cpu.py; it prints the median time per call of
each backend, Loupe's ratio to each, and Loupe's largest difference from a float64 evaluation.
docs/cpu-codegen.md ("Contiguous fast path") records its figures.
"""

from __future__ import annotations

import argparse

# bench/cpu.py's scratch folder and interleaved timing. Imported before torch: it sets
# Inductor's cache location and turns its caches off, which Inductor reads on import.
from cpu import SCRATCH, median_latencies  # isort: skip

import torch  # noqa: E402


def row_sum(x):
    return (x * x).sum(-1)


def column_sum(x):
    return (x * 2).sum(0)


def token_mean(x):
    return (x * x).mean((0, 1))


def channels_last_stats(x):
    return (x * x).sum((0, 2, 3), keepdim=True)


CASES = {
    "row sum [8192, 1024] dim -1": (row_sum, (8192, 1024)),
    "column sum [2048, 1024] dim 0": (column_sum, (2048, 1024)),
    "column sum [8192, 768] dim 0": (column_sum, (8192, 768)),
    "column sum [64, 256] dim 0": (column_sum, (64, 256)),
    "mean [16, 512, 768] dims 0,1": (token_mean, (16, 512, 768)),
    "channels-last sum [32, 64, 56, 56] dims 0,2,3": (channels_last_stats, (32, 64, 56, 56)),
}


def measure(name: str, fn, shape: tuple, runs: int) -> None:
    x = torch.randn(shape)
    if fn is channels_last_stats:
        x = x.contiguous(memory_format=torch.channels_last)
    torch._dynamo.reset()
    inductor = torch.compile(fn)
    trace = str(SCRATCH / f"reduction-{fn.__name__}-{'x'.join(map(str, shape))}.db")
    loupe = torch.compile(fn, backend="loupe", options={"trace": trace})
    fns = [lambda: fn(x), lambda: inductor(x), lambda: loupe(x)]
    eager_s, inductor_s, loupe_s = median_latencies(fns, warmup=3, runs=runs)
    want = fn(x.double())
    err = ((loupe(x).double() - want).abs() / (1 + want.abs())).max().item()
    print(
        f"{name:48} {eager_s * 1e3:9.3f} {inductor_s * 1e3:9.3f} {loupe_s * 1e3:9.3f} "
        f"{loupe_s / inductor_s:6.2f} {loupe_s / eager_s:7.2f} {err:9.1e}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(
        f"{'case':48} {'eager ms':>9} {'inductor':>9} {'loupe':>9} {'/ind':>6} {'/eager':>7} "
        f"{'err':>9}"
    )
    for name, (fn, shape) in CASES.items():
        measure(name, fn, shape, args.runs)


if __name__ == "__main__":
    main()
