"""Planted bug: a shape that depends on the rank. Two processes under torchrun (gloo on the
CPU) each compile the same model with Loupe, but rank 1 pads its batch with a row of zeros
first, so its graph has nodes rank 0's lacks and every size after them is a row larger. The
collective at the end still agrees (the output is summed over the batch), so nothing fails
here; with a collective inside the model, ranks that trace different graphs hang or exchange
garbage.

    torchrun --standalone --nproc-per-node 2 samples/ranks/rank_shape.py FOLDER [--same]
    loupe diff --ranks FOLDER

Each rank writes FOLDER/rank<R>.db. With --same no rank pads: the ranks compile the same graph.
"""

import sys
from pathlib import Path

import torch
import torch.distributed as dist


class Head(torch.nn.Module):
    def __init__(self, pad_rows: int) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)
        self.pad_rows = pad_rows

    def forward(self, x):
        if self.pad_rows:
            x = torch.cat([x, x.new_zeros(self.pad_rows, x.shape[1])])  # PLANTED: a row more
        return torch.relu(self.fc(x)).sum(dim=0)


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    folder = Path(args[0] if args else "loupe_traces/ranks")
    planted = "--same" not in sys.argv
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = Head(pad_rows=1 if planted and rank == 1 else 0)
    trace = str(folder / f"rank{rank}.db")
    compiled = torch.compile(model, backend="loupe", options={"trace": trace})
    with torch.no_grad():
        out = compiled(torch.randn(4, 16))
        dist.all_reduce(out)
    print(f"rank {rank}: output {tuple(out.shape)}, trace {trace}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
