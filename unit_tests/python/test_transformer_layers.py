"""torch's own transformer layers through torch.compile(backend="loupe") on the CPU. In eval mode
without grad, `nn.TransformerEncoderLayer` (and so `nn.TransformerEncoder`) calls one fused op,
`aten._transformer_encoder_layer_fwd`; Loupe decomposes it into the layer's projections,
attention, layer norms and feed-forward, which it compiles, and matches eager (torch's fused
kernel) and a float64 run of the layer's unfused path, with every mask form the layer passes.
"""

import copy

import pytest
import torch
from torch import nn

from conftest import query

pytest.importorskip("loupe._C", reason="the loupe package is not installed (pip install .)")

BATCH, LENGTH, WIDTH, HEADS = 3, 10, 32, 4


def masks(kind):
    """The layer's keyword arguments for a mask kind. Sequences 0 and 2 are padded from
    positions 7 and 3; `all_padded` pads all of sequence 1 as well."""
    causal_bool = torch.triu(torch.ones(LENGTH, LENGTH, dtype=torch.bool), 1)
    padding = torch.zeros(BATCH, LENGTH, dtype=torch.bool)
    padding[0, 7:] = True
    padding[2, 3:] = True
    if kind == "none":
        return {}
    if kind == "causal_float":
        return {"src_mask": nn.Transformer.generate_square_subsequent_mask(LENGTH)}
    if kind == "causal_bool":
        return {"src_mask": causal_bool}
    if kind == "padding":
        return {"src_key_padding_mask": padding}
    if kind == "both":
        return {"src_mask": causal_bool, "src_key_padding_mask": padding}
    if kind == "all_padded":
        padding[1, :] = True
        return {"src_key_padding_mask": padding}
    raise ValueError(kind)


def unfused_float64(layer, x, kwargs):
    """The layer's unfused path in float64: in training mode (dropout 0) it never takes the
    fused op."""
    reference = copy.deepcopy(layer).double().train()
    converted = {
        name: mask.double() if mask.is_floating_point() else mask for name, mask in kwargs.items()
    }
    return reference(x.double(), **converted)


@pytest.mark.parametrize("mask_kind", ["none", "causal_float", "causal_bool", "padding", "both"])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_fast_path_is_compiled(trace_path, mask_kind, norm_first, activation):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(
        WIDTH,
        HEADS,
        2 * WIDTH,
        dropout=0.0,
        activation=activation,
        batch_first=True,
        norm_first=norm_first,
    ).eval()
    x = torch.randn(BATCH, LENGTH, WIDTH)
    kwargs = masks(mask_kind)
    compiled = torch.compile(layer, backend="loupe", options={"trace": trace_path})
    with torch.no_grad():
        eager = layer(x, **kwargs)
        got = compiled(x, **kwargs)
        reference = unfused_float64(layer, x, kwargs)
    torch.testing.assert_close(got, eager, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got.double(), reference, rtol=1e-5, atol=1e-5)
    statuses = query(trace_path, "SELECT status FROM compiles")
    assert statuses and all(status == "ok" for (status,) in statuses), statuses
    fallbacks = query(trace_path, "SELECT op_summary FROM kernels WHERE kind = 'fallback'")
    assert not fallbacks, fallbacks


def test_a_sequence_with_every_key_masked_out_gets_the_unfused_paths_result(trace_path):
    """torch's fused op gives a sequence whose every key is masked out NaN (its masked softmax of
    no keys), where the layer's unfused path (training mode, or any torch.compile backend that
    traces the layer's ops) gives finite values. Compiled, the layer gives the unfused path's
    result there and eager's everywhere else."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(WIDTH, HEADS, 2 * WIDTH, dropout=0.0, batch_first=True)
    layer.eval()
    x = torch.randn(BATCH, LENGTH, WIDTH)
    kwargs = masks("all_padded")
    compiled = torch.compile(layer, backend="loupe", options={"trace": trace_path})
    with torch.no_grad():
        eager = layer(x, **kwargs)
        got = compiled(x, **kwargs)
        reference = unfused_float64(layer, x, kwargs)
    assert eager[1].isnan().all() and not eager[[0, 2]].isnan().any()
    torch.testing.assert_close(got[[0, 2]], eager[[0, 2]], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got.double(), reference, rtol=1e-5, atol=1e-5)


def test_a_stack_of_layers_is_one_compiled_graph(trace_path):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(WIDTH, HEADS, 2 * WIDTH, dropout=0.1, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False).eval()
    x = torch.randn(BATCH, LENGTH, WIDTH)
    compiled = torch.compile(encoder, backend="loupe", options={"trace": trace_path})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), encoder(x), rtol=1e-5, atol=1e-5)
    assert query(trace_path, "SELECT count(*), min(status) FROM compiles") == [(1, "ok")]
    fallbacks = query(trace_path, "SELECT op_summary FROM kernels WHERE kind = 'fallback'")
    assert not fallbacks, fallbacks
