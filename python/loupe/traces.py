"""Where compiles are recorded: the trace registry (one writer and run per trace path in this
process, the default path made once per process) and the compile row each aten graph opens in
its trace, with its inputs' user names, shapes and dtypes and the user's frame."""

from __future__ import annotations

import json
import os
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from . import _C
from .config import Config
from .dynamo_trace import recorder
from .fx_to_lir import user_frame

_traces: dict[str, tuple[_C.Trace, int]] = {}  # path -> (writer, this process's run id)
_default_trace_path: str | None = None


def distributed_place() -> tuple[int | None, int | None, str | None]:
    """This process's rank, world size and process group backend in a torch.distributed job.
    With the default group initialised, what torch.distributed says; before that (or without
    it), the RANK and WORLD_SIZE that torchrun hands every process, with no backend; otherwise
    nothing."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size(), str(dist.get_backend())
    rank, world_size = os.environ.get("RANK", ""), os.environ.get("WORLD_SIZE", "")
    if rank.isdigit() and world_size.isdigit():
        return int(rank), int(world_size), None
    return None, None, None


def default_trace_path() -> str:
    global _default_trace_path
    if _default_trace_path is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        rank = distributed_place()[0]
        name = (
            f"loupe-{stamp}-{os.getpid()}"
            if rank is None
            else f"loupe-{stamp}-rank{rank}-{os.getpid()}"
        )
        path = Path("loupe_traces") / f"{name}.db"
        path.parent.mkdir(parents=True, exist_ok=True)
        _default_trace_path = str(path)
        print(f"loupe: recording into {_default_trace_path}", file=sys.stderr)
    return _default_trace_path


def checkpoint_all() -> None:
    """Copies each trace's write-ahead log into its .db file: the file alone is the trace."""
    for trace, _ in _traces.values():
        trace.checkpoint()


def open_trace(config: Config) -> tuple[_C.Trace, int]:
    path = config.trace or default_trace_path()
    if path not in _traces:
        trace = _C.Trace(path)
        options = json.dumps(config.__dict__)
        rank, world_size, backend = distributed_place()
        run_id = trace.begin_run(
            " ".join(sys.argv) or "python",
            torch.__version__,
            options,
            rank=rank,
            world_size=world_size,
            process_group_backend=backend,
        )
        _traces[path] = (trace, run_id)
    return _traces[path]


_SOURCE_ROOT = re.compile(r"[LG]\['([A-Za-z_][A-Za-z0-9_]*)'\]")
_SOURCE_STEP = re.compile(
    r"\._(?:modules|parameters|buffers)\['([A-Za-z0-9_]+)'\]|\.([A-Za-z_][A-Za-z0-9_]*)"
    r"|(\['[A-Za-z0-9_]+'\])"
)


def simplify_source(name: str) -> str | None:
    """Dynamo's source name as the user spells it: "L['x']" -> "x",
    "L['self']._modules['fc1']._parameters['weight']" -> "self.fc1.weight", a keyword of
    `**inputs` "L['inputs']['input_ids']" -> "inputs['input_ids']"; None for anything else
    (sizes, indexing by number), which is left unnamed rather than guessed."""
    root = _SOURCE_ROOT.match(name)
    if not root:
        return None
    text, position = root.group(1), root.end()
    while position < len(name):
        step = _SOURCE_STEP.match(name, position)
        if not step:
            return None
        text += step.group(3) or "." + (step.group(1) or step.group(2))
        position = step.end()
    return text


class InputName(str):
    """An input's name as the user spells it, with what Dynamo's source says it is: "input" (an
    argument of the frame or an attribute of one), "parameter" or "buffer" (a module's state)."""

    kind: str


def source_kind(name: str) -> str:
    """Whether Dynamo's source name reaches a module's parameter, a buffer or neither."""
    if "._parameters[" in name:
        return "parameter"
    if "._buffers[" in name:
        return "buffer"
    return "input"


def dynamo_input_names(gm: torch.fx.GraphModule) -> list[InputName | None]:
    """The user's name of each input of Dynamo's graph, with its kind; None where unknown."""
    names = []
    for node in gm.graph.find_nodes(op="placeholder"):
        source = getattr(node.meta.get("grapharg"), "source", None)
        text = getattr(source, "name", None)
        text = text() if callable(text) else text  # a method in older torch, a property now
        simple = simplify_source(text) if isinstance(text, str) else None
        if simple is None:
            names.append(None)
            continue
        name = InputName(simple)
        name.kind = source_kind(text)
        names.append(name)
    return names


def input_signature(example_inputs: list, names: list[str | None] | None = None) -> str:
    """The inputs' shapes and dtypes; `names` (Dynamo's, aligned with the inputs) adds "name"
    and, where the name knows it (InputName), "kind": input, parameter or buffer."""
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
            signature[-1]["name"] = str(names[position])
            kind = getattr(names[position], "kind", None)
            if kind:
                signature[-1]["kind"] = kind
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
