"""The models Loupe must compile exactly like eager: shared by the op census
(scripts/aten_op_census.py) and the correctness tests (test_models.py).

Each builder returns (module, example inputs) with a fixed seed, tiny sizes and random
weights, so the tests run in seconds on a CPU and need no download.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 100
SEQ = 8


class Mlp(nn.Module):
    def __init__(self, width=32, hidden=64):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


class SmallCnn(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        # No conv bias before batch norm (as in ResNet): BN cancels it, so its true gradient is
        # exactly zero and both eager and Loupe hold rounding noise there, which Adam would turn
        # into full-size steps of either sign.
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.gap(F.relu(self.bn2(self.conv2(x))))
        return self.fc(torch.flatten(x, 1))


class CausalSelfAttention(nn.Module):
    """Attention written with plain ops (no scaled_dot_product_attention), as in nanoGPT."""

    def __init__(self, width=32, heads=4, max_len=16):
        super().__init__()
        self.heads = heads
        # No qkv bias (as in LLaMA-style blocks): the key bias adds q.b_k to every score of a row,
        # which softmax ignores, so its true gradient is exactly zero and Adam would turn the
        # rounding noise there into full-size steps of either sign.
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.proj = nn.Linear(width, width)
        self.register_buffer(
            "mask", torch.tril(torch.ones(max_len, max_len)).view(1, 1, max_len, max_len)
        )

    def forward(self, x):
        batch, seq, width = x.shape
        q, k, v = self.qkv(x).split(width, dim=2)
        q, k, v = (
            t.view(batch, seq, self.heads, width // self.heads).transpose(1, 2) for t in (q, k, v)
        )
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        scores = scores.masked_fill(self.mask[:, :, :seq, :seq] == 0, float("-inf"))
        attention = F.softmax(scores, dim=-1)
        y = (attention @ v).transpose(1, 2).contiguous().view(batch, seq, width)
        return self.proj(y)


# The transformers builders take `attention`, the attn_implementation: None is transformers'
# default ("sdpa": torch's fused attention kernel); "eager" spells attention with matmuls,
# softmax and masking.


class TensorOutput(nn.Module):
    """A transformers model returning its first output, so every model maps tensors to a tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids)[0]


# The builders' sizes default to the tiny ones the tests use; bench/cpu.py asks for larger ones.


def gpt2(
    dropout: float | None = 0.0,
    batch: int = 2,
    attention: str | None = None,
    width: int = 32,
    heads: int = 2,
    seq: int = SEQ,
    vocab: int = VOCAB,
):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    rates = (
        {}
        if dropout is None
        else {"resid_pdrop": dropout, "embd_pdrop": dropout, "attn_pdrop": dropout}
    )
    config = GPT2Config(
        vocab_size=vocab,
        n_positions=max(32, seq),
        n_embd=width,
        n_layer=2,
        n_head=heads,
        bos_token_id=None,
        eos_token_id=None,
        attn_implementation=attention,
        **rates,
    )
    model = TensorOutput(GPT2LMHeadModel(config)).eval()
    return model, (torch.randint(0, vocab, (batch, seq)),)


def bert(
    dropout: float | None = 0.0,
    batch: int = 2,
    attention: str | None = None,
    width: int = 32,
    heads: int = 2,
    seq: int = SEQ,
    vocab: int = VOCAB,
    intermediate: int = 64,
):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    rates = (
        {}
        if dropout is None
        else {"hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout}
    )
    config = BertConfig(
        vocab_size=vocab,
        hidden_size=width,
        num_hidden_layers=2,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=max(32, seq),
        attn_implementation=attention,
        **rates,
    )
    model = TensorOutput(BertModel(config, add_pooling_layer=False)).eval()
    return model, (torch.randint(0, vocab, (batch, seq)),)


def mlp(batch: int = 8, width: int = 32, hidden: int = 64):
    torch.manual_seed(0)
    return Mlp(width, hidden).eval(), (torch.randn(batch, width),)


def cnn(batch: int = 4, image: int = 16):
    torch.manual_seed(0)
    return SmallCnn().eval(), (torch.randn(batch, 3, image, image),)


def attention(batch: int = 2, width: int = 32, heads: int = 4, seq: int = SEQ):
    torch.manual_seed(0)
    model = CausalSelfAttention(width, heads, max(16, seq)).eval()
    return model, (torch.randn(batch, seq, width),)


def graph_break_fn(x):
    """Two graphs: Dynamo stops at the print and resumes after it."""
    y = torch.sin(x) * 2.0
    print("loupe graph break", end="\r")
    return torch.relu(y) + x.sum(dim=-1, keepdim=True)


class GraphBreak(nn.Module):
    def forward(self, x):
        return graph_break_fn(x)


def graph_break(batch: int = 4):
    torch.manual_seed(0)
    return GraphBreak(), (torch.randn(batch, 16),)


# Name -> builder: the census walks this table and the tests are parametrised over it.
MODELS = {
    "mlp": mlp,
    "cnn": cnn,
    "attention": attention,
    "gpt2": gpt2,
    "bert": bert,
    "graph_break": graph_break,
}

# Builders taking a `batch` argument, used by the dynamic-shape runs.
DYNAMIC_MODELS = ("mlp", "attention", "gpt2")
