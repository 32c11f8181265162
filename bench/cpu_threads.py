"""Eager against Loupe on a multi-layer perceptron's forward (inference) on the CPU: the case
where how matrix products use the cores decides the time.

    python bench/cpu_threads.py [--layers 4] [--width 1024] [--batch 64] [--runs 30] [--threads N]

Both run at torch's intra-op thread count (torch.get_num_threads(), which follows
OMP_NUM_THREADS; --threads sets it). Calls alternate between the two (eager, loupe, eager, ...)
after --warmup calls each, so a load burst hits both alike; it prints each one's median and the
largest |loupe - eager| of the outputs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import torch


def mlp(layers: int, width: int) -> torch.nn.Module:
    blocks = [m for _ in range(layers) for m in (torch.nn.Linear(width, width), torch.nn.ReLU())]
    return torch.nn.Sequential(*blocks).eval()


def call_ms(fn, x) -> float:
    start = time.perf_counter()
    fn(x)
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--runs", type=int, default=30, help="timed calls each (default 30)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: as is)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = mlp(args.layers, args.width)
    x = torch.randn(args.batch, args.width)
    trace = os.path.join(tempfile.mkdtemp(prefix="loupe-bench-"), "trace.db")
    compiled = torch.compile(model, backend="loupe", options={"trace": trace})
    with torch.no_grad():
        diff = (compiled(x) - model(x)).abs().max().item()
        for _ in range(args.warmup):
            model(x)
            compiled(x)
        times: dict[str, list[float]] = {"eager": [], "loupe": []}
        for _ in range(args.runs):
            times["eager"].append(call_ms(model, x))
            times["loupe"].append(call_ms(compiled, x))
    eager, loupe = (statistics.median(times[k]) for k in ("eager", "loupe"))
    print(
        f"MLP {args.layers} layers, width {args.width}, batch {args.batch}, forward; "
        f"torch threads {torch.get_num_threads()}, {os.cpu_count()} cores; "
        f"median of {args.runs} calls"
    )
    print(f"eager {eager:.2f} ms  loupe {loupe:.2f} ms  loupe/eager {loupe / eager:.2f}")
    print(f"max |loupe - eager| {diff:.3g}")


if __name__ == "__main__":
    main()
