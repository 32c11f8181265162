"""An MLP block through torch.compile(backend="loupe") at two batch sizes, forward and backward.

    python samples/mlp.py [TRACE]      # default trace: /tmp/loupe-mlp.db
    loupe show TRACE
samples/mlp.lir is the forward graph this model becomes (its locations point here).
"""

import sys

import torch
import torch.nn as nn


class Mlp(nn.Module):
    def __init__(self, width=64, hidden=256):
        super().__init__()
        self.norm, self.fc1 = nn.LayerNorm(width), nn.Linear(width, hidden)
        self.act, self.fc2 = nn.GELU(), nn.Linear(hidden, width)

    def forward(self, x):
        h = self.norm(x)
        h = self.fc1(h)
        h = self.act(h)
        h = self.fc2(h)
        return x + h


def main() -> None:
    trace = sys.argv[1] if len(sys.argv) > 1 else "/tmp/loupe-mlp.db"
    torch.manual_seed(0)
    model = Mlp()
    compiled = torch.compile(model, backend="loupe", options={"trace": trace})
    for batch in (8, 16):
        x = torch.randn(batch, 64, requires_grad=True)
        y = compiled(x)
        y.square().sum().backward()
        error = (y - model(x)).abs().max().item()
        print(f"batch {batch}: max |loupe - eager| = {error:.2e}")
    print(f"trace: {trace}")


if __name__ == "__main__":
    main()
