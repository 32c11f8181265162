"""Transformer models no one here wrote, through torch.compile(backend="loupe") on the CPU:
padded batches with attention masks (the mask building runs bitwise_and, new_ones,
index.Tensor and cumsum) and training with dropout (attention's math path runs _safe_softmax),
forward and backward against eager, with nothing left to the fallback but, when asked for,
torch's draws of dropout masks.

The models are tiny configs with random weights (transformer_models.py, shared with
samples/survey_fallbacks.py, which surveys a dozen of them).
"""

import copy

import pytest
import torch

from conftest import query, show_json

pytest.importorskip("transformers")
import transformer_models  # noqa: E402

pytest.importorskip("loupe.backend", reason="the loupe package is not installed (pip install .)")


def forward_backward(model, inputs: dict, seed: int = 0) -> list[torch.Tensor]:
    """The output and every parameter gradient for a fixed random cotangent; `seed` seeds the
    generator dropout draws from."""
    torch.manual_seed(seed)
    y = model(**inputs)
    y.backward(torch.randn(y.shape, generator=torch.Generator().manual_seed(1)))
    grads = [p.grad for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    return [y.detach()] + grads


def assert_matches_eager(
    model, inputs: dict, trace_path: str, options=None, **compile_options
) -> None:
    reference = copy.deepcopy(model)
    options = {"trace": trace_path, **(options or {})}
    compiled = torch.compile(model, backend="loupe", options=options, **compile_options)
    got, want = forward_backward(compiled, inputs), forward_backward(reference, inputs)
    assert len(got) == len(want)
    for index, (g, w) in enumerate(zip(got, want)):
        assert (g is None) == (w is None), f"tensor {index}"
        if w is not None:
            torch.testing.assert_close(
                g, w, rtol=1e-4, atol=1e-4, msg=f"tensor {index} (0: output)"
            )


def fallback_ops(trace_path: str) -> list[str]:
    return sorted(
        ops
        for (ops,) in query(trace_path, "SELECT op_summary FROM kernels WHERE kind = 'fallback'")
    )


def compiled_ops(trace_path: str) -> set[str]:
    return {op for (op,) in query(trace_path, "SELECT DISTINCT op FROM snapshot_nodes")}


def assert_compiled_without_fallback(trace_path: str) -> None:
    statuses = query(trace_path, "SELECT graph_kind, status FROM compiles")
    assert statuses and all(status == "ok" for _, status in statuses), statuses
    assert show_json(trace_path)["fallback_nodes"] == 0, fallback_ops(trace_path)


MASK_OPS = {"aten.bitwise_and.Tensor", "aten.new_ones", "aten.index.Tensor"}


def test_padded_batch_matches_eager_with_nothing_left_to_the_fallback(trace_path):
    model = transformer_models.build("bert", dropout=False, attention=None).eval()
    inputs = transformer_models.make_inputs("bert", batch=2, mask=True)
    assert_matches_eager(model, inputs, trace_path)
    assert_compiled_without_fallback(trace_path)
    assert MASK_OPS <= compiled_ops(trace_path)


def test_causal_mask_with_dynamic_batch_compiles_once(trace_path):
    """Without a mask, the causal mask and the position ids are built from the symbolic batch
    (cumsum, index.Tensor over s0)."""
    model = transformer_models.build("llama", dropout=False, attention=None).eval()
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path}, dynamic=True)
    for batch in (2, 3):
        inputs = transformer_models.make_inputs("llama", batch=batch, mask=False)
        for g, w in zip(forward_backward(compiled, inputs), forward_backward(reference, inputs)):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4)
    assert_compiled_without_fallback(trace_path)
    assert show_json(trace_path)["recompiles"] == 0
    assert {"aten.cumsum", "aten.index.Tensor"} <= compiled_ops(trace_path)


def test_training_with_dropout_compiles_masked_softmax(trace_path):
    """Dropout's masks come from Loupe's own generator here, so only the trace is checked."""
    model = transformer_models.build("bert", dropout=True, attention=None).train()
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
    forward_backward(compiled, transformer_models.make_inputs("bert", 2, mask=True))
    assert_compiled_without_fallback(trace_path)
    assert {
        "aten._safe_softmax",
        "aten.native_dropout",
        "aten.native_dropout_backward",
    } <= compiled_ops(trace_path)


def test_dropout_drawn_with_torch_rng_matches_eager(trace_path):
    """dropout_rng="torch": each mask is drawn by torch (one aten.bernoulli.p per dropout, the
    only fallback) from the generator eager uses, so training with dropout matches eager.
    Whisper's first dropout acts on a permuted layout, whose mask torch draws in memory order.
    Recent transformers look up its position embedding with index.Tensor (index_put in the
    backward); older ones use embedding, so that pair is checked only where it occurs."""
    model = transformer_models.build("whisper", dropout=True, attention=None).train()
    inputs = transformer_models.make_inputs("whisper", 2, mask=False)
    assert_matches_eager(model, inputs, trace_path, options={"dropout_rng": "torch"})
    assert set(fallback_ops(trace_path)) == {"aten.bernoulli.p via fallback:aten.bernoulli.p"}
    ops = compiled_ops(trace_path)
    assert {"aten._safe_softmax", "aten.native_dropout_backward"} <= ops
    if "aten.index.Tensor" in ops:
        assert "aten.index_put" in ops


def test_segformer_compiles_backward_through_permuted_convolutions(trace_path):
    """SegFormer's convolutions take permuted (channels-last) inputs, whose gradients torch
    allocates row-major; its decoder upsamples bilinearly, which torch decomposes to
    _unsafe_index gathers (read by the generated kernel that weights them; index_put in the
    backward)."""
    model = transformer_models.build("segformer", dropout=False, attention=None).eval()
    inputs = transformer_models.make_inputs("segformer", 2, mask=False)
    assert_matches_eager(model, inputs, trace_path)
    assert_compiled_without_fallback(trace_path)
    ops = compiled_ops(trace_path)
    assert {"aten.convolution_backward", "aten._unsafe_index.Tensor", "aten.index_put"} <= ops
    gathering = query(
        trace_path,
        "SELECT name FROM kernels WHERE kind = 'generated' "
        "AND fused_nodes LIKE '%aten._unsafe_index.Tensor%'",
    )
    assert gathering


def test_mobilenet_relu6_backward_is_decomposed_not_left_to_the_fallback(trace_path):
    """ReLU6 is hardtanh, whose backward Loupe has no kernel for: torch decomposes it while
    aot_autograd traces (loupe/decompositions.py), so the depthwise-separable network compiles
    whole. Evaluation mode: in training, batch norm over a 2x1x1 batch makes the gradients so
    ill-conditioned that eager's float32 differs from float64 by more than any tolerance."""
    model = transformer_models.build("mobilenet_v2", dropout=False, attention=None).eval()
    inputs = transformer_models.make_inputs("mobilenet_v2", 2, mask=False)
    assert_matches_eager(model, inputs, trace_path)
    assert_compiled_without_fallback(trace_path)
    assert "aten.hardtanh_backward" not in compiled_ops(trace_path)
    assert {"aten.hardtanh", "aten.convolution_backward"} <= compiled_ops(trace_path)


def test_convnext_with_dynamic_shapes_compiles_forward_and_backward(trace_path):
    """Two stride-2 stages: torch sizes the second as s0//4 where shape inference reaches
    (s0//2)//2, which must be the same dim for the backward's convolution to verify."""
    model = transformer_models.build("convnext", dropout=False, attention=None)
    for batch in (2, 3):
        inputs = transformer_models.make_inputs("convnext", batch, mask=False)
        assert_matches_eager(model, inputs, trace_path, dynamic=True)
    assert_compiled_without_fallback(trace_path)


@pytest.mark.parametrize("name", ["poolformer", "mpt"])
def test_group_norm_and_alibi_compile_without_fallback(name, trace_path):
    """PoolFormer's GroupNorm is decomposed while tracing; MPT's ALiBi slopes are 2 ** -x, a
    number raised to a tensor."""
    model = transformer_models.build(name, dropout=False, attention=None)
    assert_matches_eager(model, transformer_models.make_inputs(name, 2, mask=False), trace_path)
    assert_compiled_without_fallback(trace_path)
