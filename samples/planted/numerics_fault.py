"""A numerics bug found by `loupe bisect`. The model is correct; the bug is planted in the
compiler with fault injection (a testing aid): `--inject-fault N` miscompiles the graph right
after the pipeline's N-th rewrite or fusion decision, as a real miscompile would, and
`loupe bisect` must name decision N, its pass, its fused nodes and their source lines.

    loupe bisect --inject-fault 7 --trace TRACE samples/planted/numerics_fault.py
"""

import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(32, 64)
        self.norm = nn.LayerNorm(64)
        self.out = nn.Linear(64, 10)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.proj(x))
        h = self.norm(h) * torch.sigmoid(h)
        return torch.log_softmax(self.out(h), dim=-1)


def main() -> None:
    torch.manual_seed(0)
    model = Head()
    compiled = torch.compile(model, backend="loupe")
    with torch.no_grad():
        x = torch.randn(16, 32)
        error = (compiled(x) - model(x)).abs().max().item()
    print(f"max |loupe - eager| = {error:.3g}")


if __name__ == "__main__":
    main()
