"""The models of the backend tests (models.py), forward and backward on `cuda`, static and with
dynamic batch sizes, against float64 eager on the GPU; a model under torch.autocast; check mode.
Every graph must compile (strict mode) and every result stay within 4x eager's own error of the
float64 reference. Skipped without a CUDA device."""

from __future__ import annotations

import copy

import pytest
import torch
from float64_reference import assert_close_to_reference

import models
from conftest import query

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@pytest.fixture(autouse=True)
def poisoned_device_memory(monkeypatch):
    monkeypatch.setenv("LOUPE_POISON_DEVICE_MEMORY", "1")


def on_cuda(model, inputs, dtype=None):
    model = copy.deepcopy(model).cuda()
    inputs = [t.cuda() for t in inputs]
    if dtype is not None:
        model = model.to(dtype)
        inputs = [t.to(dtype) if t.is_floating_point() else t for t in inputs]
    return model, inputs


def forward_backward(model, inputs, seed=1):
    inputs = [
        t.detach().clone().requires_grad_(True) if t.is_floating_point() else t for t in inputs
    ]
    y = model(*inputs)
    cotangent = torch.randn(
        y.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64
    )
    y.backward(cotangent.to(device=y.device, dtype=y.dtype))
    grads = [t.grad for t in inputs if t.is_floating_point()] + [p.grad for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    return y.detach(), grads


def compare(model, inputs, trace_path, dynamic=False):
    compiled = torch.compile(
        copy.deepcopy(model),
        backend="loupe",
        dynamic=dynamic or None,
        options={"trace": trace_path, "strict": True},
    )
    y, grads = forward_backward(compiled, inputs)
    y_eager, grads_eager = forward_backward(copy.deepcopy(model), inputs)
    reference = copy.deepcopy(model).double()
    y_ref, grads_ref = forward_backward(
        reference, [t.double() if t.is_floating_point() else t for t in inputs]
    )
    assert_close_to_reference(y, y_eager, y_ref)
    for i, (g, e, r) in enumerate(zip(grads, grads_eager, grads_ref)):
        assert g is not None, f"gradient {i} missing"
        assert_close_to_reference(g, e, r, f"gradient {i}")


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_forward_and_backward_match_float64_eager_on_cuda(name, trace_path):
    model, inputs = on_cuda(*models.MODELS[name]())
    compare(model, inputs, trace_path)
    statuses = {s for (s,) in query(trace_path, "SELECT status FROM compiles")}
    assert statuses == {"ok"}
    targets = {t for (t,) in query(trace_path, "SELECT DISTINCT target FROM kernels")}
    assert targets == {"cuda:0"}


@pytest.mark.parametrize("name", models.DYNAMIC_MODELS)
def test_dynamic_batch_sizes_on_cuda(name, trace_path):
    for batch in (2, 5, 9):
        model, inputs = on_cuda(*models.MODELS[name](batch=batch))
        compare(model, inputs, trace_path, dynamic=True)


def test_bf16_model_forward_and_backward(trace_path):
    model, inputs = on_cuda(*models.MODELS["mlp"](), dtype=torch.bfloat16)
    compare(model, inputs, trace_path)


def test_autocast(trace_path):
    model, inputs = on_cuda(*models.MODELS["attention"]())
    compiled = torch.compile(
        copy.deepcopy(model), backend="loupe", options={"trace": trace_path, "strict": True}
    )
    with torch.autocast("cuda", dtype=torch.bfloat16):
        got = compiled(*inputs)
        eager = model(*inputs)
    reference = copy.deepcopy(model).double()(
        *[t.double() if t.is_floating_point() else t for t in inputs]
    )
    assert_close_to_reference(got.float(), eager.float(), reference)


def test_check_mode_records_each_kernels_error(trace_path):
    model, inputs = on_cuda(*models.MODELS["mlp"]())
    compiled = torch.compile(
        model, backend="loupe", options={"trace": trace_path, "strict": True, "check": True}
    )
    with torch.no_grad():
        compiled(*inputs)
    errors = query(
        trace_path, "SELECT name, max_error FROM kernels WHERE kind IN ('generated', 'library')"
    )
    assert errors and all(e is not None and e < 1e-4 for _, e in errors), errors
