"""Layers beyond the reference models, through torch.compile(backend="loupe") on the CPU:
1-D convolutions (an audio model's front end), instance norm, transposed convolution and nearest
or bilinear upsampling (a U-Net's decoder), average and adaptive average pooling, training
dropout, and every common activation. Each is compiled (no graph runs eagerly, nothing is left
to the fallback), runs on its library kernel (the activations: generated code), and matches
float64 eager forward and backward.
"""

import copy
import json

import pytest
import torch
from torch import nn

from conftest import query

pytest.importorskip("loupe._C", reason="the loupe package is not installed (pip install .)")


def forward_backward(model, x):
    x = x.detach().clone().requires_grad_(True)
    y = model(x)
    # Drawn in float64 whatever y's dtype, so that both sides get the same cotangent.
    cotangent = torch.randn(
        y.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64
    )
    y.backward(cotangent.to(y.dtype))
    grads = [x.grad] + [p.grad for p in model.parameters()]
    return y.detach(), grads


def assert_matches_float64_eager(model, x, trace_path):
    """The model compiled by Loupe against a float64 copy run eagerly: output and gradients."""
    reference = copy.deepcopy(model).double()
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
    y, grads = forward_backward(compiled, x)
    y_ref, grads_ref = forward_backward(reference, x.double())
    torch.testing.assert_close(y, y_ref.float(), rtol=1e-4, atol=1e-5)
    for got, expected in zip(grads, grads_ref):
        torch.testing.assert_close(got, expected.float(), rtol=1e-4, atol=1e-4)


def library_ops(trace_path):
    """The ops kernel selection gave a library kernel, from the trace's kernels: not the
    registry's reference loops, which the trace lists as library code too."""
    return {
        summary.split(" via ")[0]
        for (summary,) in query(trace_path, "SELECT op_summary FROM kernels WHERE kind = 'library'")
        if " via reference:" not in summary
    }


def assert_compiled_without_fallback(trace_path):
    statuses = query(trace_path, "SELECT status FROM compiles")
    assert statuses and all(status == "ok" for (status,) in statuses), statuses
    fallbacks = query(trace_path, "SELECT name FROM kernels WHERE kind = 'fallback'")
    assert not fallbacks, fallbacks


class AudioFeatures(nn.Module):
    """A speech model's front end: strided 1-D convolutions over a waveform, a group norm, GELU,
    a grouped and dilated one, then a transposed one back up."""

    def __init__(self):
        super().__init__()
        self.extract = nn.Conv1d(1, 16, 10, stride=5, bias=False)
        self.norm = nn.GroupNorm(16, 16)
        self.mix = nn.Conv1d(16, 16, 3, stride=2, padding=2, dilation=2, groups=4)
        self.up = nn.ConvTranspose1d(16, 8, 4, stride=2, padding=1)

    def forward(self, x):
        x = nn.functional.gelu(self.norm(self.extract(x)))
        return self.up(torch.tanh(self.mix(x)))


def test_one_dimensional_convolutions_match_float64_eager_on_library_kernels(trace_path):
    torch.manual_seed(0)
    assert_matches_float64_eager(AudioFeatures(), torch.randn(2, 1, 400), trace_path)
    assert_compiled_without_fallback(trace_path)
    assert {"aten.convolution", "aten.convolution_backward"} <= library_ops(trace_path)


class StatelessNorms(nn.Module):
    """Norms over the batch's own statistics, with no running ones: instance norm (torch runs it
    as a batch norm over [1, N*C, H, W]) and BatchNorm with track_running_stats=False."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 6, 3, padding=1)
        self.instance = nn.InstanceNorm2d(6, affine=True)
        self.batch = nn.BatchNorm2d(6, track_running_stats=False)

    def forward(self, x):
        return torch.tanh(self.batch(self.instance(self.conv(x))))


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_norms_without_running_statistics_match_float64_eager(trace_path, mode):
    torch.manual_seed(0)
    model = StatelessNorms().train(mode == "train")
    assert_matches_float64_eager(model, torch.randn(3, 4, 9, 7), trace_path)
    assert_compiled_without_fallback(trace_path)
    assert {
        "aten._native_batch_norm_legit.no_stats",
        "aten.native_batch_norm_backward",
    } <= library_ops(trace_path)


def test_channels_last_cnn_keeps_its_activations_row_major_and_matches_float64(trace_path):
    """model.to(memory_format=torch.channels_last), as CPU performance guides suggest: torch
    lays every convolution, norm and activation result out channels-last. Loupe computes them
    row-major and repacks only what a view or the caller sees in torch's strides (here the pooled
    [N, C, 1, 1] that flatten views), not each result between ops: the copies that remain are
    the input's and the weights' (for the kernels that read rows)."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 4),
    ).eval()
    reference = copy.deepcopy(model).double()
    model = model.to(memory_format=torch.channels_last)
    x = torch.randn(2, 3, 12, 12)
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
    with torch.no_grad():
        y = compiled(x.contiguous(memory_format=torch.channels_last))
        y_ref = reference(x.double())
    torch.testing.assert_close(y, y_ref.float(), rtol=1e-4, atol=1e-5)
    assert_compiled_without_fallback(trace_path)
    clones = query(trace_path, "SELECT name FROM kernels WHERE op_summary LIKE 'aten.clone %'")
    # The input, the two weights, the pooled result flatten views: 4 (there were 11).
    assert len(clones) <= 4, clones


class UpsamplingBlock(nn.Module):
    def __init__(self, stride, padding, output_padding, groups, dilation, bias):
        super().__init__()
        self.up = nn.ConvTranspose2d(
            8,
            6,
            3,
            stride=stride,
            padding=padding,
            output_padding=output_padding,
            groups=groups,
            dilation=dilation,
            bias=bias,
        )
        self.pool = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)
        self.cells = nn.AdaptiveAvgPool2d((3, 2))

    def forward(self, x):
        return self.cells(self.pool(torch.tanh(self.up(x))) + 1)


@pytest.mark.parametrize(
    "stride,padding,output_padding,groups,dilation,bias",
    [
        (2, 0, 0, 1, 1, True),
        (2, 1, 1, 2, 1, True),
        (1, 2, 0, 1, 2, True),
        # Without a bias, aot_autograd leaves the bias's gradient out (output_mask).
        (3, 1, 2, 1, 1, False),
    ],
)
def test_transposed_convolution_and_average_pooling_match_float64_eager(
    trace_path, stride, padding, output_padding, groups, dilation, bias
):
    torch.manual_seed(0)
    model = UpsamplingBlock(stride, padding, output_padding, groups, dilation, bias)
    x = torch.randn(2, 8, 7, 6)
    assert_matches_float64_eager(model, x, trace_path)
    assert_compiled_without_fallback(trace_path)
    assert {
        "aten.convolution",
        "aten.convolution_backward",
        "aten.avg_pool2d",
        "aten.avg_pool2d_backward",
        "aten._adaptive_avg_pool2d",
        "aten._adaptive_avg_pool2d_backward",
    } <= library_ops(trace_path)


def test_training_dropout_zeroes_about_p_and_scales_the_rest(trace_path):
    """Loupe's masks are its own (docs/python-adapter.md), so the check is the rule: each element
    is 0 or x / (1 - p), about p of them 0, and the gradient flows through the same mask."""
    p = 0.3
    model = nn.Sequential(nn.Dropout(p)).train()
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
    x = torch.randn(256, 512).abs() + 0.5  # no element is 0 before dropout
    x.requires_grad_(True)
    y = compiled(x)
    y.backward(torch.ones_like(y))
    kept = y != 0
    assert abs(kept.float().mean().item() - (1 - p)) < 0.01
    torch.testing.assert_close(y[kept], (x / (1 - p))[kept])
    torch.testing.assert_close(x.grad, kept.float() / (1 - p))
    assert_compiled_without_fallback(trace_path)
    assert "aten.native_dropout" in library_ops(trace_path)


class Upsampling(nn.Module):
    def __init__(self, mode, align_corners=False):
        super().__init__()
        self.mode = mode
        self.align_corners = align_corners
        self.conv = nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x):
        align = None if self.mode == "nearest" else self.align_corners
        up = nn.functional.interpolate(x, scale_factor=2, mode=self.mode, align_corners=align)
        return self.conv(up)


def gathers_read_in_generated_kernels(trace_path):
    """How many gathers the trace's generated kernels read where they are consumed."""
    rows = query(trace_path, "SELECT fused_nodes FROM kernels WHERE kind = 'generated'")
    return sum(json.loads(nodes).count("aten._unsafe_index.Tensor") for (nodes,) in rows)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_upsampling_gathers_where_consumed_and_scatters_on_library_kernels(
    trace_path, mode, align_corners
):
    """Upsampling decomposes to unchecked advanced indexing (_unsafe_index): bilinear's and
    bicubic's neighbours are read by the generated kernel that weights them, nearest's lone
    gather (a convolution reads it) runs on the gather library kernel; the backward adds the
    gradient back through the same indices (aten.index_put)."""
    if mode == "nearest" and align_corners:
        pytest.skip("nearest upsampling takes no align_corners")
    torch.manual_seed(0)
    model = Upsampling(mode, align_corners)
    x = torch.randn(2, 4, 5, 7)
    assert_matches_float64_eager(model, x, trace_path)
    assert_compiled_without_fallback(trace_path)
    assert "aten.index_put" in library_ops(trace_path)
    if mode == "nearest":
        assert "aten._unsafe_index.Tensor" in library_ops(trace_path)
        assert gathers_read_in_generated_kernels(trace_path) == 0
    else:
        assert "aten._unsafe_index.Tensor" not in library_ops(trace_path)
        assert gathers_read_in_generated_kernels(trace_path) >= (4 if mode == "bilinear" else 16)


def test_a_checked_index_keeps_its_library_kernel_and_raises_out_of_range(trace_path):
    """x[:, idx] in the user's code is the checked gather: never read by generated code, whose
    kernels cannot raise, so an index out of range is an error as in eager."""

    def pick(x, idx):
        return torch.relu(x[:, idx]) * 2

    compiled = torch.compile(pick, backend="loupe", options={"trace": trace_path, "strict": True})
    x = torch.randn(3, 6)
    idx = torch.tensor([5, 0, -1, 2])
    torch.testing.assert_close(compiled(x, idx), pick(x, idx))
    assert "aten.index.Tensor" in library_ops(trace_path)
    assert gathers_read_in_generated_kernels(trace_path) == 0
    with pytest.raises(Exception, match="out of bounds"):
        compiled(x, torch.tensor([6, 0, 1, 2]))


ACTIVATIONS = [
    nn.ELU(),
    nn.Hardswish(),
    nn.Hardsigmoid(),
    nn.Softplus(),
    nn.Mish(),
    nn.LeakyReLU(0.1),
    nn.LogSigmoid(),
    nn.GLU(),
    nn.PReLU(),
    nn.ReLU6(),
    nn.SiLU(),
    nn.GELU(),
    nn.GELU(approximate="tanh"),
]


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=lambda a: repr(a))
def test_every_activation_compiles_forward_and_backward(trace_path, activation):
    """Activations are ops of their own or decompose while aot_autograd traces
    (loupe/decompositions.py): none is left to the fallback, and each matches float64 eager."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), activation)
    assert_matches_float64_eager(model, torch.randn(8, 16) * 3, trace_path)
    assert_compiled_without_fallback(trace_path)


class SpatialTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.loc = nn.Linear(3 * 12 * 12, 6)

    def forward(self, x):
        theta = self.loc(x.flatten(1)).view(-1, 2, 3)
        grid = nn.functional.affine_grid(theta, list(x.shape), align_corners=False)
        return nn.functional.grid_sample(x, grid, align_corners=False)


def test_a_spatial_transformer_trains_compiled(trace_path):
    """affine_grid's backward writes into a strided slice (a functional copy whose result torch
    lays out as the slice: no dense order). Loupe's results are row-major where nothing reads
    their strides, so the backward compiles (strict) instead of being refused, and matches
    float64 eager; affine_grid and grid_sample themselves run on the fallback."""
    torch.manual_seed(0)
    model = SpatialTransformer()
    x = torch.randn(4, 3, 12, 12)
    reference = copy.deepcopy(model).double()
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path, "strict": True})
    y, grads = forward_backward(compiled, x)
    y_ref, grads_ref = forward_backward(reference, x.double())
    torch.testing.assert_close(y, y_ref.float(), rtol=1e-4, atol=1e-4)
    for got, expected in zip(grads, grads_ref):
        torch.testing.assert_close(got, expected.float(), rtol=1e-3, atol=1e-3)
    statuses = query(trace_path, "SELECT status FROM compiles")
    assert len(statuses) == 2 and all(status == "ok" for (status,) in statuses), statuses


class SqueezeExcitation(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.reduce = nn.Conv2d(c, c // 4, 1)
        self.expand = nn.Conv2d(c // 4, c, 1)

    def forward(self, x):
        y = nn.functional.silu(self.conv(x))
        scale = self.expand(
            nn.functional.silu(self.reduce(nn.functional.adaptive_avg_pool2d(y, 1)))
        )
        return y * torch.sigmoid(scale)


def test_squeeze_excitation_reads_the_pool_gradient_unexpanded(trace_path):
    """An EfficientNet-style squeeze-and-excitation block: the global pool's backward is
    expand(g) / HW, whose expand joins the pointwise group of the activation's backward (the
    group reads g, one value per channel; it read a zero-stride view, strided, 1.4x eager's
    step). Forward and backward match float64, nothing on the fallback."""
    torch.manual_seed(0)
    model = SqueezeExcitation()
    x = torch.randn(2, 8, 6, 5)
    assert_matches_float64_eager(model, x, trace_path)
    assert_compiled_without_fallback(trace_path)
    nodes = [json.loads(n) for (n,) in query(trace_path, "SELECT fused_nodes FROM kernels") if n]
    assert any("aten.expand" in group for group in nodes), nodes


class ShuffleAndRoll(nn.Module):
    """A super-resolution head (pixel_shuffle, its inverse) and a Swin-style shifted window
    (roll), each decomposed while tracing into views, slices and gathers."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 16, 3, padding=1)

    def forward(self, x):
        up = nn.functional.pixel_shuffle(self.conv(x), 2)
        shifted = torch.roll(up, shifts=(-1, 2), dims=(2, 3))
        return nn.functional.pixel_unshuffle(torch.tanh(shifted), 2)


def test_pixel_shuffle_and_roll_compile_without_the_fallback(trace_path):
    torch.manual_seed(0)
    model = ShuffleAndRoll()
    x = torch.randn(2, 4, 5, 6)
    assert_matches_float64_eager(model, x, trace_path)
    assert_compiled_without_fallback(trace_path)
