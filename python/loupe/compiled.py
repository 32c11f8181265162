"""Compiled graphs: compiling one aten graph (convert to .lir, run the C++ pipeline into the
trace, build the executable) and the callables aot_autograd gets back: `LoupeGraph`, which runs
the C++ executable on each call's tensors, `BisectingGraph` for bisect mode, or the graph's own
eager forward when compiling failed. Also this process's graph numbering, the one graph an
injected fault goes to, and what the process leaves in its traces at exit."""

from __future__ import annotations

import atexit
import functools
import itertools
import os
import sys
import time
import weakref
from typing import Any, Callable

import torch
from functorch.compile import make_boxed_func

from . import _C
from .config import Config, parse_fault
from .fx_to_lir import LirGraph, fx_to_lir, run_fallback, symbolic_outputs
from .traces import begin_compile, checkpoint_all, describe

_graph_ids = itertools.count()
# The compiled graphs alive: at exit their kernel stats go to the trace (a graph Dynamo still
# holds is never destroyed, and destruction is when the executable writes them last).
_live_graphs: weakref.WeakSet = weakref.WeakSet()
_live_cuda_graphs: weakref.WeakSet = weakref.WeakSet()  # the CudaGraphedGraphs alive
_fault_used = False
# Bisect mode's results, one dict per bisected graph (what _C.bisect returns, plus "graph").
bisections: list[dict] = []


def fault_for(config: Config, graph_kind: str) -> int:
    """The decision to inject a fault after in this graph, or -1: the fault goes to one graph,
    the first one compiled (of the kind named, when one is)."""
    global _fault_used
    if config.inject_fault is None or _fault_used:
        return -1
    kind, decision = parse_fault(str(config.inject_fault))
    if kind is not None and kind != graph_kind:
        return -1
    _fault_used = True
    return decision


def fallback_for(lir: LirGraph) -> Callable:
    """The runtime's callback for the graph's opaque nodes. It closes over the conversion's
    side table only, never over the compiled graph that holds it."""

    def fallback(name: str, op: str, inputs: list, request: Any) -> list:
        call = lir.fallbacks.get(name)
        if call is None:
            raise RuntimeError(f"loupe: no fallback recorded for node %{name} ({op})")
        return run_fallback(call, inputs, request)

    return fallback


# torch.Tensor.__dlpack__ without its Python checks, which cost more than a small kernel per
# input; the one that matters, requires_grad, guards writes, and the runtime only reads inputs.
_to_dlpack = torch._C._to_dlpack


def _flush_at_exit() -> None:
    """The kernel stats of every live graph and the CUDA-graph totals of every replaying one,
    then one checkpoint per trace."""
    for graph in list(_live_graphs):
        graph.compiled.flush_stats()
    for replaying in list(_live_cuda_graphs):
        replaying.write_stats()
    checkpoint_all()


atexit.register(_flush_at_exit)


def say_running_eagerly(graph_kind: str, error: Exception) -> None:
    """The one line on stderr for a graph Loupe could not compile or run: eager runs it."""
    print(f"loupe: running {graph_kind} graph eagerly: {describe(error)}", file=sys.stderr)


class LoupeGraph:
    """A compiled aten graph: runs the C++ executable on the call's tensors.

    Its generated kernels are built in the background while Dynamo finishes the compile; the
    first call waits for them. Should the build fail (recorded in the trace as the compile's
    failure), the graph runs eagerly from then on, or strict mode raises. So does a call whose
    compiled run fails (the binding records the error, node and message, in the trace): that
    call runs eagerly, and so does every later one."""

    def __init__(
        self, gm: torch.fx.GraphModule, lir: LirGraph, compiled: Any, graph_kind: str, strict: bool
    ):
        self.gm = gm
        self.lir = lir
        self.compiled = compiled
        self.graph_kind, self.strict = graph_kind, strict
        self.kernels_checked = False
        self.eager = False
        # Worked out once so that a call does only the per-call work.
        self.sources = [(kind == "arg", source) for kind, source in lir.inputs]
        # A CUDA graph: the device its kernels run on (CPU scalars are moved there), else None.
        self.device = torch.device(lir.device) if lir.device != "cpu" else None
        # Its current stream as the integer a call passes (what torch.cuda.current_stream(d)
        # .cuda_stream gives, without making a Stream object: microseconds a call).
        self.current_stream = (
            functools.partial(torch._C._cuda_getCurrentRawStream, self.device.index or 0)
            if self.device is not None
            else None
        )
        returned = [out for out in lir.outputs if out is None or isinstance(out, int)]
        self.outputs_are_results = lir.outputs == list(range(len(returned)))
        # Graph inputs returned as they are (a forward's saved parameters and activations): the
        # call hands back the caller's own tensor, as eager and Inductor do, not a copy.
        self.returned_inputs = [
            (output, position)
            for output, position in enumerate(compiled.output_inputs)
            if position >= 0
        ]
        _live_graphs.add(self)

    def __call__(self, *args) -> list:
        if not self.kernels_checked:
            self.kernels_checked = True
            self.wait_for_kernels()
        if self.eager:
            return list(self.gm.forward(*args))
        values = [args[source] if arg else getattr(self.gm, source) for arg, source in self.sources]
        stream = self.current_stream() if self.current_stream is not None else 0
        on_cpu = self.device is None
        try:
            results = self.compiled.run(
                [
                    _to_dlpack(
                        value
                        if isinstance(value, torch.Tensor) and (on_cpu or value.is_cuda)
                        else self.runtime_input(value)
                    )
                    for value in values
                ],
                torch.get_num_threads(),  # BLAS follows torch.set_num_threads
                True,  # returned inputs come back as None: they are filled in from `values`
                stream,
            )
        except Exception as error:
            # Recorded by the binding. The graph is functional: its inputs are as they were, so
            # eager runs this call from the start.
            if self.strict:
                raise
            self.run_eagerly_from_now(error)
            return list(self.gm.forward(*args))
        for output, position in self.returned_inputs:
            results[output] = values[position]
        if self.outputs_are_results:
            return results
        bindings = None
        outputs = []
        for out in self.lir.outputs:
            if out is None or isinstance(out, int):
                outputs.append(None if out is None else results[out])
                continue
            bindings = bindings or symbolic_outputs(self.lir, values)
            outputs.append(int(out.xreplace(bindings)))
        return outputs

    def runtime_input(self, value: Any) -> torch.Tensor:
        """A call's value as the executable takes it: a symbolic int as a 0-d tensor, a CPU
        tensor that feeds a CUDA graph (a scalar) on the graph's device."""
        if not isinstance(value, torch.Tensor):
            return torch.tensor(int(value))
        if self.device is not None and value.device.type == "cpu":
            return value.to(self.device)
        return value

    def wait_for_kernels(self) -> None:
        try:
            self.compiled.wait_for_kernels()
        except Exception as error:
            if self.strict:
                raise
            self.run_eagerly_from_now(error)

    def run_eagerly_from_now(self, error: Exception) -> None:
        """Says why on stderr; from now on the graph runs eagerly."""
        say_running_eagerly(self.graph_kind, error)
        self.eager = True


class CudaGraphedGraph:
    """cuda_graphs mode: a compiled CUDA graph's launches (Loupe's kernels, cuBLASLt, the aten
    fallbacks, on torch's current stream) captured in a CUDA graph per input signature (the
    sizes of its inputs with symbolic dims, the values of its symbolic ints: one signature per
    size of a dynamic dim) and replayed, so a call costs one launch.

    A signature's first call runs uncaptured (it builds the kernels and lays out the arena); the
    second captures. Every tensor input is captured in place at first: the replay reads the
    caller's tensor where it is, and checks that each call passes the same address. An input
    seen at a new address (a new batch each step) is copied into a captured one from then on,
    and the signature is re-captured once. In place first, because a training step's backward
    reads the forward's saved activations, which stay where the forward's replay put them:
    copying them would cost one copy per activation per step. A capture holds no reference to
    the tensors it reads in place (it replays only when the caller passes tensors at those
    addresses, alive for the call), so it never keeps the caller's memory, or an earlier
    replay's outputs, alive.

    The outputs are the captured ones, not copies (a copy of a large output cost as much as the
    kernel that computed it): each call hands out new tensors sharing the captured outputs'
    storage, whose use count says whether any of them is still held. A replay would overwrite
    what the caller still holds, so a call replays a capture only when every output it handed
    out last time is gone; when one is still alive (`y = f(x)` holds the last `y` while the next
    call runs, autograd holds the saved activations until the backward), the call takes a
    second capture of the signature, made then; when both are held, it runs uncaptured. A graph
    whose capture fails (a step that must wait for the host) runs uncaptured from then on: when
    CUDA graphs were asked for, it says so once on stderr (strict mode raises); either way the
    trace records why (cuda_graph_stats.failure).

    A replay runs no per-kernel accounting, so the trace's kernel stats count only the calls
    launched one by one: the captures, replays and those calls go to the trace's
    cuda_graph_stats (every `interval` seconds at the end of a call, on a failed capture, when
    the graph is dropped and at exit)."""

    # Captures kept per signature: two serve a caller that holds one call's outputs while it
    # makes the next; each holds its own memory.
    max_captures = 2

    def __init__(
        self,
        graph: LoupeGraph,
        asked: bool = True,
        trace: Any = None,
        compile_id: int = 0,
        interval: float = 5.0,
    ):
        self.graph = graph
        self.asked = asked  # True: the user asked for CUDA graphs; False: launch planning chose
        self.trace, self.compile_id = trace, compile_id
        self.interval = interval
        self.captures = self.replays = self.uncaptured_calls = 0
        self.failure: str | None = None
        self.written_at = time.monotonic()
        _live_cuda_graphs.add(self)
        self.captured: dict[tuple, list] = {}  # signature -> its captures
        self.seen: set[tuple] = set()  # signatures called at least once
        self.moved: dict[tuple, set] = {}  # signature -> inputs seen at a new address
        self.uncaptured = False
        # The arguments whose size or value is symbolic. Their sizes and values are the
        # signature: Dynamo's guards already fix every other property of the inputs (dtype,
        # device, static sizes and strides), so a call checks only what can change between
        # calls of this graph (shapes, strides, dtypes and devices of every input took about
        # 8 microseconds for 18 tensors).
        lir = graph.lir
        self.sized_args = [
            lir.inputs[position][1]
            for position in lir.sized_inputs
            if lir.inputs[position][0] == "arg"
        ]

    def signature(self, args: tuple) -> tuple:
        return tuple(
            args[i].shape if isinstance(args[i], torch.Tensor) else args[i] for i in self.sized_args
        )

    def __call__(self, *args) -> list:
        results = self.call(args)
        if self.trace is not None and time.monotonic() - self.written_at >= self.interval:
            self.write_stats()
        return results

    def __del__(self) -> None:  # a graph Dynamo drops (a reset) writes its totals then
        try:
            if self.captures or self.failure:
                self.write_stats()
        except Exception:  # at interpreter exit the trace may be gone: the exit hook wrote them
            pass

    def write_stats(self) -> None:
        """The totals so far into the trace's cuda_graph_stats."""
        self.written_at = time.monotonic()
        if self.trace is None:
            return
        chosen_by = "option" if self.asked else "launch-planning"
        self.trace.record_cuda_graph_stats(
            self.compile_id,
            chosen_by,
            self.captures,
            self.replays,
            self.uncaptured_calls,
            self.failure,
        )

    def run_uncaptured(self, args: tuple) -> list:
        self.uncaptured_calls += 1
        return self.graph(*args)

    def call(self, args: tuple) -> list:
        if self.uncaptured or self.graph.eager:
            return self.run_uncaptured(args)
        key = self.signature(args)
        captures = self.captured.get(key, [])
        if captures:
            moved = captures[0].moved(args)
            if moved:  # an input captured in place has moved: capture again, copying it
                self.moved.setdefault(key, set()).update(moved)
                del self.captured[key]
                captures = []
        if not captures and key not in self.seen:  # the first call of a signature: uncaptured
            self.seen.add(key)
            return self.run_uncaptured(args)
        free = next((c for c in captures if c.free()), None)
        if free is None and len(captures) < self.max_captures:
            moved = self.moved.get(key, ())
            in_place = [isinstance(a, torch.Tensor) and i not in moved for i, a in enumerate(args)]
            try:
                free = self.capture(args, in_place)
            except Exception as error:
                if self.graph.strict and self.asked:
                    raise
                self.failure = describe(error)
                if self.asked:
                    print(f"loupe: running without a CUDA graph: {self.failure}", file=sys.stderr)
                self.uncaptured = True
                self.write_stats()
                return self.run_uncaptured(args)
            self.captures += 1
            self.captured.setdefault(key, []).append(free)
        if free is None:  # every capture's last outputs are still held
            return self.run_uncaptured(args)
        self.replays += 1
        return free.replay(args)

    def capture(self, args: tuple, in_place: list) -> _Capture:
        static_inputs = [
            a if keep else a.clone() if isinstance(a, torch.Tensor) else a
            for a, keep in zip(args, in_place)
        ]
        # One uncaptured call first, on a side stream as torch recommends: it builds the kernels
        # and lays out this size's arena, which the captured launches then use.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self.graph(*static_inputs)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        # The captured run takes its arena inside the capture, from the graph's pool: the
        # warm-up's arena is replaced (and freed) by the next size's, and the graph would
        # replay into freed memory.
        self.graph.compiled.release_arena()
        cuda_graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(cuda_graph):
                static_outputs = self.graph(*static_inputs)
        finally:
            failed, self.graph.eager = self.graph.eager, False
        if failed:  # a step the capture refused: the graph still runs compiled, uncaptured
            raise RuntimeError("a step of the compiled graph cannot be captured (see the trace)")
        captured_at = tuple(a.data_ptr() if keep else None for a, keep in zip(args, in_place))
        return _Capture(cuda_graph, static_inputs, static_outputs, captured_at)


# How many tensors hold a storage (torch's own count, what its CUDA-graph trees read): a captured
# output is free to be overwritten when its count is back to what the capture alone holds.
_storage_use_count = torch._C._storage_Use_Count
# Whether tensors sit at given addresses, in one C++ call (CUDA builds of torch); else a loop.
_data_ptrs_equal = getattr(torch._C, "_tensors_data_ptrs_at_indices_equal", None)


class _Capture:
    """One CUDA graph of a signature: its inputs and outputs where the capture left them, where
    the inputs captured in place live, and how many tensors hold each output's storage when
    none the capture handed out is alive.

    A replay hands out each output as a new tensor sharing the captured one's storage
    (`detach()`: microseconds for dozens of outputs, where a tensor of its own over the same
    memory cost several a piece) and nothing else: the storage's use count says whether the
    caller still holds one of them, a view of one, or autograd a saved one."""

    def __init__(self, cuda_graph, static_inputs: list, static_outputs: list, at: tuple):
        self.cuda_graph = cuda_graph
        # By input position: the address read in place, or None for a copied input (a list:
        # torch's one-call check reads `at[i]` for each position i it is given).
        self.at = list(at)
        self.read_in_place = [(i, address) for i, address in enumerate(at) if address is not None]
        self.in_place_positions = [i for i, _ in self.read_in_place]
        positions = {id(s): i for i, s in enumerate(static_inputs)}
        # Per output: the position of the input it is (handed back as the caller's own tensor),
        # or None.
        self.input_of = [positions.get(id(out)) for out in static_outputs]
        # The copied inputs' captured tensors, by position (the caller's tensor is read in place
        # at the others: not held, a replay is given it at the same address).
        self.copied = [
            (i, s)
            for i, (s, a) in enumerate(zip(static_inputs, at))
            if a is None and isinstance(s, torch.Tensor)
        ]
        self.outputs = [None if i is not None else o for o, i in zip(static_outputs, self.input_of)]
        # Per computed output: its storage, and the use count the capture's own tensor gives it.
        self.storages = []
        for out in self.outputs:
            if isinstance(out, torch.Tensor):
                cdata = out.untyped_storage()._cdata
                self.storages.append((cdata, _storage_use_count(cdata)))

    def moved(self, args: tuple) -> list:
        """The inputs read in place that this call passes at another address."""
        if _data_ptrs_equal is not None and _data_ptrs_equal(
            list(args), self.at, self.in_place_positions
        ):
            return []
        return [i for i, address in self.read_in_place if args[i].data_ptr() != address]

    def free(self) -> bool:
        return all(_storage_use_count(cdata) == alone for cdata, alone in self.storages)

    def replay(self, args: tuple) -> list:
        for i, static in self.copied:
            static.copy_(args[i])
        self.cuda_graph.replay()
        return [
            args[position]
            if position is not None
            else out.detach()
            if isinstance(out, torch.Tensor)
            else out
            for out, position in zip(self.outputs, self.input_of)
        ]


class BisectingGraph:
    """Bisect mode: on the first call, bisects the graph against eager on that call's inputs
    (the bisector runs the full pipeline first and stops there when the results agree)."""

    def __init__(
        self, name: str, graph: LoupeGraph, pipeline: list, trace: Any, compile_id: int, fault: int
    ):
        self.name, self.graph, self.pipeline, self.fault = name, graph, pipeline, fault
        self.trace, self.compile_id = trace, compile_id
        self.bisected = False

    def __call__(self, *args) -> list:
        if not self.bisected:
            self.bisected = True
            self.bisect(args)
        return self.graph(*args)

    def bisect(self, args: tuple) -> None:
        lir, gm = self.graph.lir, self.graph.gm
        # Eager runs on copies: the reference must not see (or make) mutations of the inputs.
        copies = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
        with torch.no_grad():
            eager = gm(*copies)
        reference = {
            out: eager[position].detach().contiguous()
            for position, out in enumerate(lir.outputs)
            if isinstance(out, int) and not isinstance(out, bool)
        }
        if sorted(reference) != list(range(len(reference))):
            print(f"loupe bisect: {self.name}: outputs do not map to eager's", file=sys.stderr)
            return
        inputs = []
        for kind, source in lir.inputs:
            value = args[source] if kind == "arg" else getattr(gm, source)
            is_tensor = isinstance(value, torch.Tensor)
            inputs.append(value.detach() if is_tensor else torch.tensor(int(value)))

        def progress(what: str, done: int, estimated: int) -> None:
            print(f"loupe bisect: {self.name}: trial {done}/~{estimated}: {what}", file=sys.stderr)

        result = _C.bisect(
            lir.text,
            self.pipeline,
            inputs,
            [reference[i] for i in range(len(reference))],
            fallback=fallback_for(lir),
            inject_fault=self.fault,
            trace=self.trace,
            compile_id=self.compile_id,
            progress=progress,
        )
        result.update(graph=self.name, compile_id=self.compile_id, trace=self.trace.path)
        bisections.append(result)
        if result["diverged"]:
            print(
                f"loupe bisect: graph {self.name} (compile {self.compile_id} in {self.trace.path})"
            )
            print(result["report"], end="", flush=True)


def replays_cuda_graph(config: Config, compiled: Any) -> bool:
    """Whether a compiled CUDA graph is replayed as a CUDA graph: always when asked for; with
    "auto", where launch planning chose it, unless profile or check mode needs every call to run
    its kernels one by one."""
    if config.cuda_graphs == "auto":
        return compiled.cuda_graph and not config.profile and not config.check
    return bool(config.cuda_graphs)


def _device_allocator(device: str) -> Callable | None:
    """Device memory for a CUDA graph's executable: bytes from torch's caching allocator, so
    Loupe's arena and outputs are memory torch accounts for and reuses."""
    if device == "cpu":
        return None
    where = torch.device(device)
    # A testing aid: memory filled with all-ones bytes (NaN in every float dtype), so a kernel
    # that reads what nothing wrote cannot pass a comparison.
    poison = os.environ.get("LOUPE_POISON_DEVICE_MEMORY") == "1"

    def allocate(nbytes: int) -> torch.Tensor:
        memory = torch.empty(nbytes, dtype=torch.uint8, device=where)
        return memory.fill_(255) if poison else memory

    return allocate


def compile_graph(
    gm: torch.fx.GraphModule,
    example_inputs: list,
    graph_kind: str,
    config: Config,
    names: list | None = None,
) -> Callable:
    trace, compile_id = begin_compile(config, gm, example_inputs, graph_kind, names)
    failure = "error" if config.strict else "eager_fallback"
    recorded = converting = False
    try:
        pipeline = _C.resolve_pipeline(config.pipeline, config.disable_passes)
        name = f"{graph_kind}_{next(_graph_ids)}"
        converting = True
        lir = fx_to_lir(gm, name, set(_C.registered_ops()), dropout_rng=config.dropout_rng)
        recorded = True  # from here on the binding records the outcome itself
        fault = fault_for(config, graph_kind)
        compiled = _C.CompiledGraph(
            lir.text,
            pipeline,
            check=config.check,
            fallback=fallback_for(lir),
            trace=trace,
            compile_id=compile_id,
            failure_status=failure,
            inject_fault=fault,
            stats_interval=config.stats_interval,
            device=lir.device,
            allocator=_device_allocator(lir.device),
            profile=config.profile,
        )
        graph = LoupeGraph(gm, lir, compiled, graph_kind, config.strict)
        if graph.device is not None and not config.bisect and replays_cuda_graph(config, compiled):
            asked = config.cuda_graphs is True
            return make_boxed_func(
                CudaGraphedGraph(graph, asked, trace, compile_id, interval=config.stats_interval)
            )
        if config.bisect:
            return make_boxed_func(BisectingGraph(name, graph, pipeline, trace, compile_id, fault))
        return make_boxed_func(graph)
    except Exception as error:
        if not recorded and converting:
            # The graph it is about, as the FX code aot_autograd handed over.
            trace.record_rejected_graph(compile_id, gm.code, describe(error))
            trace.finish_compile(compile_id, failure, describe(error), "import")
        elif not recorded:
            trace.finish_compile(compile_id, failure, describe(error))
        if config.strict:
            raise
        say_running_eagerly(graph_kind, error)
        return make_boxed_func(gm.forward)
