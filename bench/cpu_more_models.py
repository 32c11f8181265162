"""Models of other kinds than bench/cpu.py's, at sizes where the kernels take the time, beside
eager and Inductor in one process at torch's threads: where Loupe is weak on a model it was not
tuned for.

    HF_HUB_OFFLINE=1 python3 bench/cpu_more_models.py [--models unet,mobilenet] [--modes infer]
        [--runs 15]

Per model and mode (inference under no_grad; training: forward, a loss, backward): the median
latency of each backend (interleaved rounds, as in bench/cpu.py), Loupe's against Inductor's
and eager's, the largest difference of Loupe's output from eager's (inference only: training
dropout draws other masks), and the ops Loupe ran on a reference implementation or left to the
fallback (the first place to look when a row is slow). Inductor's caches are off, as in
bench/cpu.py.
"""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

# bench/cpu.py's scratch folder, training step and interleaved timing. Imported before torch:
# it sets Inductor's cache location and turns its caches off, which Inductor reads on import.
from cpu import SCRATCH, max_diff, median_latencies, step_fn  # isort: skip

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402


class ResidualBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.short = (
            None
            if stride == 1 and cin == cout
            else nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        )

    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu(y + (x if self.short is None else self.short(x)))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32))
        self.blocks = nn.Sequential(
            ResidualBlock(32, 32, 1), ResidualBlock(32, 64, 2), ResidualBlock(64, 128, 2)
        )
        self.head = nn.Linear(128, 100)

    def forward(self, x):
        x = self.blocks(F.relu(self.stem(x)))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


class MobileNetBlock(nn.Module):
    def __init__(self, c=64):
        super().__init__()
        self.depthwise = nn.Conv2d(c, c, 3, 1, 1, groups=c)
        self.pointwise = nn.Conv2d(c, 2 * c, 1)
        self.norm = nn.BatchNorm2d(2 * c)

    def forward(self, x):
        y = self.norm(self.pointwise(F.relu6(self.depthwise(x))))
        return F.avg_pool2d(F.hardswish(y), 2)


class UNetBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 32, 3, padding=1)
        self.n1 = nn.GroupNorm(8, 32)
        self.down = nn.Conv2d(32, 64, 3, 2, 1)
        self.n2 = nn.GroupNorm(8, 64)
        self.up = nn.ConvTranspose2d(64, 32, 2, 2)
        self.out = nn.Conv2d(64, 16, 3, padding=1)

    def forward(self, x):
        a = F.silu(self.n1(self.c1(x)))
        b = F.silu(self.n2(self.down(a)))
        u = self.up(b) + F.interpolate(b, scale_factor=2, mode="nearest")[:, :32]
        return self.out(torch.cat([a, u], 1))


class Mixer(nn.Module):
    def __init__(self, width=256, tokens=64):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.tokens = nn.Sequential(
            nn.Linear(tokens, 4 * tokens), nn.GELU(), nn.Linear(4 * tokens, tokens)
        )
        self.channels = nn.Sequential(
            nn.Linear(width, 4 * width), nn.SiLU(), nn.Linear(4 * width, width)
        )

    def forward(self, x):
        x = x + self.tokens(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channels(self.n2(x))


class LlamaMlp(nn.Module):
    """RMSNorm written out, then SwiGLU."""

    def __init__(self, width=512, hidden=1408):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.gate = nn.Linear(width, hidden, bias=False)
        self.up = nn.Linear(width, hidden, bias=False)
        self.down = nn.Linear(hidden, width, bias=False)

    def forward(self, x):
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class SdpaAttention(nn.Module):
    def __init__(self, width=256, heads=8):
        super().__init__()
        self.qkv, self.out, self.heads = nn.Linear(width, 3 * width), nn.Linear(width, width), heads

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (
            z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
            for z in self.qkv(x).split(c, -1)
        )
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, c))


class MathChain(nn.Module):
    """Transcendental and piecewise ops beyond the benchmark's chain."""

    def forward(self, x):
        y = torch.erf(x) + torch.log1p(x.abs()) * torch.expm1(x.clamp(-3, 3))
        y = torch.where(y > 0, y.abs().pow(2.5), F.softplus(y)) + F.mish(x)
        return F.elu(y) + torch.atan(x) * F.selu(x) + F.hardsigmoid(x) + torch.asinh(x)


class AudioFrontEnd(nn.Module):
    """A speech model's feature extractor (wav2vec 2.0's shape): strided 1-D convolutions over
    the waveform, a group norm, GELU, then a projection of each frame."""

    def __init__(self, channels=128):
        super().__init__()
        layers = [
            nn.Conv1d(1, channels, 10, stride=5, bias=False),
            nn.GroupNorm(channels, channels),
        ]
        layers.append(nn.GELU())
        for _ in range(4):
            layers += [nn.Conv1d(channels, channels, 3, stride=2, bias=False), nn.GELU()]
        self.extract = nn.Sequential(*layers)
        self.norm, self.project = nn.LayerNorm(channels), nn.Linear(channels, 256)

    def forward(self, wave):
        return self.project(self.norm(self.extract(wave).transpose(1, 2)))


class Decoder(nn.Module):
    """An image decoder's stage: transposed convolution, batch norm, bilinear upsampling, then a
    convolution with instance norm."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(32)
        self.conv = nn.Conv2d(32, 16, 3, padding=1)
        self.norm = nn.InstanceNorm2d(16, affine=True)

    def forward(self, x):
        y = F.interpolate(F.relu(self.bn(self.up(x))), scale_factor=2, mode="bilinear")
        return torch.tanh(self.norm(self.conv(y)))


class GruSteps(nn.Module):
    """A GRU cell stepped over a sequence in Python (a decoder loop, a small RNN model): every
    step in the graph, small matmuls and the gates' sigmoid and tanh."""

    def __init__(self, width=256):
        super().__init__()
        self.cell = nn.GRUCell(width, width)

    def forward(self, x):
        h = torch.zeros(x.shape[0], x.shape[2], dtype=x.dtype, device=x.device)
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
        return h


class Classifier(nn.Module):
    """A classifier's head and its loss, as a training loop computes it: cross entropy with label
    smoothing over 5000 classes (log_softmax, nll_loss and their backward)."""

    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(256, 1024)
        self.logits = nn.Linear(1024, 5000)
        self.register_buffer("target", torch.randint(0, 5000, (64,)))

    def forward(self, x):
        scores = self.logits(F.gelu(self.hidden(x)))
        return F.cross_entropy(scores, self.target, label_smoothing=0.1)


class LastHidden(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids).last_hidden_state


def torch_encoder():
    """nn.TransformerEncoder: in eval mode without grad each layer is torch's one fused op."""
    layer = nn.TransformerEncoderLayer(256, 8, 1024, dropout=0.1, batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), (torch.randn(8, 128, 256),)


def distilbert():
    from transformers import DistilBertConfig, DistilBertModel

    config = DistilBertConfig(
        vocab_size=1000,
        dim=256,
        n_layers=2,
        n_heads=4,
        hidden_dim=1024,
        max_position_embeddings=128,
    )
    return LastHidden(DistilBertModel(config)), (torch.randint(0, 1000, (4, 128)),)


def t5_encoder():
    from transformers import T5Config, T5EncoderModel

    config = T5Config(vocab_size=1000, d_model=256, d_kv=64, d_ff=1024, num_layers=2, num_heads=4)
    return LastHidden(T5EncoderModel(config)), (torch.randint(0, 1000, (4, 128)),)


MODELS = {
    "resnet": lambda: (ResNet(), (torch.randn(16, 3, 64, 64),)),
    "mobilenet": lambda: (MobileNetBlock(), (torch.randn(16, 64, 56, 56),)),
    "unet": lambda: (UNetBlock(), (torch.randn(8, 3, 64, 64),)),
    "mixer": lambda: (Mixer(), (torch.randn(32, 64, 256),)),
    "llama_mlp": lambda: (LlamaMlp(), (torch.randn(8, 128, 512),)),
    "sdpa_attention": lambda: (SdpaAttention(), (torch.randn(4, 256, 256),)),
    "math_chain": lambda: (MathChain(), (torch.randn(4 * 2**20),)),
    "torch_encoder": torch_encoder,
    "distilbert": distilbert,
    "t5_encoder": t5_encoder,
    "audio": lambda: (AudioFrontEnd(), (torch.randn(8, 1, 16000),)),
    "decoder": lambda: (Decoder(), (torch.randn(8, 64, 32, 32),)),
    "gru": lambda: (GruSteps(), (torch.randn(32, 16, 256),)),
    "classifier": lambda: (Classifier(), (torch.randn(64, 256),)),
}
INFERENCE_ONLY = {"math_chain"}


def not_compiled(trace: Path) -> str:
    """The ops Loupe ran on a reference or left to the fallback, from the trace."""
    with sqlite3.connect(trace) as db:
        rows = db.execute(
            "SELECT op_summary FROM kernels "
            "WHERE kind = 'fallback' OR op_summary LIKE '% via reference:%'"
        ).fetchall()
    ops = sorted({summary.split(" via ")[0] for (summary,) in rows} - {"loupe.constant"})
    return ", ".join(ops) or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--modes", default="infer,train")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median of {args.runs}")
    header = (
        "| model | mode | eager ms | inductor ms | loupe ms | loupe/inductor | loupe/eager "
        "| max diff | not compiled |"
    )
    print(header)
    print("|" + "|".join("---" for _ in header.split("|")[1:-1]) + "|")
    for name in args.models.split(","):
        for mode in args.modes.split(","):
            if mode == "train" and name in INFERENCE_ONLY:
                continue
            torch.manual_seed(0)
            torch._dynamo.reset()
            model, inputs = MODELS[name]()
            train = mode == "train"
            model.train(train)
            trace = SCRATCH / f"{name}-{mode}.db"
            backends = {
                "eager": model,
                "inductor": torch.compile(model),
                "loupe": torch.compile(model, backend="loupe", options={"trace": str(trace)}),
            }
            steps = [step_fn(m, inputs, mode) for m in backends.values()]
            results = [step() for step in steps]
            seconds = median_latencies(steps, warmup=3, runs=args.runs)
            ms = {label: 1e3 * t for label, t in zip(backends, seconds)}
            diff = "-" if train else f"{max_diff(results[2], results[0]):.1e}"
            print(
                f"| {name} | {mode} | {ms['eager']:.2f} | {ms['inductor']:.2f} | "
                f"{ms['loupe']:.2f} | {ms['loupe'] / ms['inductor']:.2f} | "
                f"{ms['loupe'] / ms['eager']:.2f} | {diff} | {not_compiled(trace)} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
