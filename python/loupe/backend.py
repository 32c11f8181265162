"""The torch.compile backend: ``torch.compile(model, backend="loupe", options={...})``.

Dynamo's graph goes through aot_autograd, which hands over functional aten graphs (a forward
and a backward when training, one inference graph otherwise). Each is converted to .lir,
compiled by the C++ pipeline with every pass recorded into the trace, and run by the C++
runtime. Any failure while converting or compiling is recorded and that graph runs eagerly,
unless strict mode asks for the error instead.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from functorch.compile import make_boxed_func, min_cut_rematerialization_partition
from torch._dynamo.backends.common import aot_autograd

from . import _C
from .dynamo_trace import recorder
from .fx_to_lir import DROPOUT_RNG, LirGraph, fx_to_lir, run_fallback, symbolic_outputs, user_frame

_TRUE = {"1", "true", "yes", "on"}
# Dynamo steers its own analysis with these (e.g. a restart after tensorifying a float);
# they are not failures and must reach Dynamo.
_DYNAMO_CONTROL_FLOW = tuple(
    getattr(torch._dynamo.exc, name)
    for name in ("RestartAnalysis", "SkipFrame")
    if hasattr(torch._dynamo.exc, name)
)


@dataclass
class Config:
    trace: str | None = None  # None: one file per process under ./loupe_traces/
    check: bool = False
    strict: bool = False
    pipeline: str = "default"
    disable_passes: list[str] = field(default_factory=list)
    # Bisect mode (`loupe bisect SCRIPT.py`): on its first call each graph is also run eagerly
    # and, when the results differ, bisected (docs/bisect.md).
    bisect: bool = False
    # Testing aid: "N" miscompiles the first graph after decision N, "KIND:N" the first graph of
    # that kind (forward, backward, inference).
    inject_fault: str | None = None
    # Where training dropout's masks come from: "loupe" (Loupe's own generator: everything
    # compiled, values differ from eager) or "torch" (torch draws them, one fallback node per
    # dropout, results match eager). docs/python-adapter.md.
    dropout_rng: str = "loupe"

    @staticmethod
    def resolve(options: dict[str, Any] | None) -> "Config":
        """`options` from torch.compile first, then LOUPE_* environment variables."""
        options = dict(options or {})
        known = {"trace", "check", "strict", "pipeline", "disable_passes", "bisect", "inject_fault", "dropout_rng"}
        unknown = set(options) - known
        if unknown:
            raise ValueError(f"unknown loupe option(s) {sorted(unknown)}")
        env = os.environ
        config = Config(
            trace=options.get("trace", env.get("LOUPE_TRACE")),
            check=options.get("check", env.get("LOUPE_CHECK", "").lower() in _TRUE),
            strict=options.get("strict", env.get("LOUPE_STRICT", "").lower() in _TRUE),
            pipeline=options.get("pipeline", env.get("LOUPE_PIPELINE", "default")),
            disable_passes=list(options.get("disable_passes", [])),
            bisect=options.get("bisect", env.get("LOUPE_BISECT", "").lower() in _TRUE),
            inject_fault=options.get("inject_fault", env.get("LOUPE_INJECT_FAULT")),
            dropout_rng=options.get("dropout_rng", env.get("LOUPE_DROPOUT_RNG", "loupe")),
        )
        if config.dropout_rng not in DROPOUT_RNG:
            raise ValueError(f"loupe option dropout_rng must be one of {DROPOUT_RNG}, not {config.dropout_rng!r}")
        if config.inject_fault is not None:
            parse_fault(str(config.inject_fault))  # a malformed value is an error now
        return config


_FAULT = re.compile(r"(?:(forward|backward|inference):)?([1-9][0-9]*)")


def parse_fault(text: str) -> tuple[str | None, int]:
    """ "N" or "KIND:N" -> (kind or None, N)."""
    match = _FAULT.fullmatch(text.strip())
    if not match:
        raise ValueError(
            "inject_fault expects N or KIND:N (KIND forward, backward or inference), "
            f"got {text!r}"
        )
    return match.group(1), int(match.group(2))


# Dynamo reports a compile's first events before it calls the backend; torch.compile imports
# this module when it resolves backend="loupe", so capturing from here sees the first compile.
recorder.install()

_traces: dict[str, tuple[_C.Trace, int]] = {}  # path -> (writer, this process's run id)
_default_trace_path: str | None = None
_graph_ids = itertools.count()
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


def default_trace_path() -> str:
    global _default_trace_path
    if _default_trace_path is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = Path("loupe_traces") / f"loupe-{stamp}-{os.getpid()}.db"
        path.parent.mkdir(parents=True, exist_ok=True)
        _default_trace_path = str(path)
        print(f"loupe: recording into {_default_trace_path}", file=sys.stderr)
    return _default_trace_path


def open_trace(config: Config) -> tuple[_C.Trace, int]:
    path = config.trace or default_trace_path()
    if path not in _traces:
        trace = _C.Trace(path)
        options = json.dumps(config.__dict__)
        run_id = trace.begin_run(" ".join(sys.argv) or "python", torch.__version__, options)
        _traces[path] = (trace, run_id)
    return _traces[path]


_SOURCE_ROOT = re.compile(r"[LG]\['([A-Za-z_][A-Za-z0-9_]*)'\]")
_SOURCE_STEP = re.compile(
    r"\._(?:modules|parameters|buffers)\['([A-Za-z0-9_]+)'\]|\.([A-Za-z_][A-Za-z0-9_]*)"
)


def simplify_source(name: str) -> str | None:
    """Dynamo's source name as the user spells it: "L['x']" -> "x",
    "L['self']._modules['fc1']._parameters['weight']" -> "self.fc1.weight"; None for anything
    else (sizes, indexing), which is left unnamed rather than guessed."""
    root = _SOURCE_ROOT.match(name)
    if not root:
        return None
    parts, position = [root.group(1)], root.end()
    while position < len(name):
        step = _SOURCE_STEP.match(name, position)
        if not step:
            return None
        parts.append(step.group(1) or step.group(2))
        position = step.end()
    return ".".join(parts)


def dynamo_input_names(gm: torch.fx.GraphModule) -> list[str | None]:
    """The user's name of each input of Dynamo's graph, None where unknown."""
    names = []
    for node in gm.graph.find_nodes(op="placeholder"):
        source = getattr(node.meta.get("grapharg"), "source", None)
        text = getattr(source, "name", None)
        text = text() if callable(text) else text  # a method in older torch, a property now
        names.append(simplify_source(text) if isinstance(text, str) else None)
    return names


def input_signature(example_inputs: list, names: list[str | None] | None = None) -> str:
    """The inputs' shapes and dtypes; `names` (Dynamo's, aligned with the inputs) adds "name"."""
    signature = []
    for position, value in enumerate(example_inputs):
        if isinstance(value, torch.Tensor):
            signature.append(
                {
                    "shape": [str(d) for d in value.shape],
                    "dtype": str(value.dtype).removeprefix("torch."),
                    "strides": [str(s) for s in value.stride()],
                    "dynamic_dims": [
                        i for i, d in enumerate(value.shape) if isinstance(d, torch.SymInt)
                    ],
                }
            )
        else:
            signature.append({"scalar": str(value)})
        if names and names[position]:
            signature[-1]["name"] = names[position]
    return json.dumps(signature)


def describe(error: BaseException) -> str:
    return "".join(traceback.format_exception_only(error)).strip()


def compile_info(
    gm: torch.fx.GraphModule, example_inputs: list, graph_kind: str, names: list | None = None
) -> Any:
    info = _C.CompileInfo()
    compile_id = torch._guards.CompileContext.current_compile_id()
    info.compile_key = str(compile_id) if compile_id is not None else ""
    info.graph_kind = graph_kind
    info.input_signature_json = input_signature(example_inputs, names)
    dynamo_frame = recorder.frame_of(info.compile_key)
    if dynamo_frame is not None:
        info.frame_file, info.frame_line = dynamo_frame.frame_file, dynamo_frame.frame_line
        info.frame_name = dynamo_frame.frame_name
        return info
    for node in gm.graph.nodes:  # no Dynamo event: the first node's user frame
        frame = user_frame(node)
        if frame:
            info.frame_file, info.frame_line, info.frame_name = frame
            break
    return info


def begin_compile(
    config: Config,
    gm: torch.fx.GraphModule,
    example_inputs: list,
    graph_kind: str,
    names: list | None = None,
):
    """Opens the compile's row; Dynamo's events for it are recorded against it from now on."""
    trace, run_id = open_trace(config)
    info = compile_info(gm, example_inputs, graph_kind, names)
    compile_id = trace.begin_compile(run_id, info)
    recorder.compile_begun(trace, run_id, info.compile_key, compile_id)
    return trace, compile_id


def fallback_for(lir: LirGraph) -> Callable:
    """The runtime's callback for the graph's opaque nodes. It closes over the conversion's
    side table only, never over the compiled graph that holds it."""

    def fallback(name: str, op: str, inputs: list, outputs: list, symbols: dict) -> None:
        call = lir.fallbacks.get(name)
        if call is None:
            raise RuntimeError(f"loupe: no fallback recorded for node %{name} ({op})")
        run_fallback(call, inputs, outputs, symbols)

    return fallback


# torch.Tensor.__dlpack__ without its Python checks, which cost more than a small kernel per
# input; the one that matters, requires_grad, guards writes, and the runtime only reads inputs.
_to_dlpack = torch._C._to_dlpack


class LoupeGraph:
    """A compiled aten graph: runs the C++ executable on the call's tensors.

    Its generated kernels are built in the background while Dynamo finishes the compile; the
    first call waits for them. Should the build fail (recorded in the trace as the compile's
    failure), the graph runs eagerly from then on, or strict mode raises."""

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
        returned = [out for out in lir.outputs if out is None or isinstance(out, int)]
        self.outputs_are_results = lir.outputs == list(range(len(returned)))
        # Graph inputs returned as they are (a forward's saved parameters and activations): the
        # call hands back the caller's own tensor, as eager and Inductor do, not a copy.
        self.returned_inputs = [
            (output, position)
            for output, position in enumerate(compiled.output_inputs)
            if position >= 0
        ]

    def __call__(self, *args) -> list:
        if not self.kernels_checked:
            self.kernels_checked = True
            self.wait_for_kernels()
        if self.eager:
            return list(self.gm.forward(*args))
        values = [args[source] if arg else getattr(self.gm, source) for arg, source in self.sources]
        results = self.compiled.run(
            [
                _to_dlpack(value if isinstance(value, torch.Tensor) else torch.tensor(int(value)))
                for value in values
            ],
            torch.get_num_threads(),  # BLAS follows torch.set_num_threads
            True,  # returned inputs come back as None: they are filled in from `values`
        )
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

    def wait_for_kernels(self) -> None:
        try:
            self.compiled.wait_for_kernels()
        except Exception as error:
            if self.strict:
                raise
            message = f"loupe: running {self.graph_kind} graph eagerly: {describe(error)}"
            print(message, file=sys.stderr)
            self.eager = True


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
            print(f"loupe bisect: graph {self.name} (compile {self.compile_id} in {self.trace.path})")
            print(result["report"], end="", flush=True)


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
        )
        graph = LoupeGraph(gm, lir, compiled, graph_kind, config.strict)
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
        print(f"loupe: running {graph_kind} graph eagerly: {describe(error)}", file=sys.stderr)
        return make_boxed_func(gm.forward)


# Ops torch decomposes into pointwise and indexing ops that Loupe compiles, decomposed while
# aot_autograd traces so they need no kernels of their own and no fallback: activations and
# their backwards that models use (ReLU6 is hardtanh: MobileNet's). A list and not torch's whole
# table: the table's keys are the ops before functionalization, so decomposing "every
# unregistered op" would also take apart ops Loupe runs whole in their functional form (batch
# norm's forms, which have library kernels).
_DECOMPOSED = (
    "hardtanh_backward",
    "leaky_relu",
    "leaky_relu_backward",
    "elu",
    "elu_backward",
    "hardswish",
    "hardswish_backward",
    "hardsigmoid",
    "hardsigmoid_backward",
    "softplus",
    "softplus_backward",
    "mish_backward",
    "log_sigmoid_forward",
    "log_sigmoid_backward",
    "glu",
    "glu_backward",
    "_prelu_kernel",
    "_prelu_kernel_backward",
    # Normalizations into reductions and pointwise ops (wav2vec2's feature encoder, UNets).
    "native_group_norm",
    "native_group_norm_backward",
    "_weight_norm_interface",
    "linalg_vector_norm",
    # Floor division (into div with rounding_mode="floor"), index_add (into index_put with
    # accumulate), for the overloads Loupe has no kernel for.
    "floor_divide",
    "index_add",
)


@functools.lru_cache(maxsize=1)
def decompositions() -> dict:
    """torch's decompositions of _DECOMPOSED, less any op Loupe's registry has (a registered op
    stays whole: its own kernel, and the trace shows it)."""
    from torch._decomp import get_decompositions

    registered = set(_C.registered_ops())
    ops = [getattr(torch.ops.aten, name) for name in _DECOMPOSED if hasattr(torch.ops.aten, name)]
    table = get_decompositions(ops)
    return {
        op: fn
        for op, fn in table.items()
        if str(op).removesuffix(".default") not in registered and not op._schema.is_mutable
    }


def aot_front_end(compiler: Callable[[str], Callable]) -> Callable:
    """Loupe's aot_autograd set-up, with `compiler(graph_kind)` (forward, backward, inference)
    giving the function that compiles each graph it hands over."""
    return aot_autograd(
        fw_compiler=compiler("forward"),
        bw_compiler=compiler("backward"),
        inference_compiler=compiler("inference"),
        # Inductor's partitioner: the backward recomputes cheap ops (views above all) rather
        # than have the forward save their results, so fewer tensors cross between the two.
        partition_fn=min_cut_rematerialization_partition,
        decompositions=decompositions(),
    )


def loupe_backend(gm: torch.fx.GraphModule, example_inputs: list, options=None, mode=None):
    """The `loupe` torch.compile backend (registered through the torch_dynamo_backends entry
    point). `mode` is accepted because torch.compile passes it; Loupe has one mode."""
    config = Config.resolve(options)
    names = dynamo_input_names(gm)

    def compiler(graph_kind: str):
        def compile_one(g: torch.fx.GraphModule, inputs: list) -> Callable:
            # aot_autograd's forward and inference graphs take Dynamo's inputs in order; when
            # it adds inputs of its own (tokens, seeds) no name is sure, and backward graphs
            # take saved values, which have none.
            sure = graph_kind != "backward" and len(inputs) == len(names)
            return compile_graph(g, inputs, graph_kind, config, names if sure else None)

        return compile_one

    backend = aot_front_end(compiler)
    try:
        return backend(gm, example_inputs)
    except _DYNAMO_CONTROL_FLOW:
        raise
    except Exception as error:
        if config.strict:
            raise
        message = describe(error)
        trace, compile_id = begin_compile(config, gm, example_inputs, "graph", names)
        trace.finish_compile(compile_id, "eager_fallback", f"aot_autograd: {message}")
        print(f"loupe: running the graph eagerly: {message}", file=sys.stderr)
        return gm.forward
