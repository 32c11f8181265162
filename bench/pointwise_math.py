"""Transcendental pointwise chains: eager against torch.compile(backend="loupe") on the CPU.

    nice -n 5 python bench/pointwise_math.py [--runs 30] [--threads 2] [--inductor]

Each case runs interleaved (eager, loupe[, inductor], eager, ...) so load bursts hit all alike,
and prints the median time per call, the first call's time (compile included, a fresh kernel
cache), and the largest error of each against a float64 evaluation of the same function.
docs/cpu-codegen.md ("Vector math") records its figures.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import statistics
import tempfile
import time

# Fresh caches unless the caller names them; Inductor reads its location when torch is imported.
SCRATCH = tempfile.mkdtemp(prefix="loupe-bench-math-")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)
os.environ.setdefault("LOUPE_CACHE_DIR", os.path.join(SCRATCH, "loupe"))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(SCRATCH, "inductor"))

import torch  # noqa: E402


def exp_tanh_sigmoid(x):
    return torch.sigmoid(torch.tanh(torch.exp(x)))


def gelu_silu(x):
    return torch.nn.functional.silu(torch.nn.functional.gelu(x))


def log_erf(x):
    return torch.erf(torch.log1p(x * x))


def softmax(x):
    return torch.softmax(x, dim=-1)


CASES = {
    "exp-tanh-sigmoid 4M": (exp_tanh_sigmoid, (4 << 20,)),
    "gelu-silu 4M": (gelu_silu, (4 << 20,)),
    "log1p-erf 4M": (log_erf, (4 << 20,)),
    "softmax 4096x4096": (softmax, (4096, 4096)),
}


def timed(fn, x) -> float:
    start = time.perf_counter()
    fn(x)
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--inductor", action="store_true", help="also time TorchInductor")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    backends = ["loupe"] + (["inductor"] if args.inductor else [])
    for name in args.cases.split(","):
        fn, shape = CASES[name]
        torch.manual_seed(0)
        x = torch.randn(*shape) * 3
        reference = fn(x.double())
        callables = {"eager": fn}
        first = {}
        for backend in backends:
            torch._dynamo.reset()
            compiled = torch.compile(fn, backend=backend)
            first[backend] = timed(compiled, x)
            callables[backend] = compiled
        errors = {k: (f(x).double() - reference).abs().max().item() for k, f in callables.items()}
        times = {k: [] for k in callables}
        for _ in range(args.runs):
            for k, f in callables.items():
                times[k].append(timed(f, x))
        row = ", ".join(
            f"{k} {statistics.median(t):.2f} ms (max err {errors[k]:.1e})" for k, t in times.items()
        )
        firsts = ", ".join(f"{k} first call {ms:.0f} ms" for k, ms in first.items())
        print(f"{name}: {row}; {firsts}")


if __name__ == "__main__":
    with torch.no_grad():
        main()
