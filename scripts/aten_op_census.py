#!/usr/bin/env python3
"""Which aten ops the reference models need, and which of them Loupe's op registry lacks.

Captures the forward and backward aten graphs of every model in unit_tests/python/models.py
(inference, training with dropout, dynamic shapes, a training step) through aot_autograd, and
prints each distinct op with the models using it. Ops missing from the registry are marked;
SymInt bookkeeping (sym_size, Python arithmetic on sizes) and tuple indexing are listed apart:
the FX converter evaluates them, the registry does not hold them.

    python scripts/aten_op_census.py [--loupe-opt build/tools/loupe-opt]
"""

import argparse
import collections
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from functorch.compile import make_boxed_func  # noqa: E402
from torch._dynamo.backends.common import aot_autograd  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "unit_tests" / "python"))
import models  # noqa: E402


def op_name(target) -> str | None:
    """The registry's name for an FX call target, or None for nodes that are not ops."""
    if isinstance(target, str):
        return None
    name = str(target)
    if name.startswith("<built-in function") or "." not in name:
        # operator.getitem and friends: tuple plumbing, not an op
        return f"python.{getattr(target, '__name__', name)}"
    return name.removesuffix(".default")


def capture(fn, inputs, *, dynamic=False, backward=True) -> set[str]:
    """Runs fn once (and its backward) under aot_autograd, returning the ops of every graph."""
    seen: set[str] = set()

    def collect(gm, _example_inputs):
        for node in gm.graph.nodes:
            if node.op == "call_function" and (name := op_name(node.target)):
                seen.add(name)
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    inputs = [t.detach().requires_grad_(backward) if t.is_floating_point() else t for t in inputs]
    compiled = torch.compile(
        fn, backend=aot_autograd(fw_compiler=collect, bw_compiler=collect), dynamic=dynamic
    )
    out = compiled(*inputs)
    if backward:
        out.float().square().sum().backward()
    return seen


def census() -> dict[str, set[str]]:
    """Model variant -> ops used."""
    ops_by_variant: dict[str, set[str]] = {}
    for name, builder in models.MODELS.items():
        module, inputs = builder()
        ops_by_variant[name] = capture(module, inputs)
    for name in ("gpt2", "bert"):
        module, inputs = models.MODELS[name](dropout=None)
        ops_by_variant[f"{name}_dropout_train"] = capture(module.train(), inputs)
        module, inputs = models.MODELS[name](attention="sdpa")
        ops_by_variant[f"{name}_sdpa"] = capture(module, inputs)
    for name in models.DYNAMIC_MODELS:
        module, inputs = models.MODELS[name](batch=3)
        ops_by_variant[f"{name}_dynamic"] = capture(module, inputs, dynamic=True)
    for optimizer in (torch.optim.SGD, torch.optim.AdamW):
        module, inputs = models.cnn()
        module.train()
        step = optimizer(module.parameters(), lr=1e-2)
        ops_by_variant[f"cnn_train_{optimizer.__name__}"] = capture(module, inputs)
        step.step()
    return ops_by_variant


def registered_ops(loupe_opt: str) -> set[str]:
    listing = subprocess.run(
        [loupe_opt, "--list-ops"], check=True, capture_output=True, text=True
    ).stdout
    return {line.split()[0] for line in listing.splitlines() if line.strip()}


def is_converter_op(name: str) -> bool:
    """SymInt arithmetic and tuple indexing: evaluated by the FX converter, not registry ops."""
    return name.startswith("aten.sym_") or name.startswith("python.")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--loupe-opt", default=str(ROOT / "build-main" / "compiler" / "tools" / "loupe-opt")
    )
    args = parser.parse_args()

    registry = registered_ops(args.loupe_opt)
    users: dict[str, list[str]] = collections.defaultdict(list)
    for variant, ops in census().items():
        for op in ops:
            users[op].append(variant)

    missing = 0
    print(f"{'op':<48} {'registered':<10} models")
    for op in sorted(users, key=lambda op: (is_converter_op(op), op)):
        if is_converter_op(op):
            status = "converter"
        elif op in registry:
            status = "yes"
        else:
            status = "MISSING"
            missing += 1
        print(f"{op:<48} {status:<10} {', '.join(sorted(users[op]))}")
    print(f"\n{len(users)} distinct ops, {missing} missing from the registry")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
