"""Planted bug: a graph break that appears only at some shapes. A debugging print that only
fires for large batches splits the compiled graph in two for those batches, so large batches
run two graphs and a trip through Python.

    python samples/planted/shape_graph_break.py TRACE
    loupe diff TRACE
"""

import sys

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 32)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        if x.shape[0] > 8:
            print("large batch", x.shape[0])  # PLANTED: breaks the graph for batches above 8
        return x + self.fc2(h)


def main() -> None:
    trace = sys.argv[1] if len(sys.argv) > 1 else "loupe_traces/shape_graph_break.db"
    torch.manual_seed(0)
    compiled = torch.compile(Block(), backend="loupe", options={"trace": trace})
    for batch in (4, 16):
        compiled(torch.randn(batch, 32))
    print(f"trace: {trace}")


if __name__ == "__main__":
    main()
