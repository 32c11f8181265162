"""Eager, TorchInductor and Loupe on a CUDA device, on the same models and inputs, in one process.

    python bench/gpu.py                          # every case, 50 timed calls after 10 warmup
    python bench/gpu.py --cases pointwise,gpt2_fp32 --runs 100 --json gpu.json
    python bench/gpu.py --quick                  # tiny sizes, 5 runs: a smoke run
    python bench/gpu.py --device cpu --quick     # the script itself on a machine without a GPU

Backends, each on a deep copy of the same initial model: eager, Inductor (`torch.compile(m)`),
Inductor with `mode="reduce-overhead"` (CUDA graphs), Loupe (`backend="loupe"`: CUDA graphs where
launch planning chooses them), Loupe with `options={"cuda_graphs": False}` (every graph launched
one by one) and with `options={"cuda_graphs": True}` (every graph replayed), and last Dynamo and
aot_autograd alone (`dynamo+aot`: Loupe's aot_autograd set-up with compilers that return the
graph as it is), whose first call is what any backend built on them pays before compiling
anything, Inductor's included. One backend failing never stops the run: its row says why.

Per case and backend (bench/README.md, "GPU benchmark", says how each is measured):

- the median latency of one call over --runs calls after --warmup calls, each call timed with
  CUDA events around it and synchronised (on the CPU, the wall clock);
- the first call, compile included, with Inductor's caches disabled and Triton's and Loupe's
  kernel caches in fresh folders (Loupe: a fresh folder per compile); for Inductor, Loupe and
  dynamo+aot also in a fresh process of their own (bench/cold_start.py), the cold first call
  the target is checked on (within one process Inductor keeps what it compiled in memory);
- for the memory-bound cases, the bandwidth achieved (the bytes of the inputs, parameters and
  outputs, once each) and its fraction of a device-to-device copy measured in the same run:
  a 1 GiB copy (the device's bandwidth), and a copy of the case's own bytes timed the same way
  (the same per-call window around a transfer of the same size), which the target is checked on;
- the speed-up over eager and the largest difference from eager (relative to eager's largest
  magnitude for bf16), so a fast wrong answer cannot win.

The CUDA-speed targets are checked at the end, over the cases run (MET or NOT MET each, with the
figure). A Markdown report goes to stdout (it pastes into bench/RESULTS.md), progress to stderr.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import math
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

SCRATCH = Path(tempfile.mkdtemp(prefix="loupe-gpu-bench-"))
# Calls whose device activity torch.profiler sums, per row and for the copy.
DEVICE_TIMED_CALLS = 10
# Cold first calls. Inductor reads these when torch is imported, so they are set before: its
# FX-graph, AOT-autograd and autotuning caches are off, and the on-disk caches it and Triton
# still use start empty.
os.environ["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(SCRATCH / "inductor")
os.environ["TRITON_CACHE_DIR"] = str(SCRATCH / "triton")
# NVRTC keeps what it compiled in the CUDA cache (~/.nv/ComputeCache by default) where a driver
# is present: a later process compiling the same kernels gets them back in a few milliseconds.
# A fresh one for the process, as for Triton.
os.environ["CUDA_CACHE_PATH"] = str(SCRATCH / "cuda")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # GPT-2 is built from a config: nothing to fetch

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

# Said once per compile when the caches are disabled, which is what this benchmark asks for.
warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- sizes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    pointwise_elements: int
    softmax_shape: tuple[int, int]
    mlp_width: int
    mlp_layers: int
    mlp_batch: int
    gpt2: dict  # GPT2Config's arguments
    gpt2_batch: int
    gpt2_sequence: int
    copy_bytes: int  # the device-to-device copy that bandwidth is measured against


FULL = Sizes(
    pointwise_elements=64 * 2**20,
    softmax_shape=(8192, 8192),
    mlp_width=1024,
    mlp_layers=4,
    mlp_batch=64,
    gpt2={"n_layer": 4, "n_embd": 768, "n_head": 12},
    gpt2_batch=4,
    gpt2_sequence=128,
    copy_bytes=2**30,
)
QUICK = Sizes(
    pointwise_elements=2**16,
    softmax_shape=(256, 256),
    mlp_width=64,
    mlp_layers=2,
    mlp_batch=8,
    gpt2={"n_layer": 2, "n_embd": 64, "n_head": 2, "vocab_size": 1000, "n_positions": 64},
    gpt2_batch=2,
    gpt2_sequence=16,
    copy_bytes=16 * 2**20,
)


# --- the models ------------------------------------------------------------------------------


class PointwiseChain(nn.Module):
    """Six pointwise ops on one tensor: one fused kernel reads it once and writes once."""

    def forward(self, x):
        return torch.relu(x * torch.sigmoid(x) + torch.tanh(x) * 0.5)


class Softmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class MlpLayer(nn.Module):
    """Linear-GELU-Linear with a residual, then LayerNorm (a post-norm transformer's MLP)."""

    def __init__(self, width: int):
        super().__init__()
        self.fc1 = nn.Linear(width, 4 * width)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        return self.norm(x + self.fc2(self.act(self.fc1(x))))


class MlpBlock(nn.Module):
    def __init__(self, width: int, layers: int):
        super().__init__()
        self.layers = nn.Sequential(*(MlpLayer(width) for _ in range(layers)))

    def forward(self, x):
        return self.layers(x)


class Logits(nn.Module):
    """A transformers model returning its logits alone, so every case maps tensors to a tensor."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids)[0]


def pointwise(sizes: Sizes) -> tuple[nn.Module, tuple]:
    return PointwiseChain(), (torch.randn(sizes.pointwise_elements),)


def softmax(sizes: Sizes) -> tuple[nn.Module, tuple]:
    return Softmax(), (torch.randn(*sizes.softmax_shape) * 4,)


def mlp(batch: int | None = None) -> Callable[[Sizes], tuple[nn.Module, tuple]]:
    def build(sizes: Sizes) -> tuple[nn.Module, tuple]:
        module = MlpBlock(sizes.mlp_width, sizes.mlp_layers)
        return module, (torch.randn(batch or sizes.mlp_batch, sizes.mlp_width),)

    return build


def gpt2(sizes: Sizes) -> tuple[nn.Module, tuple]:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(use_cache=False, **sizes.gpt2)
    ids = torch.randint(0, config.vocab_size, (sizes.gpt2_batch, sizes.gpt2_sequence))
    return Logits(GPT2LMHeadModel(config)), (ids,)


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Sizes], tuple[nn.Module, tuple]]  # the module and its inputs, on the CPU
    dtype: torch.dtype = torch.float32
    train: bool = False  # a training step: forward, loss.backward(); else under no_grad
    # Bandwidth is reported for these: the bytes they must move bound their time.
    memory_bound: bool = False


CASES = [
    Case("pointwise", pointwise, memory_bound=True),
    Case("softmax", softmax, memory_bound=True),
    Case("mlp_fp32", mlp()),
    Case("mlp_bf16", mlp(), dtype=torch.bfloat16),
    Case("mlp_b1", mlp(batch=1), memory_bound=True),  # latency; reading the weights bounds it
    Case("gpt2_fp32", gpt2),
    Case("gpt2_bf16", gpt2, dtype=torch.bfloat16),
    Case("mlp_train", mlp(), train=True),
]


def place(case: Case, sizes: Sizes, device: torch.device) -> tuple[nn.Module, tuple]:
    """The case's model and inputs on the device, in the case's dtype, from a fixed seed."""
    torch.manual_seed(0)
    module, inputs = to_device(*case.build(sizes), device, case.dtype)
    return module.train(case.train), inputs


def to_device(
    module: nn.Module, inputs: tuple, device: torch.device, dtype: torch.dtype
) -> tuple[nn.Module, tuple]:
    """The model and its floating-point inputs in `dtype` on `device`; other inputs (token ids)
    keep their dtype."""
    module = module.to(device=device, dtype=dtype)
    return module, tuple(
        x.to(device=device, dtype=dtype if x.is_floating_point() else x.dtype) for x in inputs
    )


# --- the backends ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Backend:
    name: str
    compile: Callable[[nn.Module, str], nn.Module]  # (model, Loupe trace path) -> callable
    marks_steps: bool = False  # Inductor's CUDA graphs: each call starts a new step
    loupe: bool = False  # the notes say how many of Loupe's graphs replayed as CUDA graphs


BACKENDS = [
    Backend("eager", lambda model, _trace: model),
    Backend("inductor", lambda model, _trace: torch.compile(model)),
    Backend(
        "inductor reduce-overhead",
        lambda model, _trace: torch.compile(model, mode="reduce-overhead"),
        marks_steps=True,
    ),
    Backend(
        "loupe",
        lambda model, trace: torch.compile(model, backend="loupe", options={"trace": trace}),
        loupe=True,
    ),
    Backend(
        "loupe uncaptured",
        lambda model, trace: torch.compile(
            model, backend="loupe", options={"trace": trace, "cuda_graphs": False}
        ),
        loupe=True,
    ),
    Backend(
        "loupe cuda_graphs",
        lambda model, trace: torch.compile(
            model, backend="loupe", options={"trace": trace, "cuda_graphs": True}
        ),
        loupe=True,
    ),
    Backend(
        "dynamo+aot", lambda model, _trace: torch.compile(model, backend=dynamo_and_aot_only())
    ),
]


def step_fn(model: nn.Module, inputs: tuple, case: Case, backend: Backend) -> Callable[[], list]:
    """One call: the output, and for a training step the parameters' gradients after it."""
    params = list(model.parameters())

    def call() -> list:
        if backend.marks_steps:
            torch.compiler.cudagraph_mark_step_begin()
        if not case.train:
            with torch.no_grad():
                return [model(*inputs)]
        for p in params:
            p.grad = None
        out = model(*inputs)
        out.float().square().mean().backward()
        return [out.detach()] + [p.grad for p in params]

    return call


# --- measuring -------------------------------------------------------------------------------


class Clock:
    """Times calls on the device: CUDA events around each call, then a synchronisation, so each
    call is measured alone on the GPU; on the CPU, the wall clock."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def time_ms(self, fn: Callable[[], object]) -> float:
        if not self.cuda:
            start = time.perf_counter()
            fn()
            return (time.perf_counter() - start) * 1e3
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def median_ms(self, fn: Callable[[], object], warmup: int, runs: int) -> float:
        for _ in range(warmup):
            fn()
        self.sync()
        return statistics.median(self.time_ms(fn) for _ in range(runs))

    def device_ms(self, fn: Callable[[], object], calls: int) -> float | None:
        """The device's own time per call: every kernel, copy and fill it ran (torch.profiler's
        CUDA activity, replayed CUDA graphs included), summed and divided by the calls. What the
        event-timed median adds to it is host time inside the timed window. None on the CPU."""
        if not self.cuda:
            return None
        return sum(ms for _, ms in device_kernels(fn, calls)) or None

    def first_call_s(self, fn: Callable[[], list]) -> tuple[float, list]:
        """Wall time of a first call, compile included, up to its results on the device."""
        self.sync()
        start = time.perf_counter()
        result = fn()
        self.sync()
        return time.perf_counter() - start, result


def device_kernels(fn: Callable[[], object], calls: int) -> list[tuple[str, float]]:
    """Each kernel, copy and fill that `calls` calls of fn ran on the CUDA device (torch.profiler's
    CUDA activity, replayed CUDA graphs included, after one call outside the profile): its name
    and its device time in ms per call, longest first."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    device = torch.autograd.DeviceType.CUDA
    events = [e for e in prof.key_averages() if e.device_type == device and e.device_time_total]
    events.sort(key=lambda e: e.device_time_total, reverse=True)
    return [(e.key, e.device_time_total / calls / 1e3) for e in events]


@dataclass
class Copy:
    """The device-to-device copy that bandwidth is measured against: GB/s (bytes read plus
    bytes written) by the event-timed median, and by the device's own time."""

    gbps: float
    device_gbps: float | None


def copier(device: torch.device, nbytes: int) -> Callable[[], object]:
    """A .copy_() of a tensor of `nbytes` into another (2 * nbytes read and written)."""
    source = torch.ones(max(1, nbytes // 4), dtype=torch.float32, device=device)
    target = torch.empty_like(source)
    return lambda: target.copy_(source)


def copy_bandwidth(device: torch.device, nbytes: int, clock: Clock, args) -> Copy:
    """A large tensor's .copy_() into another."""
    copy_once = copier(device, nbytes)
    ms = clock.median_ms(copy_once, args.warmup, args.runs)
    device_ms = clock.device_ms(copy_once, DEVICE_TIMED_CALLS)
    gbps = lambda ms: 2 * nbytes / (ms * 1e-3) / 1e9  # noqa: E731
    return Copy(gbps(ms), gbps(device_ms) if device_ms else None)


def tensor_bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def max_error(results: list, reference: list, relative: bool) -> float:
    """The largest |result - reference| over every output; relative: each output's divided by
    the reference's largest magnitude."""
    worst = 0.0
    for got, want in zip(results, reference, strict=True):
        if got is None or want is None:
            if got is not want:
                return math.inf
            continue
        error = (got.double() - want.double()).abs().max().item()
        if relative:
            error /= max(want.double().abs().max().item(), torch.finfo(torch.float64).tiny)
        worst = max(worst, error)
    return worst


def first_line(error: BaseException) -> str:
    """The innermost error's type and first line: Dynamo wraps a backend's error in one whose
    first line only says that the backend raised."""
    while True:
        inner = getattr(error, "inner_exception", None) or error.__cause__
        if inner is None:
            break
        error = inner
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


# Loupe wraps each compiled graph it replays as a CUDA graph (every one with cuda_graphs=True,
# those launch planning chose by default) in a CudaGraphedGraph, which runs the graph uncaptured
# when capturing fails and does not apply to CPU graphs: the wrappers of a row are kept, so that
# its notes say how many graphs really replayed.
cuda_graphed: list = []
sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_start import child_spec, fresh_first_call, report_seconds  # noqa: E402

try:
    import loupe.compiled as loupe_compiled
    from front_end import dynamo_and_aot_only
    from recording import captured, recording_cost
    from recording import install as capture_loupe_graphs

    capture_loupe_graphs()

    class RecordedCudaGraphedGraph(loupe_compiled.CudaGraphedGraph):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            cuda_graphed.append(self)

    loupe_compiled.CudaGraphedGraph = RecordedCudaGraphedGraph  # what compile_graph builds
except (ImportError, AttributeError):  # no Loupe, or one without cuda_graphs: rows say n/a
    captured = []


def cuda_graph_notes(trace_path: Path) -> str:
    """How many of the row's compiled graphs replayed as CUDA graphs."""
    with sqlite3.connect(trace_path) as db:
        graphs = db.execute("SELECT count(*) FROM compiles").fetchone()[0]
    replayed = sum(1 for g in cuda_graphed if g.captured and not g.uncaptured and not g.graph.eager)
    return f"{replayed} of {graphs} graph(s) replayed as CUDA graphs"


def loupe_notes(trace_path: Path) -> str:
    """What the Loupe trace says of the row: graphs, kernels by kind, and any graph that ran
    eagerly (its time is then eager's, not Loupe's)."""
    with sqlite3.connect(trace_path) as db:
        graphs = db.execute("SELECT count(*) FROM compiles").fetchone()[0]
        failed = db.execute(
            "SELECT count(*), min(error_message) FROM compiles WHERE status != 'ok'"
        ).fetchone()
        run_errors = db.execute("SELECT count(*), min(message) FROM run_errors").fetchone()
        kinds = dict(db.execute("SELECT kind, count(*) FROM kernels GROUP BY kind").fetchall())
    notes = [f"{graphs} graph(s)"]
    notes += [
        f"{kinds[kind]} {kind}" for kind in ("generated", "library", "fallback") if kind in kinds
    ]
    if failed[0]:
        notes.append(f"{failed[0]} graph(s) ran eagerly: {failed[1].splitlines()[0]}")
    if run_errors[0]:
        notes.append(f"{run_errors[0]} run(s) failed, then eager: {run_errors[1].splitlines()[0]}")
    return ", ".join(notes)


@dataclass
class Cell:
    case: str
    backend: str
    median_ms: float | None = None
    first_call_s: float | None = None
    fresh_first_call_s: float | None = None  # the first call in a fresh process of its own
    bytes_moved: int | None = None  # memory-bound cases: inputs, parameters, outputs
    bandwidth_gbps: float | None = None
    of_copy: float | None = None  # bandwidth_gbps / the device-to-device copy's
    # The median of a copy moving the case's bytes (read + written), timed as the calls are,
    # and this row's bandwidth against it.
    same_bytes_copy_ms: float | None = None
    of_same_bytes_copy: float | None = None
    # On a GPU: the device's own time per call (Clock.device_ms): the kernels alone, without the
    # host time that the event-timed median holds; for memory-bound cases also the bandwidth by
    # it against the copy's by its device time.
    device_ms: float | None = None
    device_of_copy: float | None = None
    # The default Loupe row: its graphs' C++ compile (warm kernel cache) with the trace and
    # without one (bench/recording.py), and how many graphs.
    record_on_ms: float | None = None
    record_off_ms: float | None = None
    graphs: int | None = None
    speedup: float | None = None  # eager's median / this one's
    max_error: float | None = None
    relative_error: bool = False
    failure: str | None = None  # the first line of the error that stopped this row
    notes: list[str] = field(default_factory=list)


def measure(
    case: Case,
    backend: Backend,
    model: nn.Module,
    inputs: tuple,
    reference: list | None,
    clock: Clock,
    args,
) -> tuple[Cell, list | None]:
    """One row: compile and first call, error against eager, steady-state latency. Returns the
    cell and the first call's results (the reference, for eager)."""
    cell = Cell(case.name, backend.name, relative_error=case.dtype != torch.float32)
    trace = SCRATCH / f"{case.name}-{backend.name.replace(' ', '-')}.db"
    # An empty kernel cache for each Loupe compile; read when the compile builds its kernels.
    os.environ["LOUPE_CACHE_DIR"] = str(trace.with_suffix(".cache"))
    torch._dynamo.utils.counters.clear()
    first = None
    if backend.name == "loupe":
        captured.clear()
    try:
        fn = step_fn(backend.compile(model, str(trace)), inputs, case, backend)
        gc.collect()  # earlier rows' garbage, collected outside the timing
        cell.first_call_s, result = clock.first_call_s(fn)
        # Copied now: Inductor's CUDA graphs overwrite their outputs on the next call.
        first = [r.detach().clone() if r is not None else None for r in result]
        del result
        if backend.name == "eager":
            reference = first  # its own row: how much a second call differs from the first
        cell.median_ms = clock.median_ms(fn, args.warmup, args.runs)
        cell.device_ms = clock.device_ms(fn, DEVICE_TIMED_CALLS)
        if backend.name == "loupe" and captured:
            cell.graphs = len(captured)
            cell.record_on_ms, cell.record_off_ms = recording_cost(
                list(captured), str(trace.with_suffix(".recording.db")), args.record_repeats
            )
            captured.clear()
        if reference is not None:
            steady = fn()  # a replayed call's results, not only the first
            cell.max_error = max(
                max_error(first, reference, cell.relative_error),
                max_error(steady, reference, cell.relative_error),
            )
            del steady
        else:
            cell.notes.append("no eager reference")
        if case.memory_bound:
            cell.bytes_moved = tensor_bytes(
                [*inputs, *model.parameters(), *model.buffers(), *first]
            )
    except Exception as error:  # every failure is reported in its row
        cell.failure = first_line(error)
        progress(f"{case.name}: {backend.name} failed: {cell.failure}")
    if backend.name.startswith("loupe") and trace.exists():
        cell.notes.insert(0, loupe_notes(trace))
        if backend.loupe:
            cell.notes.insert(1, cuda_graph_notes(trace))
    cuda_graphed.clear()
    skips = torch._dynamo.utils.counters["inductor"]["cudagraph_skips"]
    if skips:
        cell.notes.append(f"CUDA graphs skipped in {skips} graph(s) (reason on stderr)")
    return cell, first


# The rows whose first call is also measured in a fresh process: the target's pair and the floor.
COLD_BACKENDS = ("inductor", "loupe", "dynamo+aot")


def first_call_in_this_process(spec: dict) -> None:
    """The child of bench/cold_start.py: one case and backend, its first call timed."""
    device = torch.device(spec["device"])
    case = next(c for c in CASES if c.name == spec["case"])
    backend = next(b for b in BACKENDS if b.name == spec["backend"])
    model, inputs = place(case, QUICK if spec["quick"] else FULL, device)
    fn = step_fn(backend.compile(model, str(SCRATCH / "first-call.db")), inputs, case, backend)
    report_seconds(Clock(device).first_call_s(fn)[0])


def bench_case(case: Case, sizes: Sizes, device: torch.device, clock: Clock, args) -> list[Cell]:
    try:
        initial, inputs = place(case, sizes, device)
    except Exception as error:
        failure = first_line(error)
        progress(f"{case.name}: could not build the model: {failure}")
        return [Cell(case.name, b.name, failure=failure) for b in BACKENDS]
    cells = []
    reference = None
    for backend in BACKENDS:
        progress(f"{case.name}: {backend.name}")
        torch._dynamo.reset()
        cell, first = measure(case, backend, copy.deepcopy(initial), inputs, reference, clock, args)
        if backend.name == "eager":
            reference = first
        cells.append(cell)
        del first
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    torch._dynamo.reset()
    if args.first_call == "fresh-process":
        for cell in cells:
            if cell.backend in COLD_BACKENDS and cell.first_call_s is not None:
                progress(f"{case.name}: {cell.backend}, first call in a fresh process")
                spec = {
                    "case": case.name,
                    "backend": cell.backend,
                    "quick": args.quick,
                    "device": args.device,
                }
                try:
                    cell.fresh_first_call_s = fresh_first_call(Path(__file__), spec)
                except RuntimeError as error:
                    cell.notes.append(f"fresh-process first call failed: {first_line(error)}")
    moved = next((c.bytes_moved for c in cells if c.bytes_moved), None)
    if moved:
        # A copy that reads and writes the case's bytes in all, timed as the rows are.
        copy_ms = clock.median_ms(copier(device, moved // 2), args.warmup, args.runs)
        for cell in cells:
            cell.same_bytes_copy_ms = copy_ms
    return cells


def derive(cells: list[Cell], copy: Copy) -> None:
    """Speed-up over eager and bandwidth, from the measured figures."""
    eager = {c.case: c.median_ms for c in cells if c.backend == "eager"}
    for cell in cells:
        if cell.median_ms is None:
            continue
        if eager.get(cell.case):
            cell.speedup = eager[cell.case] / cell.median_ms
        if cell.bytes_moved:
            cell.bandwidth_gbps = cell.bytes_moved / (cell.median_ms * 1e-3) / 1e9
            cell.of_copy = cell.bandwidth_gbps / copy.gbps
            if cell.same_bytes_copy_ms:
                cell.of_same_bytes_copy = cell.same_bytes_copy_ms / cell.median_ms
            if cell.device_ms and copy.device_gbps:
                device_gbps = cell.bytes_moved / (cell.device_ms * 1e-3) / 1e9
                cell.device_of_copy = device_gbps / copy.device_gbps


# --- report ----------------------------------------------------------------------------------


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), rule] + [line(r) for r in rows])


def shown(value: float | None, form: str) -> str:
    return "-" if value is None else format(value, form)


def recording_share(cell: Cell) -> float | None:
    """What recording adds to the row's first call: its cost over the same call without it."""
    if cell.record_on_ms is None or cell.record_off_ms is None or not cell.first_call_s:
        return None
    recording = cell.record_on_ms - cell.record_off_ms
    return recording / (cell.first_call_s * 1e3 - recording)


def row(cell: Cell) -> list[str]:
    latency, notes = shown(cell.median_ms, ".3f"), [n for n in cell.notes if n]
    if cell.failure and cell.median_ms is None:
        latency = f"n/a: {cell.failure}"
    elif cell.failure:
        notes.insert(0, f"failed after timing: {cell.failure}")
    error = shown(cell.max_error, ".1e")
    if cell.relative_error and cell.max_error is not None:
        error += " rel"
    return [
        cell.case,
        cell.backend,
        latency,
        shown(cell.first_call_s, ".2f"),
        shown(cell.fresh_first_call_s, ".2f"),
        shown(cell.bandwidth_gbps, ".1f"),
        shown(cell.of_copy, ".0%"),
        shown(cell.of_same_bytes_copy, ".0%"),
        shown(cell.device_ms, ".3f"),
        shown(cell.device_of_copy, ".0%"),
        shown(cell.speedup, ".2f"),
        error,
        "; ".join(notes),
    ]


def environment(device: torch.device) -> dict:
    info = {"torch": torch.__version__, "python": platform.python_version()}
    if device.type == "cuda":
        properties = torch.cuda.get_device_properties(device)
        info["device"] = (
            f"{properties.name} ({properties.multi_processor_count} SMs,"
            f" {properties.total_memory / 2**30:.0f} GiB), CUDA {torch.version.cuda}"
        )
    else:
        info["device"] = f"CPU ({platform.processor() or platform.machine()},"
        info["device"] += f" {torch.get_num_threads()} threads)"
    for package in ("loupe", "transformers", "triton"):
        try:
            info[package] = __import__(package).__version__
        except Exception:  # a missing package is reported as such
            info[package] = "not installed"
    return info


def report(cells: list[Cell], info: dict, copy: Copy, sizes: Sizes, args) -> None:
    timer = "CUDA events around each call" if args.device == "cuda" else "wall clock"
    print("## GPU benchmark (bench/gpu.py)\n")
    print(f"- device: {info['device']}")
    print(
        f"- torch {info['torch']}, loupe {info['loupe']}, transformers {info['transformers']},"
        f" triton {info['triton']}, Python {info['python']}"
    )
    by_device = f", {copy.device_gbps:.0f} GB/s by device time" if copy.device_gbps else ""
    print(
        f"- device-to-device copy: {copy.gbps:.0f} GB/s{by_device}"
        f" ({sizes.copy_bytes / 2**20:.0f} MiB .copy_(), bytes read + written)"
    )
    print(
        f"- latency: median of {args.runs} calls after {args.warmup} warmup, {timer};"
        " first call: compile included, Inductor's caches disabled, empty kernel caches"
    )
    print(
        f"- device ms: the device's own time per call (torch.profiler over {DEVICE_TIMED_CALLS}"
        " calls: kernels, copies, fills); memory-bound cases: GB/s and of copy by the median,"
        " of copy (device) by the device time against the copy's; of same-bytes copy: the"
        " median of a copy moving the case's bytes over the row's median"
    )
    if args.first_call == "fresh-process":
        print(
            "- fresh process s: the first call in a process of its own (Inductor, Loupe,"
            " dynamo+aot), empty caches: the cold first call the target is checked on"
        )
    if args.quick:
        print("- --quick: tiny sizes, the figures check the script, not the compilers")
    print()
    headers = [
        "case",
        "backend",
        "median ms",
        "first call s",
        "fresh process s",
        "GB/s",
        "of copy",
        "of same-bytes copy",
        "device ms",
        "of copy (device)",
        "vs eager",
        "max err",
        "notes",
    ]
    print(table(headers, [row(c) for c in cells]))
    recorded = [c for c in cells if c.record_on_ms is not None and c.record_off_ms is not None]
    if recorded:
        print(
            f"\n### Cost of recording (the default Loupe row's graphs compiled again, warm kernel"
            f" cache, median of {args.record_repeats})\n"
        )
        rows = []
        for c in recorded:
            recording = c.record_on_ms - c.record_off_ms
            share = recording_share(c)
            rows.append(
                [
                    c.case,
                    str(c.graphs),
                    f"{c.record_on_ms:.1f}",
                    f"{c.record_off_ms:.1f}",
                    f"{recording:.1f}",
                    shown(share, "+.1%"),
                ]
            )
        headers = ["case", "graphs", "C++ compile, trace ms", "no trace ms", "recording ms"]
        print(table(headers + ["of the first call"], rows))


# The CUDA-speed targets on the H100 (bench/README.md).
LATENCY_CASES_WITHIN = 1.0  # Loupe at or below Inductor (captured: reduce-overhead) on every case
GEOMEAN_SPEEDUP = 1.1  # over Inductor, geometric mean
COPY_SHARE = 0.9  # the pointwise chain and the softmax, of the device-to-device copy
FIRST_CALL_SHARE = 0.25  # of Inductor's cold first call
RECORDING_SHARE = 0.10  # of the first call
BANDWIDTH_CASES = ("pointwise", "softmax")


def goals(cells: list[Cell]) -> list[tuple[str, bool, str]]:
    """Each target: what it asks, whether this run meets it, and the figure."""
    by = {(c.case, c.backend): c for c in cells}
    cases = list(dict.fromkeys(c.case for c in cells))

    def pairs(mine: str, theirs: str) -> list[tuple[str, float]]:
        out = []
        for case in cases:
            a, b = by.get((case, mine)), by.get((case, theirs))
            if a and b and a.median_ms and b.median_ms:
                out.append((case, a.median_ms / b.median_ms))
        return out

    def worst(ratios: list[tuple[str, float]]) -> str:
        case, ratio = max(ratios, key=lambda r: r[1])
        return f"worst {case} {ratio:.3f}"

    def geomean_speedup(ratios: list[tuple[str, float]]) -> float:
        return math.exp(-sum(math.log(r) for _, r in ratios) / len(ratios))

    out = []
    default, captured = (
        pairs("loupe", "inductor"),
        pairs("loupe cuda_graphs", "inductor reduce-overhead"),
    )
    if default:
        out.append(
            (
                "latency at or below Inductor on every case (Loupe's default row)",
                all(r <= LATENCY_CASES_WITHIN for _, r in default),
                worst(default),
            )
        )
        out.append(
            (
                f"geometric mean at least {GEOMEAN_SPEEDUP}x Inductor's (default row)",
                geomean_speedup(default) >= GEOMEAN_SPEEDUP,
                f"{geomean_speedup(default):.2f}x",
            )
        )
    if captured:
        out.append(
            (
                "every graph captured at or below reduce-overhead on every case",
                all(r <= LATENCY_CASES_WITHIN for _, r in captured),
                f"{worst(captured)}; geometric mean {geomean_speedup(captured):.2f}x",
            )
        )
    for case in BANDWIDTH_CASES:
        cell = by.get((case, "loupe"))
        if cell and cell.of_same_bytes_copy is not None:
            device, large = shown(cell.device_of_copy, ".0%"), shown(cell.of_copy, ".0%")
            out.append(
                (
                    f"{case} at {COPY_SHARE:.0%} of the copy's bandwidth or more (by the median,"
                    " against a copy of its bytes timed the same way)",
                    cell.of_same_bytes_copy >= COPY_SHARE,
                    f"{cell.of_same_bytes_copy:.0%}; {large} of the 1 GiB copy by the median,"
                    f" {device} by device time",
                )
            )
    # The cold first call: in fresh processes where every row of the pair has one.
    fresh = all(
        c.fresh_first_call_s is not None
        for c in cells
        if c.backend in ("loupe", "inductor") and c.first_call_s is not None
    ) and any(c.fresh_first_call_s is not None for c in cells)
    first = (lambda c: c.fresh_first_call_s) if fresh else (lambda c: c.first_call_s)  # noqa: E731
    firsts = []
    for case in cases:
        mine, theirs = by.get((case, "loupe")), by.get((case, "inductor"))
        floor = by.get((case, "dynamo+aot"))
        if mine and theirs and first(mine) and first(theirs):
            share = first(mine) / first(theirs)
            alone = first(floor) / first(theirs) if floor and first(floor) else None
            firsts.append((case, share, alone))
    if firsts:
        case, share, alone = max(firsts, key=lambda f: f[1])
        out.append(
            (
                f"first call at most {FIRST_CALL_SHARE} of Inductor's"
                + (" (each in a fresh process)" if fresh else " (in this process)"),
                share <= FIRST_CALL_SHARE,
                f"worst {case} {share:.2f}"
                + (f", where Dynamo and aot_autograd alone take {alone:.2f}" if alone else "")
                + "; "
                + ", ".join(f"{c} {s:.2f}" for c, s, _ in firsts),
            )
        )
    shares = [(c.case, share) for c in cells if (share := recording_share(c)) is not None]
    if shares:
        case, share = max(shares, key=lambda s: s[1])
        out.append(
            (
                f"recording at most {RECORDING_SHARE:.0%} of the first call",
                share <= RECORDING_SHARE,
                f"worst {case} {share:+.1%}",
            )
        )
    return out


def main() -> int:
    names = [c.name for c in CASES]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases", default=",".join(names), help="comma-separated, of " + ",".join(names)
    )
    parser.add_argument("--runs", type=int, help="timed calls per row (default 50; --quick 5)")
    parser.add_argument(
        "--warmup", type=int, help="untimed calls before them (default 10; --quick 2)"
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few runs: a smoke run")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--json", metavar="PATH", help="also write the raw numbers there")
    parser.add_argument(
        "--first-call",
        choices=("fresh-process", "in-process"),
        default="fresh-process",
        help="also time the first call of Inductor, Loupe and dynamo+aot in a fresh process"
        " each, the cold first call the target is checked on (default); in-process: only here",
    )
    parser.add_argument(
        "--record-repeats",
        type=int,
        default=3,
        help="compiles per measurement of what recording costs (default 3)",
    )
    args = parser.parse_args()
    if args.runs is None:
        args.runs = 5 if args.quick else 50
    if args.warmup is None:
        args.warmup = 2 if args.quick else 10
    chosen = args.cases.split(",")
    unknown = sorted(set(chosen) - set(names))
    if unknown:
        parser.error(f"unknown case(s) {unknown}; known: {','.join(names)}")
    if args.device == "cpu" and not args.quick:
        parser.error("--device cpu checks the script at tiny sizes: give --quick too")
    if args.device == "cuda" and not torch.cuda.is_available():
        print(
            f"bench/gpu.py: no CUDA device (torch {torch.__version__}); this benchmark needs a GPU."
            " `--device cpu --quick` runs it on the CPU at tiny sizes to check the script.",
            file=sys.stderr,
        )
        return 2
    device = torch.device(args.device)
    sizes = QUICK if args.quick else FULL
    clock = Clock(device)
    info = environment(device)
    progress(f"{info['device']}, torch {info['torch']}, scratch {SCRATCH}")
    copy = copy_bandwidth(device, sizes.copy_bytes, clock, args)
    progress(f"device-to-device copy: {copy.gbps:.0f} GB/s")
    start = time.perf_counter()
    cells = [
        c
        for case in CASES
        if case.name in chosen
        for c in bench_case(case, sizes, device, clock, args)
    ]
    derive(cells, copy)
    report(cells, info, copy, sizes, args)
    print("\n### Goals\n")
    for goal, met, figure in goals(cells):
        print(f"- {goal}: {'MET' if met else 'NOT MET'} ({figure})")
    print(f"\nbench wall time {time.perf_counter() - start:.0f} s")
    if args.json:
        document = {
            **info,
            "copy_gbps": copy.gbps,
            "copy_device_gbps": copy.device_gbps,
            "sizes": asdict(sizes),
            "runs": args.runs,
            "warmup": args.warmup,
            "quick": args.quick,
            "cells": [asdict(c) for c in cells],
        }
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")
        progress(f"raw numbers in {args.json}")
    return 0


if __name__ == "__main__":
    if (spec := child_spec(sys.argv)) is not None:
        first_call_in_this_process(spec)
    else:
        sys.exit(main())
