"""Real models through torch.compile(backend="loupe"): forward and backward against eager, a few
training steps against eager, dynamic batch sizes, a graph break; and what the trace says about
each of them (every pass recorded, forward and backward compiled, nothing left to the fallback).

The models live in models.py, shared with scripts/aten_op_census.py.
"""

import copy
import json

import pytest
import torch

import models
from conftest import query, show_json

loupe_native = pytest.importorskip(
    "loupe._C", reason="the loupe package is not installed (pip install .)"
)

PIPELINE = loupe_native.default_pipeline()


def compile_loupe(model, trace_path, **kwargs):
    return torch.compile(model, backend="loupe", options={"trace": trace_path}, **kwargs)


def forward_backward(model, inputs):
    """Output, then the gradients of the floating inputs and of the parameters, for a fixed
    random cotangent (a sum would hide errors that cancel, e.g. through softmax)."""
    inputs = [
        t.detach().clone().requires_grad_(True) if t.is_floating_point() else t for t in inputs
    ]
    y = model(*inputs)
    cotangent = torch.randn(
        y.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64
    )
    y.backward(cotangent.to(y.dtype))
    grads = [t.grad for t in inputs if t.is_floating_point()] + [p.grad for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    return y.detach(), grads


def in_float64(model, inputs):
    return copy.deepcopy(model).double(), [
        t.double() if t.is_floating_point() else t for t in inputs
    ]


def assert_trace_complete(trace_path, *, graphs: int, graph_breaks: int = 0):
    """`graphs` Dynamo graphs, each compiled as a forward and a backward, every pass recorded."""
    compiles = query(trace_path, "SELECT id, graph_kind, status FROM compiles ORDER BY id")
    assert sorted(kind for _, kind, _ in compiles) == ["backward"] * graphs + ["forward"] * graphs
    assert [status for _, _, status in compiles] == ["ok"] * len(compiles)
    for compile_id, kind, _ in compiles:
        passes = query(
            trace_path,
            "SELECT name, snapshot_id FROM passes WHERE compile_id = ? ORDER BY ordinal",
            compile_id,
        )
        assert [name for name, _ in passes] == PIPELINE, kind
        assert all(snapshot is not None for _, snapshot in passes), kind

    shown = show_json(trace_path)
    assert shown["compiles"] == 2 * graphs
    assert shown["passes"] == len(PIPELINE) * shown["compiles"]
    assert shown["graph_breaks"] == graph_breaks
    assert shown["guards"] > 0
    assert shown["fallback_nodes"] == 0, query(
        trace_path, "SELECT op_summary FROM kernels WHERE kind = 'fallback'"
    )
    return shown


def assert_matches_float64_eager(model, inputs, trace_path, *, graphs=1, graph_breaks=0):
    reference, reference_inputs = in_float64(model, inputs)

    y, grads = forward_backward(compile_loupe(model, trace_path), inputs)
    y_ref, grads_ref = forward_backward(reference, reference_inputs)

    torch.testing.assert_close(y, y_ref.float(), rtol=1e-4, atol=1e-4)
    assert len(grads) == len(grads_ref)
    for index, (grad, grad_ref) in enumerate(zip(grads, grads_ref)):
        assert grad is not None, f"gradient {index} missing"
        torch.testing.assert_close(
            grad, grad_ref.float(), rtol=1e-4, atol=1e-4, msg=f"gradient {index}"
        )
    assert_trace_complete(trace_path, graphs=graphs, graph_breaks=graph_breaks)


def compiled_ops(trace_path):
    return {op for (op,) in query(trace_path, "SELECT DISTINCT op FROM snapshot_nodes")}


# Graphs Dynamo captures per model, and the graph breaks between them.
EXPECTED_GRAPHS = {"graph_break": (2, 1)}

# transformers' default attention runs torch's fused kernel, forward and backward.
SDPA_OPS = {
    "aten._scaled_dot_product_flash_attention_for_cpu",
    "aten._scaled_dot_product_flash_attention_for_cpu_backward",
}
TRANSFORMERS_MODELS = ("gpt2", "bert")


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_forward_and_backward_match_float64_eager(name, trace_path):
    model, inputs = models.MODELS[name]()
    graphs, breaks = EXPECTED_GRAPHS.get(name, (1, 0))
    assert_matches_float64_eager(model, inputs, trace_path, graphs=graphs, graph_breaks=breaks)
    if name in TRANSFORMERS_MODELS:
        assert SDPA_OPS <= compiled_ops(trace_path)


def test_gpt2_with_eager_attention_matches_float64_eager(trace_path):
    """Attention spelled with matmuls, softmax and a causal mask buffer."""
    model, inputs = models.gpt2(attention="eager")
    assert_matches_float64_eager(model, inputs, trace_path)
    assert not SDPA_OPS & compiled_ops(trace_path)


class WithAttentionMask(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask)[0]


def test_bert_padding_mask_reaches_the_attention_kernel(trace_path):
    """A padded batch: the mask is an operand of the fused attention, forward and backward."""
    model, (input_ids,) = models.bert()
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 5:] = 0
    assert_matches_float64_eager(
        WithAttentionMask(model.model), (input_ids, attention_mask), trace_path
    )

    calls = [
        line
        for (lir,) in query(trace_path, "SELECT lir FROM snapshots")
        for line in lir.splitlines()
        if "_scaled_dot_product_flash_attention_for_cpu" in line
    ]
    assert calls
    assert all(not line.split("(", 1)[1].split(")", 1)[0].endswith("none") for line in calls), calls


def training_losses(model, inputs, optimizer_class, steps=5):
    """Losses of `steps` optimizer steps on a fixed cotangent-weighted loss, and the final
    weights."""
    optimizer = optimizer_class(model.parameters(), lr=1e-2)
    target = None
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        y = model(*inputs)
        if target is None:
            target = torch.randn(y.shape, generator=torch.Generator().manual_seed(2))
        loss = torch.nn.functional.mse_loss(y, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, [p.detach().clone() for p in model.parameters()]


# Training mode: batch norm uses batch statistics and updates its running stats.
TRAINED_MODELS = ("mlp", "cnn", "attention", "gpt2")


@pytest.mark.parametrize(
    "optimizer_class", [torch.optim.SGD, torch.optim.AdamW], ids=lambda c: c.__name__
)
@pytest.mark.parametrize("name", TRAINED_MODELS)
def test_training_steps_track_eager(name, optimizer_class, trace_path):
    model, inputs = models.MODELS[name]()
    model.train()
    reference = copy.deepcopy(model)

    losses, weights = training_losses(compile_loupe(model, trace_path), inputs, optimizer_class)
    losses_ref, weights_ref = training_losses(reference, inputs, optimizer_class)

    assert losses[-1] < losses[0], losses
    torch.testing.assert_close(losses, losses_ref, rtol=1e-4, atol=1e-5)
    for index, (weight, weight_ref) in enumerate(zip(weights, weights_ref)):
        torch.testing.assert_close(
            weight, weight_ref, rtol=1e-3, atol=1e-4, msg=f"parameter {index}"
        )
    for buffer, buffer_ref in zip(model.buffers(), reference.buffers()):
        torch.testing.assert_close(buffer, buffer_ref, rtol=1e-4, atol=1e-5)
    assert_trace_complete(trace_path, graphs=1)


@pytest.mark.parametrize("name", models.DYNAMIC_MODELS)
def test_dynamic_batch_sizes_compile_once(name, trace_path):
    model, _ = models.MODELS[name]()
    compiled = compile_loupe(model, trace_path, dynamic=True)
    for batch in (2, 3, 5):
        _, inputs = models.MODELS[name](batch=batch)
        y, grads = forward_backward(compiled, inputs)
        y_ref, grads_ref = forward_backward(model, inputs)
        torch.testing.assert_close(y, y_ref, rtol=1e-4, atol=1e-4)
        for index, (grad, grad_ref) in enumerate(zip(grads, grads_ref)):
            torch.testing.assert_close(
                grad, grad_ref, rtol=1e-4, atol=1e-4, msg=f"batch {batch} gradient {index}"
            )

    shown = assert_trace_complete(trace_path, graphs=1)
    assert shown["recompiles"] == 0
    # The batch dim is symbolic in the recorded input graph.
    (lir,) = query(
        trace_path,
        "SELECT s.lir FROM snapshots s JOIN passes p ON p.snapshot_id = s.id "
        "JOIN compiles c ON c.id = p.compile_id WHERE c.graph_kind = 'forward' AND p.ordinal = 0",
    )[0]
    assert "[s" in lir, lir


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_training_with_default_dropout_runs_compiled(name, trace_path):
    """Dropout masks come from Loupe's own generator, so values differ from eager by design;
    what must hold is that dropout is compiled (no fallback), scales what it keeps, and trains."""
    # With dropout, torch's CPU attention runs its math path (aten.tril, aten._safe_softmax,
    # which the fallback runs), so this test spells attention with Loupe's ops.
    model, inputs = models.MODELS[name](dropout=None, attention="eager")
    model.train()
    losses, _ = training_losses(compile_loupe(model, trace_path), inputs, torch.optim.AdamW)

    assert all(torch.isfinite(torch.tensor(losses))), losses
    assert losses[-1] < losses[0], losses
    assert_trace_complete(trace_path, graphs=1)
    assert {"aten.native_dropout", "aten.native_dropout_backward"} <= compiled_ops(trace_path)


def test_bf16_batch_norm_training_updates_its_buffers_like_eager(trace_path):
    """A bf16 CNN in training mode: torch's functional batch norm returns the new running
    statistics in f32 (computed with the f32 batch statistics) for bf16 buffers; the compile
    must agree on that type (it raised a verify error), and the buffers must move as eager's."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(),
    ).to(torch.bfloat16)
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path, "strict": True})
    x = torch.randn(4, 3, 8, 8, dtype=torch.bfloat16)
    for step in range(2):
        torch.testing.assert_close(compiled(x), eager(x), atol=3e-2, rtol=3e-2, msg=f"step {step}")
    for (name, got), (_, expected) in zip(model.named_buffers(), eager.named_buffers()):
        assert got.dtype == expected.dtype, name
        torch.testing.assert_close(got, expected, atol=2e-2, rtol=2e-2, msg=name)


@pytest.mark.parametrize("form", ["bf16", "f16", "autocast"])
def test_reduced_float_matmuls_run_on_library_kernels_and_match_float64(trace_path, form):
    """A bf16 or f16 MLP, and an f32 one under CPU autocast to bf16 (its linears become bf16
    matmuls): the products run on library kernels (they ran the reference loop in double,
    hundreds of times eager's time): bf16 ones on oneDNN's bf16 matmul where the build and the
    CPU have it, else (and f16 ones) on BLAS through f32; within the dtype's rounding of
    float64, forward and backward."""
    torch.manual_seed(0)
    dtype = torch.float16 if form == "f16" else torch.bfloat16
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 16))
    reference = copy.deepcopy(model).double()
    if form != "autocast":
        model = model.to(dtype)
    x = torch.randn(8, 32)
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path, "strict": True})
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=form == "autocast"):
        xin = x.to(dtype) if form != "autocast" else x.clone()
        y = compiled(xin.requires_grad_(True))
        y.float().square().sum().backward()
    x64 = x.double().requires_grad_(True)
    y64 = reference(x64)
    y64.square().sum().backward()
    torch.testing.assert_close(y.double(), y64, rtol=0.05, atol=0.05)
    torch.testing.assert_close(xin.grad.double(), x64.grad, rtol=0.1, atol=0.1)
    for got, expected in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(got.grad.double(), expected.grad, rtol=0.1, atol=0.1)
    kernels = [op for (op,) in query(trace_path, "SELECT op_summary FROM kernels")]
    products = [op for op in kernels if op.startswith(("aten.mm ", "aten.addmm "))]
    kernels_for_dtype = (" via f32",) if form == "f16" else (" via f32", " via onednn:matmul:bf16")
    assert products and all(op.endswith(kernels_for_dtype) for op in products), kernels
    assert not [op for op in kernels if "reference:" in op and "constant" not in op], kernels


def test_inference_cnn_fuses_batch_norm_pools_maxima_only_and_matches_eager(trace_path):
    """In inference (eval mode, no grad) batch norm is a scale and shift per channel: it
    decomposes and fuses with the ReLU after it instead of running as a kernel of its own; max
    pooling writes no indices; the result matches float64 eager."""
    model, inputs = models.MODELS["cnn"]()
    reference, reference_inputs = in_float64(model, inputs)
    with torch.no_grad():
        y = compile_loupe(model, trace_path)(*inputs)
        y_ref = reference(*reference_inputs)
    torch.testing.assert_close(y, y_ref.float(), rtol=1e-4, atol=1e-4)
    kernels = query(trace_path, "SELECT op_summary, fused_nodes FROM kernels")
    assert not [op for op, _ in kernels if "batch_norm" in op], kernels
    groups = [json.loads(nodes) for _, nodes in kernels if nodes]
    normalised = [g for g in groups if {"aten.sub.Tensor", "aten.relu"} <= set(g)]
    assert len(normalised) == 2, groups  # both batch norms, each with its ReLU
    # Nothing reads max pooling's indices in inference: its kernel writes the maxima alone.
    assert any("max-pool-values:f32" in op for op, _ in kernels), kernels


class UnrolledGru(torch.nn.Module):
    """A GRU cell stepped over a sequence in Python: the graph holds every step, and each step
    chunks its gates with unsafe_split (torch's views without alias information)."""

    def __init__(self, width=32):
        super().__init__()
        self.cell = torch.nn.GRUCell(width, width)

    def forward(self, x):
        h = torch.zeros(x.shape[0], x.shape[2], dtype=x.dtype)
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
        return h


def test_an_unrolled_gru_cell_compiles_and_matches_float64(trace_path):
    torch.manual_seed(0)
    model = UnrolledGru()
    x = torch.randn(4, 6, 32)
    compiled = torch.compile(
        copy.deepcopy(model), backend="loupe", options={"trace": trace_path, "strict": True}
    )
    y, grads = forward_backward(compiled, [x])
    reference, reference_inputs = in_float64(model, [x])
    y_ref, grads_ref = forward_backward(reference, reference_inputs)
    torch.testing.assert_close(y, y_ref.float(), rtol=1e-4, atol=1e-5)
    for got, expected in zip(grads, grads_ref):
        torch.testing.assert_close(got, expected.float(), rtol=1e-4, atol=1e-4)
    statuses = query(trace_path, "SELECT status FROM compiles")
    assert len(statuses) == 2 and all(status == "ok" for (status,) in statuses), statuses


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_backward_is_a_generated_row_kernel(trace_path, reduction):
    """A classifier's loss, cross entropy with label smoothing and an ignored class: nll_loss
    and its backward decompose (a gather, a masked reduction, a scatter; they ran on the
    fallback), log_softmax's backward becomes a row kernel with the sum it needs (it ran the
    reference loop), which reads the smoothing term one value per row, not through its expanded
    view (broadcast-read-in-place); the loss and the gradients match float64."""
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 300)
    x, target = torch.randn(8, 16), torch.randint(0, 300, (8,))
    target[3] = 7  # the ignored class: no loss, no gradient for that row

    def loss(m, x):
        value = torch.nn.functional.cross_entropy(
            m(x), target, label_smoothing=0.1, ignore_index=7, reduction=reduction
        )
        return value.sum()

    compiled = torch.compile(
        lambda x: loss(model, x), backend="loupe", options={"trace": trace_path}
    )
    value = compiled(x)
    value.backward()
    reference = copy.deepcopy(model).double()
    expected = loss(reference, x.double())
    expected.backward()
    torch.testing.assert_close(value.double(), expected, rtol=1e-5, atol=1e-6)
    for got, want in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(got.grad.double(), want.grad, rtol=1e-4, atol=1e-6)
    summaries = [s for (s,) in query(trace_path, "SELECT op_summary FROM kernels")]
    assert not [s for s in summaries if "softmax_backward" in s or "fallback:" in s], summaries
    applied = query(
        trace_path,
        "SELECT COUNT(*) FROM decisions WHERE kind = 'broadcast-read-in-place' AND applied = 1",
    )
    assert applied[0][0] >= 1
