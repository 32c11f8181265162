"""The GPU tests' comparison: a result against eager's and a float64 reference on the same inputs.
Loupe's error may be at most 4x eager's own error against the reference (plus a floor of a few
ulps of the dtype, relative to the reference's largest magnitude), in fp32, bf16 and fp16 alike,
so a kernel that is merely as good as eager passes and a wrong one does not; a NaN never does."""

from __future__ import annotations

import torch

_FLOOR = {torch.float32: 1e-6, torch.bfloat16: 1e-2, torch.float16: 2e-3}


def assert_close_to_reference(actual, eager, reference, what="output"):
    """|loupe - ref| <= 4 |eager - ref| + floor, elementwise maxima, with no NaN anywhere."""
    assert actual.shape == eager.shape and actual.dtype == eager.dtype, what
    assert not torch.isnan(actual).any(), f"{what}: NaN in Loupe's result"
    ref = reference.double()
    scale = ref.abs().max().item() + 1e-30
    loupe_err = (actual.double() - ref).abs().max().item()
    eager_err = (eager.double() - ref).abs().max().item()
    floor = _FLOOR.get(actual.dtype, 0) * scale
    assert loupe_err <= 4 * eager_err + floor, (
        f"{what}: Loupe's error {loupe_err:.3g} against float64, eager's {eager_err:.3g}"
    )
