"""Torch's own CPU kernel against Loupe's for the same call, one op at a time, at the sizes of
the benchmark's models (bench/cpu.py: the CNN, the attention block, the MLP) scaled up until
the eager call takes a millisecond or more.

    nice -n 5 python bench/cpu_library_kernels.py [--ops conv,pool] [--match TEXT] [--runs 30]
        [--threads N]

Each case is one aten call. Eager calls the op; Loupe runs the same call as a one-op graph
(traced with make_fx, converted as the torch.compile backend converts, compiled by Loupe's
default pipeline) through the binding, so neither side pays Dynamo's guards. Calls alternate
(eager, loupe, eager, ...) after --warmup calls each, so a load burst hits both alike; the table
shows each side's median, loupe/eager, the largest |loupe - eager| over the results and the
implementation Loupe ran. Both run at torch's intra-op thread count (--threads sets it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from loupe import _C
from loupe.fx_to_lir import fx_to_lir

aten = torch.ops.aten


@dataclass
class Case:
    group: str  # what --ops selects
    name: str
    call: Callable[..., object]  # the aten call, on `inputs`
    inputs: Callable[[], list[torch.Tensor]]


def randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


def conv_cases(name, x, w, stride=1, padding=1, dilation=1, groups=1) -> list[Case]:
    """Forward (with bias) and backward (all three gradients) of one 1-D or 2-D convolution
    (the input's rank says which)."""
    dims = len(x) - 2
    geometry = ([stride] * dims, [padding] * dims, [dilation] * dims, False, [0] * dims, groups)

    def forward(x, w, b):
        return aten.convolution(x, w, b, *geometry)

    out = forward(torch.empty(x, device="meta"), torch.empty(w, device="meta"), None).shape

    def backward(g, x, w):
        return aten.convolution_backward(g, x, w, [w.shape[0]], *geometry, [True, True, True])

    return [
        Case("conv", f"conv {name}", forward, lambda: [randn(*x), randn(*w), randn(w[0])]),
        Case(
            "conv", f"conv backward {name}", backward, lambda: [randn(*out), randn(*x), randn(*w)]
        ),
    ]


def pool_cases(name, x, kernel, stride, padding=0) -> list[Case]:
    """max_pool2d_with_indices and its backward through the forward's indices."""
    window = ([kernel] * 2, [stride] * 2, [padding] * 2, [1, 1], False)

    def backward_inputs():
        x_ = randn(*x)
        out, indices = aten.max_pool2d_with_indices(x_, *window)
        return [randn(*out.shape), x_, indices]

    return [
        Case(
            "pool",
            f"max_pool {name}",
            lambda x: aten.max_pool2d_with_indices(x, *window),
            lambda: [randn(*x)],
        ),
        Case(
            "pool",
            f"max_pool backward {name}",
            lambda g, x, i: aten.max_pool2d_with_indices_backward(g, x, *window, i),
            backward_inputs,
        ),
    ]


def avg_pool_cases(name, x, kernel, stride, padding=0) -> list[Case]:
    """avg_pool2d and its backward (count_include_pad, as nn.AvgPool2d)."""
    window = ([kernel] * 2, [stride] * 2, [padding] * 2, False, True, None)
    out = aten.avg_pool2d(torch.empty(x, device="meta"), *window).shape
    return [
        Case(
            "pool", f"avg_pool {name}", lambda x: aten.avg_pool2d(x, *window), lambda: [randn(*x)]
        ),
        Case(
            "pool",
            f"avg_pool backward {name}",
            lambda g, x: aten.avg_pool2d_backward(g, x, *window),
            lambda: [randn(*out), randn(*x)],
        ),
    ]


def adaptive_avg_pool_cases(name, x, size) -> list[Case]:
    out = [*x[:-2], size, size]
    return [
        Case(
            "pool",
            f"adaptive_avg_pool {name}",
            lambda x: aten._adaptive_avg_pool2d(x, [size, size]),
            lambda: [randn(*x)],
        ),
        Case(
            "pool",
            f"adaptive_avg_pool backward {name}",
            aten._adaptive_avg_pool2d_backward,
            lambda: [randn(*out), randn(*x)],
        ),
    ]


def layer_norm_cases(rows: int, width: int) -> list[Case]:
    def backward_inputs():
        x = randn(rows, width)
        _, mean, rstd = aten.native_layer_norm(x, [width], randn(width), randn(width), 1e-5)
        return [randn(rows, width), x, mean, rstd, randn(width), randn(width)]

    return [
        Case(
            "norm",
            f"layer_norm {rows}x{width}",
            lambda x, w, b: aten.native_layer_norm(x, [width], w, b, 1e-5),
            lambda: [randn(rows, width), randn(width), randn(width)],
        ),
        Case(
            "norm",
            f"layer_norm backward {rows}x{width}",
            lambda g, x, m, r, w, b: aten.native_layer_norm_backward(
                g, x, [width], m, r, w, b, [True, True, True]
            ),
            backward_inputs,
        ),
    ]


def batch_norm_cases(shape: list[int]) -> list[Case]:
    """Training batch norm, forward and backward (all three gradients), as the CNN runs it."""
    channels = shape[1]

    def forward(x, w, b, running_mean, running_var):
        return aten.native_batch_norm(x, w, b, running_mean, running_var, True, 0.1, 1e-5)

    def backward_inputs():
        x, w = randn(*shape), randn(channels)
        _, mean, invstd = forward(
            x, w, randn(channels), torch.zeros(channels), torch.ones(channels)
        )
        return [randn(*shape), x, w, torch.zeros(channels), torch.ones(channels), mean, invstd]

    return [
        Case(
            "norm",
            f"batch_norm {shape}",
            forward,
            lambda: (
                [randn(*shape), randn(channels), randn(channels)]
                + [torch.zeros(channels), torch.ones(channels)]
            ),
        ),
        Case(
            "norm",
            f"batch_norm backward {shape}",
            lambda g, x, w, rm, rv, m, s: aten.native_batch_norm_backward(
                g, x, w, rm, rv, m, s, True, 1e-5, [True, True, True]
            ),
            backward_inputs,
        ),
    ]


def softmax_cases(shape: list[int]) -> list[Case]:
    """Attention's softmax: alone, and with the scale and causal mask before it, which Loupe
    takes into the softmax's row kernel (passes/row_fusion.cpp) and eager runs as three ops."""
    causal = torch.ones(shape[-2], shape[-1]).tril() == 0
    return [
        Case(
            "row",
            f"softmax {shape}",
            lambda x: aten._softmax(x, -1, False),
            lambda: [randn(*shape)],
        ),
        Case(
            "row",
            f"scale, causal mask, softmax {shape}",
            lambda x, mask: aten._softmax(
                aten.masked_fill(aten.mul(x, 0.125), mask, float("-inf")), -1, False
            ),
            lambda: [randn(*shape), causal],
        ),
    ]


def attention_cases(shape: list[int], causal: bool) -> list[Case]:
    """The fused attention call a transformer's SDPA becomes on the CPU, forward and backward
    (causal as GPT-2's, or not as BERT's). Query, key, value and the output's gradient are
    [batch, seq, heads, dim] tensors seen as [batch, heads, seq, dim], as the models' head split
    leaves them."""
    batch, heads, seq, dim = shape
    kind = "causal" if causal else "full"

    def heads_view() -> torch.Tensor:
        return randn(batch, seq, heads, dim).transpose(1, 2)

    def forward(q, k, v):
        return aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal)

    def backward_inputs():
        q, k, v = heads_view(), heads_view(), heads_view()
        out, lse = forward(q, k, v)
        return [heads_view(), q, k, v, out, lse]

    return [
        Case(
            "attention",
            f"attention {kind} {shape}",
            forward,
            lambda: [heads_view(), heads_view(), heads_view()],
        ),
        Case(
            "attention",
            f"attention backward {kind} {shape}",
            lambda g, q, k, v, out, lse: aten._scaled_dot_product_flash_attention_for_cpu_backward(
                g, q, k, v, out, lse, 0.0, causal
            ),
            backward_inputs,
        ),
    ]


def cases() -> list[Case]:
    return [
        # The CNN: a 3-channel image to 32 and 64 channels, 2x2 pooling after each; a ResNet
        # stage (64 channels at 56x56), its stem's 3x3 stride-2 pooling and a grouped 3x3.
        *conv_cases("3->32 3x3 [16,3,64,64]", [16, 3, 64, 64], [32, 3, 3, 3]),
        # bench/cpu.py's cnn_large, as it is.
        *conv_cases("3->8 3x3 [32,3,64,64]", [32, 3, 64, 64], [8, 3, 3, 3]),
        *conv_cases("8->16 3x3 [32,8,32,32]", [32, 8, 32, 32], [16, 8, 3, 3]),
        *conv_cases("32->64 3x3 [16,32,32,32]", [16, 32, 32, 32], [64, 32, 3, 3]),
        *conv_cases("64->64 3x3 [8,64,56,56]", [8, 64, 56, 56], [64, 64, 3, 3]),
        *conv_cases("64->128 3x3 s2 [8,64,56,56]", [8, 64, 56, 56], [128, 64, 3, 3], stride=2),
        *conv_cases("64->64 3x3 g8 [8,64,56,56]", [8, 64, 56, 56], [64, 8, 3, 3], groups=8),
        # A MobileNet block's pointwise (1x1) and depthwise convolutions.
        *conv_cases("64->128 1x1 [16,64,56,56]", [16, 64, 56, 56], [128, 64, 1, 1], padding=0),
        *conv_cases("64 3x3 dw [16,64,56,56]", [16, 64, 56, 56], [64, 1, 3, 3], groups=64),
        # 1-D: a speech model's feature extractor over a second of 16 kHz audio, then a layer.
        *conv_cases("1d 1->128 k10 s5 [8,1,16000]", [8, 1, 16000], [128, 1, 10], 5, 0),
        *conv_cases("1d 128->128 k3 s2 [8,128,3199]", [8, 128, 3199], [128, 128, 3], 2, 0),
        *pool_cases("2x2 [16,32,64,64]", [16, 32, 64, 64], 2, 2),
        *pool_cases("2x2 [16,64,32,32]", [16, 64, 32, 32], 2, 2),
        *pool_cases("3x3 s2 p1 [8,64,112,112]", [8, 64, 112, 112], 3, 2, 1),
        # A MobileNet block's 2x2 average pooling, a ResNet stage's, VGG's adaptive 7x7.
        *avg_pool_cases("2x2 [16,128,56,56]", [16, 128, 56, 56], 2, 2),
        *avg_pool_cases("3x3 s1 p1 [8,64,56,56]", [8, 64, 56, 56], 3, 1, 1),
        *adaptive_avg_pool_cases("7x7 [8,512,14,14]", [8, 512, 14, 14], 7),
        # Training dropout over a BERT layer's activations (4 x 128 tokens, width 256 and 1024).
        # Masks differ from torch's (another generator): the max diff column is not a check.
        Case(
            "dropout",
            "native_dropout p=0.1 [4,128,1024]",
            lambda x: aten.native_dropout(x, 0.1, True),
            lambda: [randn(4, 128, 1024)],
        ),
        Case(
            "dropout",
            "native_dropout p=0.1 [4,4,128,128]",
            lambda x: aten.native_dropout(x, 0.1, True),
            lambda: [randn(4, 4, 128, 128)],
        ),
        # The attention block: 8 sequences of 256 tokens, 8 heads of 64.
        Case(
            "bmm",
            "bmm q@k^T [64,256,64]@[64,64,256]",
            aten.bmm,
            lambda: [randn(64, 256, 64), randn(64, 256, 64).transpose(1, 2)],
        ),
        Case(
            "bmm",
            "bmm p@v [64,256,256]@[64,256,64]",
            aten.bmm,
            lambda: [randn(64, 256, 256), randn(64, 256, 64)],
        ),
        Case(
            "bmm",
            "bmm many small [512,64,64]@[512,64,64]",
            aten.bmm,
            lambda: [randn(512, 64, 64), randn(512, 64, 64)],
        ),
        # The MLP: 512 tokens of width 768 through a 3072-wide layer.
        Case(
            "mm",
            "mm [512,768]@[768,3072]",
            aten.mm,
            lambda: [randn(512, 768), randn(3072, 768).t()],
        ),
        Case(
            "mm",
            "addmm [512,768]@[768,3072]+b",
            aten.addmm,
            lambda: [randn(3072), randn(512, 768), randn(3072, 768).t()],
        ),
        Case(
            "mm",
            "mm [512,3072]@[3072,768]",
            aten.mm,
            lambda: [randn(512, 3072), randn(768, 3072).t()],
        ),
        *layer_norm_cases(4096, 768),
        # The CNN's batch norms at bench/cpu.py's cnn_large sizes (batch 32, 64x64 images).
        *batch_norm_cases([32, 8, 64, 64]),
        *batch_norm_cases([32, 16, 32, 32]),
        # bench/cpu.py's attention_large: 4 sequences of 256 tokens, 8 heads.
        *softmax_cases([4, 8, 256, 256]),
        # bench/cpu.py's gpt2_large (causal) and bert_large (not): 4 sequences of 128 tokens,
        # 4 heads of 64.
        *attention_cases([4, 4, 128, 64], causal=True),
        *attention_cases([4, 4, 128, 64], causal=False),
    ]


def as_list(result) -> list[torch.Tensor]:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def loupe_call(case: Case, inputs: list[torch.Tensor]):
    """The call as a Loupe graph; returns a function running it, and the kernels it ran."""
    gm = make_fx(case.call)(*inputs)
    lir = fx_to_lir(gm, "op", set(_C.registered_ops()))
    compiled = _C.CompiledGraph(lir.text, _C.resolve_pipeline("default", []))
    compiled.wait_for_kernels()

    def run():
        return compiled.run(inputs, torch.get_num_threads())

    return run, compiled


def median_ms(fns: list[Callable[[], object]], warmup: int, runs: int) -> list[float]:
    for _ in range(warmup):
        for fn in fns:
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for fn, spent in zip(fns, times):
            start = time.perf_counter()
            fn()
            spent.append((time.perf_counter() - start) * 1e3)
    return [statistics.median(spent) for spent in times]


def implementations(compiled) -> str:
    kinds = sorted({kind for kind, *_ in compiled.stats().values() if not kind.startswith("view")})
    return ", ".join(kinds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--ops", default="conv,pool,bmm,mm,norm,row,attention,dropout", help="groups to run"
    )
    parser.add_argument("--match", default="", help="only the calls whose name contains this")
    parser.add_argument("--runs", type=int, default=30, help="timed calls each (default 30)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: as is)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    groups = set(args.ops.split(","))
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} cores; "
        f"median of {args.runs} calls, alternating"
    )
    header = f"| {'call':44} | eager ms | loupe ms | loupe/eager | max diff | loupe kernel"
    print(header)
    print("|" + "|".join("-" * len(c) for c in header.split("|")[1:]))
    ratios = []
    torch.manual_seed(0)
    with torch.no_grad():
        for case in cases():
            if case.group not in groups or args.match not in case.name:
                continue
            inputs = case.inputs()
            loupe, compiled = loupe_call(case, inputs)
            eager = lambda case=case, inputs=inputs: case.call(*inputs)  # noqa: E731
            diff = max(
                (a - b).abs().max().item() if a.is_floating_point() else (a != b).sum().item()
                for a, b in zip(as_list(loupe()), as_list(eager()))
            )
            eager_ms, loupe_ms = median_ms([eager, loupe], args.warmup, args.runs)
            ratios.append(loupe_ms / eager_ms)
            print(
                f"| {case.name:44} | {eager_ms:8.2f} | {loupe_ms:8.2f} | {ratios[-1]:11.2f}"
                f" | {diff:8.1e} | {implementations(compiled)}",
                flush=True,
            )
    if ratios:
        geomean = statistics.geometric_mean(ratios)
        print(f"geometric mean loupe/eager {geomean:.2f}, worst {max(ratios):.2f}")


if __name__ == "__main__":
    main()
