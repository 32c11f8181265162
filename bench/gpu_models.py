"""bench/cpu_more_models.py's models on a CUDA device, at sizes where the kernels take the time:
eager, Inductor and Loupe in one process on the same inputs, with the kernels behind each row.

    HF_HUB_OFFLINE=1 python3 bench/gpu_models.py [--models decoder,resnet] [--modes train]
        [--dtypes fp32,bf16] [--runs 30] [--kernels 8]

Where bench/gpu.py checks the CUDA-speed targets on the cases they name, this runs models of
other kinds (convolutions and norms, transformers' encoders, attention, an RNN stepped in
Python, a loss) to find where Loupe is weak on a model it was not tuned for. Per model, mode
(inference under no_grad; training: forward, a loss, backward) and dtype:

- the median latency of each backend, one call timed with CUDA events around it and
  synchronised, in interleaved rounds (one call of each backend per round) so that host noise
  falls on every backend alike; Loupe's against Inductor's and eager's;
- the largest difference of Loupe's output from eager's (inference only: dropout draws other
  masks in training), relative to eager's largest magnitude in bf16;
- the ops Loupe ran on a reference implementation or left to the fallback, from its trace;
- with --kernels K, the device's own time per call (torch.profiler's CUDA activity over a few
  calls), so host time and kernel time can be told apart, and each compiled backend's K longest
  kernels: what a slow row is made of, beside what Inductor ran for the same model.

A Markdown table goes to stdout, progress to stderr. One row failing never stops the run.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

# bench/gpu.py's clock and error measure. Imported before torch: it points Inductor's, Triton's
# and NVRTC's caches at fresh folders, which they read on import.
from gpu import SCRATCH, Clock, device_kernels, first_line, max_error, to_device  # isort: skip

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
# bench/cpu.py's step (the output, and in training the grads) and interleaved timing.
from cpu import median_latencies, step_fn  # noqa: E402
from cpu_more_models import INFERENCE_ONLY, MODELS, not_compiled  # noqa: E402

# How much larger than bench/cpu_more_models.py's inputs each model's batch is here: a GPU
# needs more work per call than 2 CPU cores before its kernels, not the launches, take the time.
# The classifier's targets are a buffer of its batch, so it keeps its own.
BATCH_SCALE = {"classifier": 1, "math_chain": 8}
DEFAULT_SCALE = 4
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
# With --kernels: a line per row and compiled backend, printed after the table.
KERNEL_LISTINGS: list[str] = []


def scaled(model_name: str, inputs: tuple) -> tuple:
    scale = BATCH_SCALE.get(model_name, DEFAULT_SCALE)
    return tuple(t.repeat(scale, *([1] * (t.dim() - 1))) if scale > 1 else t for t in inputs)


def top_kernels(fn, calls: int, count: int) -> tuple[float, list[tuple[str, float]]]:
    """The device's time per call, and its `count` longest kernels (ms per call)."""
    kernels = device_kernels(fn, calls)
    return sum(ms for _, ms in kernels), kernels[:count]


def shown(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:.3f}"


def short(name: str, width: int = 90) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def bench_row(name: str, mode: str, dtype_name: str, clock: Clock, args) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {name} {mode} {dtype_name}", file=sys.stderr, flush=True)
    train = mode == "train"
    torch.manual_seed(0)
    torch._dynamo.reset()
    model, inputs = MODELS[name]()
    model, inputs = to_device(model, scaled(name, inputs), args.device, DTYPES[dtype_name])
    model.train(train)
    trace = SCRATCH / f"{name}-{mode}-{dtype_name}.db"
    backends = {
        "eager": copy.deepcopy(model),
        "inductor": torch.compile(copy.deepcopy(model)),
        "loupe": torch.compile(
            copy.deepcopy(model), backend="loupe", options={"trace": str(trace)}
        ),
    }
    steps = {label: step_fn(m, inputs, mode) for label, m in backends.items()}
    results = {label: step() for label, step in steps.items()}
    ms = dict(zip(steps, median_latencies(list(steps.values()), 5, args.runs, clock.time_ms)))
    kernels = {label: (None, []) for label in steps}
    if args.kernels:  # see --kernels' help
        kernels = {label: top_kernels(step, 5, args.kernels) for label, step in steps.items()}
    diff = "-"
    if not train:
        diff = f"{max_error(results['loupe'], results['eager'], dtype_name != 'fp32'):.1e}"
    print(
        f"| {name} | {mode} | {dtype_name} | {ms['eager']:.3f} | {ms['inductor']:.3f} | "
        f"{ms['loupe']:.3f} | {ms['loupe'] / ms['inductor']:.2f} | "
        f"{ms['loupe'] / ms['eager']:.2f} | {shown(kernels['inductor'][0])} | "
        f"{shown(kernels['loupe'][0])} | {diff} | {not_compiled(trace)} |",
        flush=True,
    )
    for label in ("inductor", "loupe") if args.kernels else ():
        listing = "; ".join(f"{kernel_ms:.4f} `{short(k)}`" for k, kernel_ms in kernels[label][1])
        KERNEL_LISTINGS.append(f"- {name} {mode} {dtype_name}, {label} (ms per call): {listing}")
        print(KERNEL_LISTINGS[-1], file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--modes", default="infer,train")
    parser.add_argument("--dtypes", default="fp32")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--kernels",
        type=int,
        default=0,
        help="profile each row (device time, this many longest kernels per backend). On torch "
        "2.11 with CUDA 13, profiling a second compiled model's CUDA-graph replays in one "
        "process can crash inside CUPTI (bench/README.md): profile one row per run",
    )
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    args.device = torch.device(args.device)
    unknown = [m for m in args.models.split(",") if m not in MODELS]
    if unknown or not set(args.dtypes.split(",")) <= set(DTYPES):
        known = ", ".join(MODELS)
        parser.error(f"unknown model or dtype: {unknown or args.dtypes}; models: {known}")
    if args.device.type != "cuda" or not torch.cuda.is_available():
        parser.error("needs a CUDA device (bench/cpu_more_models.py runs these models on the CPU)")
    clock = Clock(args.device)
    print(
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}; median of {args.runs} calls, "
        "device ms per call by torch.profiler (with --kernels)"
    )
    header = (
        "| model | mode | dtype | eager ms | inductor ms | loupe ms | loupe/inductor | loupe/eager "
        "| inductor device ms | loupe device ms | max diff | not compiled |"
    )
    print(header)
    print("|" + "|".join("---" for _ in header.split("|")[1:-1]) + "|")
    failures = 0
    for name in args.models.split(","):
        for mode in args.modes.split(","):
            if mode == "train" and name in INFERENCE_ONLY:
                continue
            for dtype_name in args.dtypes.split(","):
                try:
                    bench_row(name, mode, dtype_name, clock, args)
                except Exception as error:  # noqa: BLE001 (a row's failure is reported, not fatal)
                    failures += 1
                    print(f"| {name} | {mode} | {dtype_name} | failed: {first_line(error)} |")
    if KERNEL_LISTINGS:
        print(f"\nThe {args.kernels} longest kernels of each compiled row:\n")
        print("\n".join(KERNEL_LISTINGS))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
