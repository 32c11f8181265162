"""The ops decomposed while aot_autograd traces: torch's own decompositions of a chosen list of
ops Loupe has no kernel for, so that what reaches Loupe is ops it compiles
(docs/python-adapter.md, "Decomposed while tracing")."""

from __future__ import annotations

import functools

import torch

from . import _C

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
    "mish",
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
