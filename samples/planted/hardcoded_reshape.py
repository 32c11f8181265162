"""Planted bug: a reshape hard-coded to the batch size it was written at. At batch 8,
`h.reshape(8, -1)` is a no-op; at batch 16 it silently folds pairs of samples together and
the model returns 8 scores instead of 16.

    python samples/planted/hardcoded_reshape.py TRACE
    loupe diff TRACE
"""

import sys

import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(12, 24)
        self.head = nn.Linear(24, 1)

    def forward(self, x):
        h = torch.tanh(self.embed(x))
        h = h.reshape(8, -1)  # PLANTED: only right when the batch is 8
        return h.mean(dim=1)


def main() -> None:
    trace = sys.argv[1] if len(sys.argv) > 1 else "loupe_traces/hardcoded_reshape.db"
    torch.manual_seed(0)
    compiled = torch.compile(Scorer(), backend="loupe", options={"trace": trace})
    for batch in (8, 16):
        scores = compiled(torch.randn(batch, 12))
        print(f"batch {batch}: {tuple(scores.shape)} scores for {batch} samples")
    print(f"trace: {trace}")


if __name__ == "__main__":
    main()
