"""The torch.compile backend: ``torch.compile(model, backend="loupe", options={...})``.

Dynamo's graph goes through aot_autograd, which hands over functional aten graphs (a forward
and a backward when training, one inference graph otherwise). Each is converted to .lir,
compiled by the C++ pipeline with every pass recorded into the trace, and run by the C++
runtime. Any failure while converting or compiling is recorded and that graph runs eagerly,
unless strict mode asks for the error instead.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

from . import _C
from .dynamo_trace import recorder
from .fx_to_lir import LirGraph, fx_to_lir, run_fallback, symbolic_outputs, user_frame

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

    @staticmethod
    def resolve(options: dict[str, Any] | None) -> "Config":
        """`options` from torch.compile first, then LOUPE_* environment variables."""
        options = dict(options or {})
        unknown = set(options) - {"trace", "check", "strict", "pipeline", "disable_passes"}
        if unknown:
            raise ValueError(f"unknown loupe option(s) {sorted(unknown)}")
        env = os.environ
        config = Config(
            trace=options.get("trace", env.get("LOUPE_TRACE")),
            check=options.get("check", env.get("LOUPE_CHECK", "").lower() in _TRUE),
            strict=options.get("strict", env.get("LOUPE_STRICT", "").lower() in _TRUE),
            pipeline=options.get("pipeline", env.get("LOUPE_PIPELINE", "default")),
            disable_passes=list(options.get("disable_passes", [])),
        )
        return config


# Dynamo reports a compile's first events before it calls the backend; torch.compile imports
# this module when it resolves backend="loupe", so capturing from here sees the first compile.
recorder.install()

_traces: dict[str, tuple[_C.Trace, int]] = {}  # path -> (writer, this process's run id)
_default_trace_path: str | None = None
_graph_ids = itertools.count()


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


def input_signature(example_inputs: list) -> str:
    signature = []
    for value in example_inputs:
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
    return json.dumps(signature)


def describe(error: BaseException) -> str:
    return "".join(traceback.format_exception_only(error)).strip()


def compile_info(gm: torch.fx.GraphModule, example_inputs: list, graph_kind: str) -> Any:
    info = _C.CompileInfo()
    compile_id = torch._guards.CompileContext.current_compile_id()
    info.compile_key = str(compile_id) if compile_id is not None else ""
    info.graph_kind = graph_kind
    info.input_signature_json = input_signature(example_inputs)
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


def begin_compile(config: Config, gm: torch.fx.GraphModule, example_inputs: list, graph_kind: str):
    """Opens the compile's row; Dynamo's events for it are recorded against it from now on."""
    trace, run_id = open_trace(config)
    info = compile_info(gm, example_inputs, graph_kind)
    compile_id = trace.begin_compile(run_id, info)
    recorder.compile_begun(trace, run_id, info.compile_key, compile_id)
    return trace, compile_id


def fallback_for(lir: LirGraph) -> Callable:
    """The runtime's callback for the graph's opaque nodes. It closes over the conversion's
    side table only, never over the compiled graph that holds it."""

    def fallback(name: str, op: str, inputs: list, outputs: list) -> None:
        call = lir.fallbacks.get(name)
        if call is None:
            raise RuntimeError(f"loupe: no fallback recorded for node %{name} ({op})")
        run_fallback(call, inputs, outputs)

    return fallback


class LoupeGraph:
    """A compiled aten graph: runs the C++ executable on the call's tensors."""

    def __init__(self, gm: torch.fx.GraphModule, lir: LirGraph, compiled: Any):
        self.gm = gm
        self.lir = lir
        self.compiled = compiled

    def __call__(self, *args) -> list:
        inputs = []
        for kind, source in self.lir.inputs:
            value = args[source] if kind == "arg" else getattr(self.gm, source)
            if isinstance(value, torch.Tensor):
                inputs.append(value.detach())
            else:
                inputs.append(torch.tensor(int(value), dtype=torch.int64))
        results = self.compiled.run(inputs)
        bindings = None
        outputs = []
        for out in self.lir.outputs:
            if out is None or isinstance(out, int):
                outputs.append(None if out is None else results[out])
                continue
            bindings = bindings or symbolic_outputs(self.lir, inputs)
            outputs.append(int(out.xreplace(bindings)))
        return outputs


def compile_graph(
    gm: torch.fx.GraphModule, example_inputs: list, graph_kind: str, config: Config
) -> Callable:
    trace, compile_id = begin_compile(config, gm, example_inputs, graph_kind)
    failure = "error" if config.strict else "eager_fallback"
    recorded = False
    try:
        pipeline = _C.resolve_pipeline(config.pipeline, config.disable_passes)
        name = f"{graph_kind}_{next(_graph_ids)}"
        lir = fx_to_lir(gm, name, set(_C.registered_ops()))
        recorded = True  # from here on the binding records the outcome itself
        compiled = _C.CompiledGraph(
            lir.text,
            pipeline,
            check=config.check,
            fallback=fallback_for(lir),
            trace=trace,
            compile_id=compile_id,
            failure_status=failure,
        )
        return make_boxed_func(LoupeGraph(gm, lir, compiled))
    except Exception as error:
        if not recorded:
            trace.finish_compile(compile_id, failure, describe(error))
        if config.strict:
            raise
        print(f"loupe: running {graph_kind} graph eagerly: {describe(error)}", file=sys.stderr)
        return make_boxed_func(gm.forward)


def loupe_backend(gm: torch.fx.GraphModule, example_inputs: list, options=None, mode=None):
    """The `loupe` torch.compile backend (registered through the torch_dynamo_backends entry
    point). `mode` is accepted because torch.compile passes it; Loupe has one mode."""
    config = Config.resolve(options)

    def compiler(graph_kind: str):
        return lambda g, inputs: compile_graph(g, inputs, graph_kind, config)

    backend = aot_autograd(
        fw_compiler=compiler("forward"),
        bw_compiler=compiler("backward"),
        inference_compiler=compiler("inference"),
    )
    try:
        return backend(gm, example_inputs)
    except _DYNAMO_CONTROL_FLOW:
        raise
    except Exception as error:
        if config.strict:
            raise
        message = describe(error)
        trace, compile_id = begin_compile(config, gm, example_inputs, "graph")
        trace.finish_compile(compile_id, "eager_fallback", f"aot_autograd: {message}")
        print(f"loupe: running the graph eagerly: {message}", file=sys.stderr)
        return gm.forward
