"""Planted bug: a broadcast blow-up. The regression head predicts (B, 1) and the target is (B,),
so `pred - target` broadcasts to (B, B): the loss is wrong at every batch size, and its cost
grows with B squared. Nothing fails; the numbers are just wrong.

    python samples/planted/broadcast_blowup.py TRACE
    loupe diff TRACE
"""

import sys

import torch
import torch.nn as nn


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x, target):
        pred = self.body(x)
        error = pred - target  # PLANTED: (B, 1) - (B,) broadcasts to (B, B)
        return error.pow(2).mean()


def main() -> None:
    trace = sys.argv[1] if len(sys.argv) > 1 else "loupe_traces/broadcast_blowup.db"
    torch.manual_seed(0)
    model = Regressor()
    compiled = torch.compile(model, backend="loupe", options={"trace": trace})
    for batch in (4, 8, 16):
        loss = compiled(torch.randn(batch, 16), torch.randn(batch))
        loss.backward()
        print(f"batch {batch}: loss {loss.item():.4f}")
    print(f"trace: {trace}")


if __name__ == "__main__":
    main()
