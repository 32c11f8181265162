"""Converts an aten FX graph (as aot_autograd hands it over) into Loupe's .lir text.

Each call_function node becomes one Loupe node: tensor arguments become operands, every other
argument an attribute named after the op's schema argument. Values keep FX's node names, types
come from the fake tensors in ``node.meta["val"]`` (symbolic dims as their expressions), and
locations from the user's stack trace and ``nn_module_stack``. Ops Loupe does not know are
emitted as they are; the runtime calls back into Python for them through the side table kept
in :class:`LirGraph`.
"""

from __future__ import annotations

import contextvars
import math
import operator
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import sympy
import torch
import torch.fx

_DTYPES = {
    torch.bool: "bool",
    torch.uint8: "u8",
    torch.int8: "i8",
    torch.int16: "i16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float32: "f32",
    torch.float64: "f64",
}

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.]*\Z")
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
_DYNAMO_ROOT = re.compile(r"^L\['[^']*'\]\.?")


class ConversionError(Exception):
    """The graph holds something Loupe cannot represent; the backend runs it eagerly."""


@dataclass(frozen=True)
class Slot:
    """Where the fallback puts the i-th operand back into an op's arguments."""

    index: int


@dataclass(frozen=True)
class SymValue:
    """A symbolic int argument of a fallback op (the shift of torch.roll(x, x.shape[0] // 2)
    under dynamic shapes): evaluated with the run's symbol values, which the runtime hands the
    fallback."""

    expr: Any  # sympy expression over Dynamo's symbols (s0, s1, ...)


@dataclass
class FallbackCall:
    target: Callable[..., Any]
    args: tuple
    kwargs: dict
    # The dtype of each result the Loupe node declares (None: not requested, never read); a
    # result of another dtype is copied into the node's buffer, converted.
    dtypes: tuple = ()

    def __post_init__(self):
        # Worked out once: most calls have operands to put back and nothing symbolic.
        leaves = []
        torch.fx.node.map_aggregate((self.args, self.kwargs), leaves.append)
        self.fills = any(isinstance(leaf, (Slot, SymValue)) for leaf in leaves)
        self.symbolic = any(isinstance(leaf, SymValue) for leaf in leaves)


@dataclass
class LirGraph:
    text: str
    # How to build the runtime inputs, in graph-input order, from the call's arguments:
    # ("arg", i) passes argument i, ("attr", name) a tensor attribute of the GraphModule.
    inputs: list[tuple[str, Any]]
    # For each FX output: the index of the Loupe output that holds it, None for a None, or
    # the sympy expression of a symbolic int (saved by a forward for its backward).
    outputs: list[Any]
    # Where each symbol's value comes from: (graph-input position, dim), dim None for an
    # index input.
    symbols: dict[Any, tuple[int, int | None]] = field(default_factory=dict)
    # The graph inputs whose size or value is symbolic (a tensor with a symbolic dim, a symbolic
    # int): what can differ between calls of the graph beyond where the tensors live.
    sized_inputs: list[int] = field(default_factory=list)
    # Opaque nodes by their first result's name, for the fallback; on a CUDA graph every aten
    # node's call, so an op Loupe does not generate runs as its aten kernel on the device.
    fallbacks: dict[str, FallbackCall] = field(default_factory=dict)
    # The device the graph runs on: "cpu", or the CUDA device of its tensors ("cuda:0").
    device: str = "cpu"


_ESCAPED = re.compile(r'["\\\x00-\x1f\x7f]')
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t"}


def quote(text: str) -> str:
    """A string literal of the .lir format: quotes, backslashes and control characters escaped
    (a regex pass: a converter quotes a file name and a module path per node)."""
    return '"' + _ESCAPED.sub(lambda m: _ESCAPES.get(m[0], f"\\x{ord(m[0]):02x}"), text) + '"'


def value_ref(name: str) -> str:
    return "%" + (name if _NAME.match(name) else quote(name))


def dim_text(dim: Any) -> str:
    if isinstance(dim, torch.SymInt):
        shape_env = dim.node.shape_env
        expr = dim.node.expr
        # The shape environment knows the divisibility its guards established (s0 % 8 == 0):
        # simplifying with it turns (8*s1*(s0//8))//s0 into s1, as Loupe's shape inference
        # computes it.
        simplify = getattr(shape_env, "simplify", None)
        if simplify is not None:
            expr = simplify(expr)
        return _lir_expression(_without_min_max(expr, shape_env))
    return str(int(dim))


def _lir_expression(expr: Any) -> str:
    """A sympy dim in .lir's spelling (docs/lir-format.md): sympy writes a modulo as
    Mod(a, b), .lir as a % b."""
    import sympy.printing.str

    class Printer(sympy.printing.str.StrPrinter):
        def _print_Mod(self, e: Any) -> str:
            a, b = (self._print(arg) for arg in e.args)
            return f"(({a})%({b}))"

        _print_PythonMod = _print_Mod

    return Printer().doprint(expr).replace(" ", "")


def _without_min_max(expr: Any, shape_env: Any) -> Any:
    """Torch writes some strides as Max(1, e) (a dim that may be empty); .lir dims have no
    Max or Min, so each is replaced by the argument it picks at this compile's sizes, which is
    what the compiled code runs with."""
    values = getattr(shape_env, "backed_var_to_val", None)
    if values is None:  # torch before the rename
        values = getattr(shape_env, "var_to_val", None) or {}

    def resolve(call: Any) -> Any:
        try:
            numbers = [int(arg.xreplace(values)) for arg in call.args]
        except TypeError:
            raise ConversionError(f"cannot resolve {call} at this compile's sizes") from None
        pick = max if type(call).__name__ == "Max" else min
        return call.args[numbers.index(pick(numbers))]

    expr = expr.replace(lambda e: type(e).__name__ in ("Max", "Min"), resolve)
    return _without_ceiling_division(expr)


def _without_ceiling_division(expr: Any) -> Any:
    """ceil(a / b), which torch writes CeilToInt(IntTrueDiv(a, b)) (the padded sizes of CUDA
    attention's outputs), as the floor division .lir dims have: (a + b - 1) // b, for b > 0."""
    from torch.utils._sympy.functions import FloorDiv

    def is_ceiling_division(e: Any) -> bool:
        return (
            type(e).__name__ == "CeilToInt"
            and len(e.args) == 1
            and type(e.args[0]).__name__ == "IntTrueDiv"
        )

    def floor_division(e: Any) -> Any:
        a, b = e.args[0].args
        if not (b.is_integer and b.is_positive):
            raise ConversionError(
                f"cannot write {e} as a .lir dim: its divisor may not be positive"
            )
        return FloorDiv(a + b - 1, b)

    return expr.replace(is_ceiling_division, floor_division)


def dtype_text(dtype: torch.dtype) -> str:
    if dtype not in _DTYPES:
        raise ConversionError(f"dtype {dtype} is not supported by Loupe")
    return _DTYPES[dtype]


# The device of the graph being converted: every tensor type of a CUDA graph carries it (a CPU
# scalar that feeds it is moved to the device before a run). Set for one conversion at a time.
_graph_device: contextvars.ContextVar[str] = contextvars.ContextVar("graph_device", default="cpu")


def graph_device(gm: torch.fx.GraphModule) -> str:
    """The CUDA device of the graph's tensor inputs, or "cpu"; a graph on two CUDA devices is
    refused."""
    found = set()
    for node in gm.graph.nodes:
        val = node.meta.get("val") if node.op == "placeholder" else None
        if isinstance(val, torch.Tensor) and val.device.type != "cpu":
            if val.device.type != "cuda":
                raise ConversionError(
                    f"input {node.name} is on {val.device}; Loupe runs on cpu and cuda"
                )
            found.add(f"cuda:{val.device.index or 0}")
    if len(found) > 1:
        raise ConversionError(
            f"the graph's inputs are on {sorted(found)}: Loupe compiles a graph for one device"
        )
    return found.pop() if found else "cpu"


def tensor_type(val: torch.Tensor, what: str) -> str:
    if val.layout != torch.strided:
        raise ConversionError(f"{what} has layout {val.layout}; Loupe supports dense tensors")
    if val.device.type not in ("cpu", "cuda"):
        raise ConversionError(f"{what} is on {val.device}; Loupe runs on cpu and cuda")
    return type_text(val.dtype, list(val.shape), list(val.stride()))


def type_text(dtype: torch.dtype, shape: list, stride: list | None = None) -> str:
    """The .lir type; strides are written only when they are not contiguous. As in torch
    (and Loupe's IR), the stride of a size-1 dim does not matter, so it is normalised."""
    text = f"{dtype_text(dtype)}[{','.join(dim_text(d) for d in shape)}]"
    device = _graph_device.get()
    if stride is None:
        return text if device == "cpu" else f"{text}<{device}>"
    row_major = _row_major_strides(shape)
    contiguous = [dim_text(s) for s in row_major]
    # A stride that torch spells differently from the row-major one but that has the same
    # value at this compile's sizes (Max(1, 24*(s0//8)) for 24*(s0//8)) is the row-major one.
    strides = [
        contiguous[i] if _is_one(shape[i]) or _same_hint(s, row_major[i]) else dim_text(s)
        for i, s in enumerate(stride)
    ]
    extras = [f"strides=[{','.join(strides)}]"] if strides != contiguous else []
    if device != "cpu":
        extras.append(device)
    return f"{text}<{','.join(extras)}>" if extras else text


def _hint(value: Any) -> int | None:
    """The value at the example inputs, without adding a guard."""
    if isinstance(value, torch.SymInt):
        hint = value.node.hint
        return int(hint) if hint is not None else None
    return int(value)


def _same_hint(a: Any, b: Any) -> bool:
    ha, hb = _hint(a), _hint(b)
    return ha is not None and ha == hb


def _is_one(dim: Any) -> bool:
    return not isinstance(dim, torch.SymInt) and int(dim) == 1


def _row_major_strides(shape) -> list:
    strides, running = [], 1
    for dim in reversed(list(shape)):
        strides.append(running)
        running = running * dim
    return list(reversed(strides))


# Backward ops return None for the gradients their output_mask did not ask for. Loupe's ops
# always produce every result (zeros where not asked), so the converter gives those results
# the type the op infers: for each result index, how to derive it from the bound arguments.
def _like(name: str):
    return lambda args: type_text(_val(args[name]).dtype, list(_val(args[name]).shape))


def _per_channel(name: str, like: str, channel_dim: int | None = None, attr: str | None = None):
    def derive(args):
        if args.get(name) is not None:
            return _like(name)(args)
        shape = list(args[attr]) if attr else [_val(args[like]).shape[channel_dim]]
        return type_text(_val(args[like]).dtype, shape)

    return derive


_UNREQUESTED_RESULTS = {
    "aten.native_layer_norm_backward": [
        _like("input"),
        _per_channel("weight", "input", attr="normalized_shape"),
        _per_channel("bias", "input", attr="normalized_shape"),
    ],
    "aten.native_batch_norm_backward": [
        _like("input"),
        _per_channel("weight", "input", channel_dim=1),
        _per_channel("weight", "input", channel_dim=1),
    ],
    "aten.convolution_backward": [
        _like("input"),
        _like("weight"),
        # One per output channel: grad_output's channels (a transposed weight is [C_in, C_out /
        # groups, ...]).
        lambda args: type_text(
            _val(args["grad_output"]).dtype, [_val(args["grad_output"]).shape[1]]
        ),
    ],
}


# Loupe allocates every result an op does not alias row-major (the runtime's buffers and the
# fallback's outputs), while torch may lay a fresh result out in another dense order: its CPU
# attention returns [batch, heads, seq, dim] in [batch, seq, heads, dim] memory, and the model
# then views it as [batch, seq, heads * dim] without a copy. Such a result is emitted row-major
# and repacked into torch's order (permute, clone, permute back), so the views downstream see
# torch's strides. Ops whose result aliases the input in Loupe although torch's schema says it
# does not keep their strides.
_VIEWS_WITHOUT_ALIAS_INFO = {"aten._unsafe_view"}


def _allocates_results(target: torch._ops.OpOverload) -> bool:
    if _op_name(target) in _VIEWS_WITHOUT_ALIAS_INFO:
        return False
    return all(result.alias_info is None for result in target._schema.returns)


def _strides_observed(value: torch.fx.Node | None) -> bool:
    """Whether torch's strides of a result (the node defining it, or for a multi-result op the
    getitem reading it; None when nothing reads it) matter downstream: it is a graph output, or a
    view (or anything but an op computing a new tensor) reads it, whose own strides follow from
    it. An op that computes a new tensor reads any layout, so a result only such ops read stays
    row-major: no repacking copies between them (a channels-last CNN's every convolution, norm
    and activation result)."""
    if value is None:
        return False
    for user in value.users:
        if user.op != "call_function" or not isinstance(user.target, torch._ops.OpOverload):
            return True  # the graph's output, a getitem of a tuple result, anything else
        if not _allocates_results(user.target):
            return True
        if user.target is torch.ops.aten.native_dropout.default:
            return True  # torch draws its mask in the memory order of its input's layout
    return False


def _physical_order(val: torch.Tensor, what: str) -> list[int] | None:
    """None for a row-major result; else its dims from outermost to innermost in memory."""
    if tensor_type(val, what) == type_text(val.dtype, list(val.shape)):
        return None
    if any(_hint(d) == 0 for d in val.shape):  # no element: any layout is the row-major one
        return None
    order, _ = torch._prims_common.compute_elementwise_output_logical_to_physical_perm(val)
    dense = _row_major_strides([val.shape[d] for d in order])
    strides = [None] * len(order)
    for position, dim in enumerate(order):
        strides[dim] = dense[position]
    if type_text(val.dtype, list(val.shape), strides) != tensor_type(val, what):
        raise ConversionError(
            f"{what} has shape {list(val.shape)} and strides {list(val.stride())},"
            " not a dense layout"
        )
    return list(order)


def _val(value: Any) -> Any:
    return value.meta["val"] if isinstance(value, torch.fx.Node) else value


def _unrequested_result(target: Any, index: int, args: dict) -> str | None:
    """The type of a result the op did not compute (None in FX): as torch would have made it,
    where a rule knows, else an empty tensor of the op's first tensor argument's dtype (the
    gradient of an absent bias, say): nothing reads it, and the fallback leaves it empty."""
    rules = _UNREQUESTED_RESULTS.get(_op_name(target))
    if rules and index < len(rules):
        return rules[index](args)
    for value in args.values():
        val = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
        if isinstance(val, torch.Tensor):
            return type_text(val.dtype, [0])
    return None


def _symbolic_value(value: Any) -> Any:
    """A node standing for a SymInt is the expression it computes; one standing for a plain
    int (an op's int result, say) is that int."""
    if isinstance(value, torch.fx.Node) and _is_scalar_result(value.meta.get("val")):
        return value.meta["val"]
    return value


def _is_scalar_result(value: Any) -> bool:
    """An int an op returns beside its tensors (cuDNN attention's max_q and max_k): torch's
    fake run knows its value (a constant, or an expression of the graph's symbols), so its uses
    spell it and the op's Loupe node leaves it out of its results, as run_fallback does."""
    return isinstance(value, (int, torch.SymInt))


def attr_text(value: Any, what: str) -> str:
    value = _symbolic_value(value)
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, torch.SymInt)):
        return dim_text(value)
    if isinstance(value, (torch.SymFloat, torch.SymBool)):
        raise ConversionError(f"{what} is a symbolic float or bool, which Loupe cannot hold")
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, torch.dtype):
        return dtype_text(value)
    if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
        return quote(str(value).removeprefix("torch."))
    if isinstance(value, (list, tuple)):
        items = [_symbolic_value(v) for v in value]
        if any(isinstance(v, float) for v in items):
            items = [float(v) for v in items]
        return "[" + ", ".join(attr_text(v, what) for v in items) + "]"
    raise ConversionError(f"{what} is a {type(value).__name__}, which has no .lir spelling")


def _is_tensor_argument(arg_type: torch._C.JitType) -> bool:
    while isinstance(arg_type, (torch._C.OptionalType, torch._C.ListType)):
        arg_type = arg_type.getElementType()
    return isinstance(arg_type, torch._C.TensorType)


def module_path(node: torch.fx.Node) -> str:
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    path = _DYNAMO_ROOT.sub("", path)
    path = re.sub(r"getattr\((.*?), '([^']*)'\)", r"\1.\2", path)
    return re.sub(r"\[(\d+)\]", r".\1", path)


def user_frame(node: torch.fx.Node) -> tuple[str, int, str] | None:
    """The innermost frame of the node's user stack trace: (file, line, function)."""
    trace = node.meta.get("stack_trace") or ""
    # The last frame: matched from its start, not by scanning every frame of a deep stack.
    start = trace.rfind('File "')
    match = _FRAME.match(trace, start) if start >= 0 else None
    if match is None:
        frames = _FRAME.findall(trace)  # a last "File" that is no frame header
        if not frames:
            return None
        file, line, func = frames[-1]
    else:
        file, line, func = match.groups()
    return file, int(line), func


def location(node: torch.fx.Node) -> str:
    frame = user_frame(node)
    if frame is None:
        return ""
    path = module_path(node)
    return f"  loc({quote(frame[0])}:{frame[1]}" + (f" {quote(path)})" if path else ")")


def _op_name(target: torch._ops.OpOverload) -> str:
    name = str(target).removesuffix(".default")
    return name if _WORD.match(name) else quote(name)


# The attention ops whose dropout seed and offset torch places by whether a CUDA graph is being
# captured when they run: efficient attention's forward returns them as CPU tensors outside a
# capture (device tensors inside one, filled by its kernel), and its backward reads them
# through host pointers outside a capture. Flash and cuDNN attention keep theirs on the device
# either way (flash's rng_state, cuDNN's unpacked by a kernel): their graphs compile.
_HOST_DROPOUT_STATE_OPS = {
    "aten._scaled_dot_product_efficient_attention",
    "aten._scaled_dot_product_efficient_attention_backward",
    "aten._efficient_attention_forward",
    "aten._efficient_attention_backward",
}


def _refuse_dropout_state_placed_at_run_time(
    node: torch.fx.Node, target: torch._ops.OpOverload
) -> None:
    """Raises ConversionError for a CUDA graph's efficient attention that draws dropout (a
    non-zero dropout_p), forward or backward (_HOST_DROPOUT_STATE_OPS). The traced graph says
    its seed and offset are device tensors; Loupe's CUDA graphs hold every value on the device,
    so the backward would read a device address on the host (it crashed the process). The
    graph runs eagerly instead, and the trace says why. Without dropout the seed and offset are
    never read, and the graph compiles."""
    if _graph_device.get() == "cpu" or _op_name(target) not in _HOST_DROPOUT_STATE_OPS:
        return
    bound = {arg.name: value for arg, value in _bind_schema(target, node)}
    dropout = bound.get("dropout_p")
    if isinstance(dropout, (int, float)) and dropout != 0:
        raise ConversionError(
            f"{node.name} ({target}) draws dropout (dropout_p={dropout}) with a seed and offset "
            "that torch puts on the host outside a CUDA-graph capture and its backward reads "
            "there; Loupe holds a CUDA graph's values on the device, so this graph runs eagerly"
        )


def _bind_schema(target: torch._ops.OpOverload, node: torch.fx.Node) -> list[tuple[Any, Any]]:
    """(schema argument, value) for each argument the node passes, in schema order. An optional
    tensor the node leaves out is bound to None, so that every tensor argument has its operand
    slot (`none`) and the operand count is the op's whatever the call spells."""
    schema = target._schema
    given = dict(zip((a.name for a in schema.arguments), node.args))
    given.update(node.kwargs)
    return [
        (a, given.get(a.name))
        for a in schema.arguments
        if a.name in given
        or (_is_tensor_argument(a.type) and isinstance(a.type, torch._C.OptionalType))
    ]


# Ops run as a registered op with the same argument names and results. unsafe_split and
# unsafe_split_with_sizes are the splits (views in torch too, whose schema only omits it). The
# unchecked index_put runs as the checked one: an index out of range is then an error instead of
# undefined behaviour. (_unsafe_index, which upsampling decomposes to, is registered: generated
# kernels read it where it is consumed, compiler/ops/in_place_gather.h.) A number raised to a
# tensor (ALiBi's 2 ** -slopes) is pow.Tensor_Tensor with the number as a 0-d tensor
# (_Converter._number_operand).
_EQUIVALENT_FORMS = {
    # Views whose schema does not say they alias (RNN cells chunk their gates with them).
    torch.ops.aten.unsafe_split.Tensor: torch.ops.aten.split.Tensor,
    torch.ops.aten.unsafe_split_with_sizes.default: torch.ops.aten.split_with_sizes.default,
    torch.ops.aten._unsafe_index_put.default: torch.ops.aten.index_put.default,
    torch.ops.aten.pow.Scalar: torch.ops.aten.pow.Tensor_Tensor,
}


def _is_number(value: Any) -> bool:
    """A Python number, or a node that computes one: a dynamic size (`x * x.shape[0]` under
    dynamic shapes passes the SymInt node where a number would be)."""
    if isinstance(value, (bool, int, float)):
        return True
    return isinstance(value, torch.fx.Node) and isinstance(
        value.meta.get("val"), (torch.SymInt, torch.SymFloat)
    )


def _resolve_overload(node: torch.fx.Node, registered: set[str]) -> torch._ops.OpOverload:
    """aot_autograd keeps Python numbers in Tensor slots (``aten.mul.Tensor(x, 2.0)``); Loupe
    spells those with the op's ``.Scalar`` overload, where the number is an attribute. An op
    without one (or whose .Scalar overload Loupe has no kernel for) keeps its overload, and the
    converter passes the number as a 0-d tensor (_Converter._number_operand). Ops with an
    equivalent registered form become it (_EQUIVALENT_FORMS)."""
    target = _EQUIVALENT_FORMS.get(node.target, node.target)
    scalars = [
        arg.name
        for arg, value in _bind_schema(target, node)
        if _is_tensor_argument(arg.type) and _is_number(value)
    ]
    if not scalars:
        return target
    scalar = getattr(target.overloadpacket, "Scalar", None)
    if (
        scalar is None
        or [a.name for a in scalar._schema.arguments] != [a.name for a in target._schema.arguments]
        or any(_is_tensor_argument(a.type) for a in scalar._schema.arguments if a.name in scalars)
        or _op_name(scalar) not in registered
    ):
        return target
    return scalar


# Where dropout's random masks come from (fx_to_lir's dropout_rng).
DROPOUT_RNG = ("loupe", "torch")


class _Converter:
    def __init__(self, gm: torch.fx.GraphModule, registered: set[str], dropout_rng: str = "loupe"):
        if dropout_rng not in DROPOUT_RNG:
            raise ValueError(f"dropout_rng must be one of {DROPOUT_RNG}, not {dropout_rng!r}")
        self.gm = gm
        self.registered = registered
        self.dropout_rng = dropout_rng
        self.names: dict[torch.fx.Node, str] = {}  # tensor-valued nodes and getitems
        self.results: dict[torch.fx.Node, list[str]] = {}  # multi-output nodes
        self.lines: list[str] = []
        self.inputs: list[tuple[str, Any]] = []
        self.signature: list[str] = []
        self.fallbacks: dict[str, FallbackCall] = {}
        self.symbols: dict[Any, tuple[int, int | None]] = {}
        self.sized_inputs: list[int] = []

    def convert(self, graph_name: str) -> LirGraph:
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for i, node in enumerate(placeholders):
            self._add_input(node, ("arg", i))
        for node in self.gm.graph.nodes:
            if node.op == "get_attr":
                self._add_input(node, ("attr", node.target))
        output_types, outputs, returned = [], [], []
        for node in self.gm.graph.nodes:
            if node.op == "call_function":
                self._call(node)
            elif node.op == "output":
                returns = node.args[0]
                for out in returns if isinstance(returns, (list, tuple)) else [returns]:
                    if out is None:
                        outputs.append(None)
                        continue
                    if isinstance(out, int) and not isinstance(out, bool):
                        outputs.append(sympy.Integer(out))  # an int the trace baked in
                        continue
                    if isinstance(out, torch.fx.Node) and _is_scalar_result(out.meta.get("val")):
                        scalar = out.meta["val"]
                        outputs.append(
                            scalar.node.expr
                            if isinstance(scalar, torch.SymInt)
                            else sympy.Integer(scalar)
                        )
                        continue
                    if not isinstance(out, torch.fx.Node) or out not in self.names:
                        raise ConversionError(
                            f"graph output {out} is not a tensor; Loupe returns tensors only"
                        )
                    outputs.append(len(returned))
                    returned.append(value_ref(self.names[out]))
                    output_types.append(tensor_type(out.meta["val"], f"output {out.name}"))
            elif node.op != "placeholder" and node.op != "get_attr":
                raise ConversionError(f"node {node.name} is a {node.op}, which Loupe does not take")
        header = (
            f"graph @{graph_name}({', '.join(self.signature)}) -> ({', '.join(output_types)}) {{"
        )
        body = self.lines + [f"  return {', '.join(returned)}" if returned else "  return", "}"]
        text = "\n".join([header, *body]) + "\n"
        return LirGraph(
            text,
            self.inputs,
            outputs,
            fallbacks=self.fallbacks,
            symbols=self.symbols,
            sized_inputs=self.sized_inputs,
        )

    def _add_input(self, node: torch.fx.Node, source: tuple[str, Any]) -> None:
        val = node.meta.get("val")
        position = len(self.inputs)
        if isinstance(val, torch.SymInt):
            type_text = f"index<{dim_text(val)}>"
            self.symbols.setdefault(val.node.expr, (position, None))
            self.sized_inputs.append(position)
        elif isinstance(val, torch.Tensor):
            type_text = tensor_type(val, f"input {node.name}")
            if any(isinstance(size, torch.SymInt) for size in val.shape):
                self.sized_inputs.append(position)
            for dim, size in enumerate(val.shape):
                if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
                    self.symbols.setdefault(size.node.expr, (position, dim))
        else:
            raise ConversionError(f"input {node.name} is a {type(val).__name__}, not a tensor")
        self.names[node] = node.name
        self.inputs.append(source)
        self.signature.append(f"{value_ref(node.name)}: {type_text}")

    def _call(self, node: torch.fx.Node) -> None:
        val = node.meta.get("val")
        if node.target is operator.getitem:
            source, index = node.args
            if source not in self.results:
                raise ConversionError(f"{node.name} indexes {source}, not a multi-output op")
            self.names[node] = self.results[source][index]
            return
        if _is_scalar_result(val):
            return  # a symbolic scalar: its uses spell its expression
        if not isinstance(node.target, torch._ops.OpOverload):
            raise ConversionError(f"node {node.name} calls {node.target}, which is not an aten op")

        drops = node.target is torch.ops.aten.native_dropout.default and self.dropout_rng == "torch"
        if drops and self._dropout_with_torch_rng(node):
            return
        target = _resolve_overload(node, self.registered)
        _refuse_dropout_state_placed_at_run_time(node, target)
        operands, attrs, template = [], [], {}
        for arg, value in _bind_schema(target, node):
            if _is_tensor_argument(arg.type):
                if isinstance(value, (list, tuple)):
                    template[arg.name] = [self._operand(v, operands) for v in value]
                elif isinstance(value, (bool, int, float)):
                    template[arg.name] = self._number_operand(node, arg.name, value, operands)
                else:
                    template[arg.name] = self._operand(value, operands)
            else:
                template[arg.name] = value
                attrs.append(f"{arg.name}={attr_text(value, f'{node.name}.{arg.name}')}")

        vals = list(val) if isinstance(val, (list, tuple)) else [val]
        bound = {arg.name: value for arg, value in _bind_schema(target, node)}
        vals = [
            v if v is not None else _unrequested_result(target, i, bound)
            for i, v in enumerate(vals)
        ]
        if isinstance(val, (list, tuple)):
            names = [f"{node.name}_{i}" for i in range(len(vals))]
            for user in node.users:
                if user.target is operator.getitem:
                    names[user.args[1]] = user.name
            self.results[node] = names
        else:
            names = [node.name]
            self.names[node] = node.name
        tensors = [(n, v) for n, v in zip(names, vals) if not _is_scalar_result(v)]
        names, vals = [n for n, _ in tensors], [v for _, v in tensors]
        if not vals or not all(isinstance(v, (torch.Tensor, str)) for v in vals):
            raise ConversionError(f"node {node.name} ({node.target}) does not return tensors only")
        types = [
            v if isinstance(v, str) else tensor_type(v, f"result of {node.name}") for v in vals
        ]
        repacks = []
        if _allocates_results(target):
            names = list(names)
            multiple = isinstance(val, (list, tuple))
            readers = {user.name: user for user in node.users if user.target is operator.getitem}
            for i, v in enumerate(vals):
                if isinstance(v, str):
                    continue
                row_major = type_text(v.dtype, list(v.shape))
                if types[i] == row_major:
                    continue
                if not _strides_observed(readers.get(names[i]) if multiple else node):
                    # Row-major whatever torch's layout, even one that is no dense order (a
                    # functional copy into a strided slice keeps the slice's strides).
                    types[i] = row_major
                    continue
                order = _physical_order(v, f"result of {node.name}")
                if order is None:
                    continue
                types[i] = row_major
                repacks.append((names[i], v, order))
                names[i] += ".rowmajor"

        op = _op_name(target)
        dtypes = tuple(v.dtype if isinstance(v, torch.Tensor) else None for v in vals)
        if op not in self.registered:
            self.fallbacks[names[0]] = self._fallback_call(target, node.name, template, dtypes)
        elif _graph_device.get() != "cpu":
            try:
                self.fallbacks[names[0]] = self._fallback_call(target, node.name, template, dtypes)
            except ConversionError:
                pass  # Loupe runs it; kernel selection never leaves it to the fallback
        line = f"  {', '.join(value_ref(n) for n in names)} = {op}({', '.join(operands)})"
        if attrs:
            line += " {" + ", ".join(sorted(attrs)) + "}"
        line += " : " + (types[0] if len(types) == 1 else f"({', '.join(types)})")
        self.lines.append(line + location(node))
        for name, v, order in repacks:
            self._repack(name, v, order, location(node))

    def _dropout_with_torch_rng(self, node: torch.fx.Node) -> bool:
        """Spells a training native_dropout as torch's CPU kernel computes it:
        keep = bernoulli(empty_like(input), 1 - p), output = input * keep / (1 - p), mask = keep
        as bool. Only the draw (aten.bernoulli.p, which Loupe does not register) runs in torch,
        from the generator eager uses and in the order eager draws, so the masks are eager's;
        the rest compiles. False leaves the node to the ordinary conversion."""
        bound = {arg.name: value for arg, value in _bind_schema(node.target, node)}
        p, train, source = bound["p"], bound.get("train"), bound["input"]
        if train is False or not 0 < float(p) < 1:
            return False
        names = [f"{node.name}_{i}" for i in range(2)]
        for user in node.users:
            if user.target is operator.getitem:
                names[user.args[1]] = user.name
        self.results[node] = names
        output, mask = node.meta["val"]
        orders = [_physical_order(v, f"result of {node.name}") for v in (output, mask)]
        # Results in another layout than row-major are computed row-major, then repacked.
        defined = [name + (".rowmajor" if order else "") for name, order in zip(names, orders)]
        keep, kept = value_ref(names[0] + ".keep"), value_ref(names[0] + ".kept")
        values, loc = type_text(output.dtype, list(output.shape)), location(node)
        x = value_ref(self.names[source])
        self.lines += self._draw_keep(names[0] + ".keep", x, _val(source), 1 - p, orders[1], loc)
        self.lines += [
            f"  {kept} = aten.mul.Tensor({x}, {keep}) : {values}{loc}",
            f"  {value_ref(defined[0])} = aten.mul.Scalar({kept})"
            f" {{other={attr_text(1 / (1 - p), node.name)}}} : {values}{loc}",
            f"  {value_ref(defined[1])} = prims.convert_element_type({keep}) {{dtype=bool}}"
            f" : {type_text(mask.dtype, list(mask.shape))}{loc}",
        ]
        for name, val, order in zip(names, (output, mask), orders):
            if order:
                self._repack(name, val, order, loc)
        return True

    def _draw_keep(
        self, name: str, x: str, like: torch.Tensor, p: float, order, loc: str
    ) -> list[str]:
        """Lines defining `name` as torch's bernoulli(p) draw shaped like `x` (whose value is
        `like`). torch draws dropout's mask in the memory order of its layout (`order`, None for
        row-major) while bernoulli.p draws in the logical order of its operand, so the draw is
        made on x's dims permuted into memory order, then permuted back."""
        draw = value_ref(name + (".physical" if order else ""))
        shape = list(like.shape) if order is None else [like.shape[d] for d in order]
        source = x if order is None else value_ref(name + ".source")
        self.fallbacks[name + (".physical" if order else "")] = FallbackCall(
            torch.ops.aten.bernoulli.p, (Slot(0), p), {}, (like.dtype,)
        )
        lines = []
        if order:
            strides = [like.stride()[d] for d in order]
            lines.append(
                f"  {source} = aten.permute({x}) {{dims={attr_text(order, name)}}}"
                f" : {type_text(like.dtype, shape, strides)}{loc}"
            )
        drawn_type = type_text(like.dtype, shape)
        lines.append(
            f"  {draw} = aten.bernoulli.p({source}) {{p={attr_text(p, name)}}} : {drawn_type}{loc}"
        )
        if order:
            inverse = [order.index(d) for d in range(len(order))]
            packed = _row_major_strides(shape)
            strides = [packed[inverse[d]] for d in range(len(order))]
            lines.append(
                f"  {value_ref(name)} = aten.permute({draw}) {{dims={attr_text(inverse, name)}}}"
                f" : {type_text(like.dtype, list(like.shape), strides)}{loc}"
            )
        return lines

    def _repack(self, name: str, val: torch.Tensor, order: list[int], loc: str) -> None:
        """Defines `name` as the row-major `name.rowmajor` laid out in torch's `order`."""
        shape = [val.shape[d] for d in order]
        rowmajor = _row_major_strides(list(val.shape))
        inverse = [order.index(d) for d in range(len(order))]
        physical, packed = value_ref(name + ".physical"), value_ref(name + ".packed")
        self.lines += [
            f"  {physical} = aten.permute({value_ref(name + '.rowmajor')})"
            f" {{dims={attr_text(order, name)}}}"
            f" : {type_text(val.dtype, shape, [rowmajor[d] for d in order])}{loc}",
            f"  {packed} = aten.clone({physical}) : {type_text(val.dtype, shape)}{loc}",
            f"  {value_ref(name)} = aten.permute({packed}) {{dims={attr_text(inverse, name)}}}"
            f" : {tensor_type(val, name)}{loc}",
        ]

    def _number_operand(
        self, node: torch.fx.Node, arg: str, value: Any, operands: list[str]
    ) -> Slot:
        """A Python number in a tensor slot of an op without a .Scalar overload (floor division
        by a number decomposes to div.Tensor_mode(x, 2)) becomes a 0-d tensor. Its dtype keeps
        torch's promotion: a 0-d operand, like a number, does not decide the result's dtype
        against a tensor of the same kind, so a float takes the result's floating dtype (the
        default one otherwise), an int int64, a bool bool."""
        if isinstance(value, bool):
            dtype = torch.bool
        elif isinstance(value, int):
            dtype = torch.int64
        else:
            result = node.meta.get("val")
            floating = isinstance(result, torch.Tensor) and result.dtype.is_floating_point
            dtype = result.dtype if floating else torch.get_default_dtype()
        name = f"{node.name}.{arg}"
        self.lines.append(
            f"  {value_ref(name)} = aten.scalar_tensor() {{dtype={dtype_text(dtype)}, "
            f"s={attr_text(value, name)}}} : {dtype_text(dtype)}[]{location(node)}"
        )
        operands.append(value_ref(name))
        return Slot(len(operands) - 1)

    def _operand(self, node: torch.fx.Node | None, operands: list[str]) -> Slot:
        # Absent optional tensors take a slot too, so slots match the runtime's operand list.
        if node is None:
            operands.append("none")
        elif node not in self.names:
            raise ConversionError(f"operand {node.name} is not a tensor value")
        else:
            operands.append(value_ref(self.names[node]))
        return Slot(len(operands) - 1)

    def _fallback_call(
        self, target: torch._ops.OpOverload, name: str, template: dict[str, Any], dtypes: tuple
    ) -> FallbackCall:
        """The op's arguments with its operands as Slots and its symbolic ints as SymValues,
        evaluated at run time from the graph's symbols (self.symbols, bound from the inputs)."""
        symbols = self.symbols

        def evaluable(node: torch.fx.Node) -> SymValue | int:
            val = node.meta.get("val")
            if isinstance(val, int):  # an int another op returned, known at compile time
                return val
            if isinstance(val, torch.SymInt):
                expr = val.node.expr
                if all(symbol in symbols for symbol in expr.free_symbols):
                    return SymValue(expr)
            raise ConversionError(
                f"{name} ({target}) is run by the fallback but takes {node.name}, which is not a "
                "tensor or an int the graph's inputs determine"
            )

        args, kwargs = [], {}
        for arg in target._schema.arguments:
            if arg.name not in template:
                continue
            value = torch.fx.node.map_arg(template[arg.name], evaluable)
            if arg.kwarg_only or kwargs:
                kwargs[arg.name] = value
            else:
                args.append(value)
        return FallbackCall(target, tuple(args), kwargs, dtypes)


def fx_to_lir(
    gm: torch.fx.GraphModule, graph_name: str, registered: set[str], *, dropout_rng: str = "loupe"
) -> LirGraph:
    """Converts `gm`; raises ConversionError naming the node Loupe cannot represent.

    dropout_rng: "loupe" compiles aten.native_dropout with Loupe's own generator (nothing left
    to the fallback, but the masks differ from eager's); "torch" draws each training dropout's
    mask with torch's generator through one fallback node (aten.bernoulli.p) and compiles the
    rest, so that training with dropout gives eager's results."""
    device = graph_device(gm)
    token = _graph_device.set(device)
    try:
        lir = _Converter(gm, registered, dropout_rng).convert(graph_name)
    finally:
        _graph_device.reset(token)
    lir.device = device
    return lir


def symbolic_outputs(lir: LirGraph, inputs: list) -> dict[Any, int]:
    """Binds the graph's symbols from the runtime inputs (as passed to the executable)."""
    bindings = {}
    for symbol, (position, dim) in lir.symbols.items():
        value = inputs[position]
        bindings[symbol] = int(value) if dim is None else value.shape[dim]
    return bindings


# torch.Tensor.__dlpack__ without its Python checks (a result is never a tensor that needs grad).
_to_dlpack = torch._C._to_dlpack


def run_fallback(call: FallbackCall, inputs: list, request: Any) -> list:
    """Runs an opaque node's aten op on the runtime's tensors. `request` (a FallbackRequest)
    gives, only when asked, an output's planned buffer (`output(r)`) and the run's symbol values
    by name (`symbols()`) for the op's symbolic int arguments. Returns, per output, the op's
    result as a DLPack capsule when the runtime can take it as it is (its own memory, the
    output's dtype: no copy), else None after copying it into the output, or None for a result
    the node never asked for (nothing reads it)."""
    args, kwargs = call.args, call.kwargs
    if call.fills:
        symbols = request.symbols() if call.symbolic else None

        def fill(value):
            if isinstance(value, Slot):
                return inputs[value.index]
            if isinstance(value, SymValue):
                return int(
                    value.expr.xreplace({s: symbols[s.name] for s in value.expr.free_symbols})
                )
            return value

        args = torch.fx.node.map_aggregate(args, fill)
        if kwargs:
            kwargs = torch.fx.node.map_aggregate(kwargs, fill)
    result = call.target(*args, **kwargs)
    results = result if isinstance(result, (list, tuple)) else [result]
    results = [value for value in results if not _is_scalar_result(value)]  # as converted
    taken = []
    for r, value in enumerate(results):
        if value is None or call.dtypes[r] is None:  # not asked for (output_mask): never read
            taken.append(None)
        elif (
            value.dtype == call.dtypes[r]
            and not value._is_view()
            and all(value is not given for given in inputs)
        ):
            taken.append(_to_dlpack(value))
        else:
            request.output(r).copy_(value)
            taken.append(None)
    return taken
