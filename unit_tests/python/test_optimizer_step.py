"""A compiled optimizer step (torch.compile(opt.step, backend="loupe"), as torch's docs suggest
for Adam and AdamW): Dynamo turns addcmul into prims.fma and keeps lerp and addcdiv, which ran
on the fallback; now they compile, and the parameters follow eager's step for step."""

import pytest
import torch

from conftest import query

pytest.importorskip("loupe._C", reason="the loupe package is not installed (pip install .)")


def model_with_grads(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 8))
    for p in model.parameters():
        p.grad = torch.randn_like(p)
    return model


@pytest.mark.parametrize(
    "make",
    [
        lambda params: torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1),
        lambda params: torch.optim.Adam(params, lr=1e-2),
        lambda params: torch.optim.SGD(params, lr=1e-2, momentum=0.9, nesterov=True),
    ],
    ids=["adamw", "adam", "sgd_nesterov"],
)
def test_compiled_steps_follow_eager_and_leave_nothing_to_the_fallback(trace_path, make):
    # Built twice from one seed: deepcopy would leave the copy without its grads.
    eager_model, loupe_model = model_with_grads(0), model_with_grads(0)
    eager_opt, loupe_opt = make(eager_model.parameters()), make(loupe_model.parameters())
    step = torch.compile(loupe_opt.step, backend="loupe", options={"trace": trace_path})
    for _ in range(4):
        eager_opt.step()
        step()
    for got, expected in zip(loupe_model.parameters(), eager_model.parameters()):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    for got, expected in zip(loupe_opt.state.values(), eager_opt.state.values()):
        for key, value in expected.items():
            torch.testing.assert_close(got[key], value, rtol=1e-5, atol=1e-6, msg=key)
    kernels = [op for (op,) in query(trace_path, "SELECT op_summary FROM kernels")]
    left = [
        op for op in kernels if "fallback:" in op or ("reference:" in op and "constant" not in op)
    ]
    assert not left, left


def test_fma_is_generated_and_rounds_once(trace_path):
    """Adam's second moment: exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2), which
    Dynamo writes as prims.fma."""
    model = model_with_grads(1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    torch.compile(opt.step, backend="loupe", options={"trace": trace_path})()
    kernels = query(trace_path, "SELECT op_summary, fused_nodes FROM kernels")
    assert any("prims.fma" in (fused or "") or op.startswith("prims.fma") for op, fused in kernels)
    assert not [op for op, _ in kernels if op.startswith("prims.fma") and "fallback" in op]
