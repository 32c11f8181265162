"""The torch.compile backend: ``torch.compile(model, backend="loupe", options={...})``.

Dynamo's graph goes through aot_autograd, which hands over functional aten graphs (a forward
and a backward when training, one inference graph otherwise). Each is converted to .lir,
compiled by the C++ pipeline with every pass recorded into the trace, and run by the C++
runtime. Any failure while converting or compiling is recorded and that graph runs eagerly,
unless strict mode asks for the error instead.

This module is the entry point (`loupe_backend`, registered through the torch_dynamo_backends
entry point) and the aot_autograd set-up; the options are in config.py, the trace registry in
traces.py, compiling and running one aten graph in compiled.py, the decompositions in
decompositions.py.
"""

from __future__ import annotations

import sys
from typing import Callable

import torch
from functorch.compile import min_cut_rematerialization_partition
from torch._dynamo.backends.common import aot_autograd

from . import _C
from .compiled import compile_graph
from .config import Config
from .decompositions import decompositions
from .dynamo_trace import recorder
from .traces import begin_compile, describe, dynamo_input_names

# Dynamo steers its own analysis with these (e.g. a restart after tensorifying a float);
# they are not failures and must reach Dynamo.
_DYNAMO_CONTROL_FLOW = tuple(
    getattr(torch._dynamo.exc, name)
    for name in ("RestartAnalysis", "SkipFrame")
    if hasattr(torch._dynamo.exc, name)
)

# Dynamo reports a compile's first events before it calls the backend; torch.compile imports
# this module when it resolves backend="loupe", so capturing from here sees the first compile.
recorder.install()


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
    point). `mode` "reduce-overhead" captures CUDA graphs; other modes change nothing."""
    config = Config.resolve(options, mode)
    names = dynamo_input_names(gm)
    if any(isinstance(x, torch.Tensor) and x.is_cuda for x in example_inputs):
        # NVRTC's one-time start-up, on a thread of its own while aot_autograd traces.
        _C.start_nvrtc()

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
