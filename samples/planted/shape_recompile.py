"""Planted bug: a recompile caused by a branch on a shape. Once Dynamo compiles the function
for any batch size, the branch on the batch's parity becomes a guard; the first odd batch fails
it and compiles the function again.

    python samples/planted/shape_recompile.py TRACE
    loupe diff TRACE
"""

import sys

import torch


def pool_pairs(x):
    if x.shape[0] % 2 == 0:  # PLANTED: specialises the compiled code on the batch's parity
        return x.reshape(-1, 2, x.shape[1]).mean(dim=1)
    return x


def main() -> None:
    trace = sys.argv[1] if len(sys.argv) > 1 else "loupe_traces/shape_recompile.db"
    compiled = torch.compile(pool_pairs, backend="loupe", options={"trace": trace})
    for batch in (8, 16, 7):
        out = compiled(torch.randn(batch, 4))
        print(f"batch {batch}: {tuple(out.shape)}")
    print(f"trace: {trace}")


if __name__ == "__main__":
    main()
