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
    # What a compiled optimizer step has besides prims.fma (Adam's and AdamW's moving averages
    # and update): pointwise ops that fuse with the rest of the step.
    "lerp",
    "addcdiv",
    # A classifier's loss (cross_entropy, nll_loss): the picked log-probabilities a gather and a
    # masked mean, the gradient a scatter of the weights into zeros.
    "nll_loss_forward",
    "nll_loss_backward",
    "nll_loss2d_forward",
    "nll_loss2d_backward",
    # Data movement torch writes as views, slices and cat: Swin's shifted windows (roll),
    # super-resolution heads (pixel_shuffle, pixel_unshuffle).
    "roll",
    "pixel_shuffle",
    "pixel_unshuffle",
)


def _masked_attention(q, k, v, mask, mask_type):
    """Attention as torch's fused transformer ops compute it: a mask of any dtype is a boolean
    one (nonzero: masked out; `_canonical_mask` made the user's boolean masks 0 and -inf before
    the call), of shape [T, T] (mask_type 0), [B, T] (1, key padding) or [B, H, T, T] (2). A
    query with every key masked out gets what the layer's unfused path gives it (attention's
    zeros), where the fused op's masked softmax gives NaN."""
    if mask is None:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)
    batch, _, length, _ = q.shape
    masked = mask if mask.dtype == torch.bool else mask != 0
    if mask_type == 1:
        masked = masked.view(batch, 1, 1, length)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=~masked)


def _transformer_encoder_layer_fwd(
    src,
    embed_dim,
    num_heads,
    qkv_weight,
    qkv_bias,
    proj_weight,
    proj_bias,
    use_gelu,
    norm_first,
    eps,
    norm_weight_1,
    norm_bias_1,
    norm_weight_2,
    norm_bias_2,
    ffn_weight_1,
    ffn_bias_1,
    ffn_weight_2,
    ffn_bias_2,
    mask=None,
    mask_type=None,
):
    """`nn.TransformerEncoderLayer`'s inference fast path (eval mode, no grad, batch first) as
    the ops of its slow path, so that Loupe compiles the layer instead of handing all of it to
    the fallback."""
    functional = torch.nn.functional
    batch, length, _ = src.shape
    head_dim = embed_dim // num_heads

    def attention(x):
        qkv = functional.linear(x, qkv_weight, qkv_bias)
        q, k, v = qkv.view(batch, length, 3, num_heads, head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        out = _masked_attention(q, k, v, mask, mask_type)
        return functional.linear(
            out.transpose(1, 2).reshape(batch, length, embed_dim), proj_weight, proj_bias
        )

    def feed_forward(x):
        hidden = functional.linear(x, ffn_weight_1, ffn_bias_1)
        hidden = functional.gelu(hidden) if use_gelu else functional.relu(hidden)
        return functional.linear(hidden, ffn_weight_2, ffn_bias_2)

    def norm_1(x):
        return functional.layer_norm(x, (embed_dim,), norm_weight_1, norm_bias_1, eps)

    def norm_2(x):
        return functional.layer_norm(x, (embed_dim,), norm_weight_2, norm_bias_2, eps)

    if norm_first:
        x = src + attention(norm_1(src))
        return x + feed_forward(norm_2(x))
    x = norm_1(src + attention(src))
    return norm_2(x + feed_forward(x))


# Loupe's own decompositions, of fused ops torch has none for.
_OWN_DECOMPOSITIONS = {
    "_transformer_encoder_layer_fwd": _transformer_encoder_layer_fwd,
}


@functools.lru_cache(maxsize=1)
def decompositions() -> dict:
    """torch's decompositions of _DECOMPOSED and Loupe's own, less any op Loupe's registry has
    (a registered op stays whole: its own kernel, and the trace shows it)."""
    from torch._decomp import get_decompositions

    registered = set(_C.registered_ops())
    ops = [getattr(torch.ops.aten, name) for name in _DECOMPOSED if hasattr(torch.ops.aten, name)]
    table = dict(get_decompositions(ops))
    for name, fn in _OWN_DECOMPOSITIONS.items():
        if hasattr(torch.ops.aten, name):
            table[getattr(torch.ops.aten, name).default] = fn
    return {
        op: fn
        for op, fn in table.items()
        if str(op).removesuffix(".default") not in registered and not op._schema.is_mutable
    }
