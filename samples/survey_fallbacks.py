#!/usr/bin/env python3
"""Which ops of real transformer models Loupe still leaves to the fallback, and how far the
compiled results are from eager.

Builds tiny `transformers` models from their configs (random weights, no download), runs each
through torch.compile(backend="loupe") in several scenarios, forward and backward, and prints
per model and scenario: the ops the fallback ran (`loupe show --json`'s fallback_nodes and the
trace's fallback kernels), the graphs that ran eagerly, and the largest difference from eager
over the output and every gradient.

Scenarios: `eval` (no dropout), `mask` (a padded batch with an attention mask), `train`
(dropout on, a training step), `dynamic` (dynamic=True, two batch sizes). In `train`, Loupe's
dropout masks come from its own generator, so the error against eager is large; with
`--dropout-rng torch` torch draws them (one aten.bernoulli.p fallback node per dropout, see
docs/python-adapter.md) and the results match eager.

    HF_HUB_OFFLINE=1 python3 samples/survey_fallbacks.py [--models gpt2,bert]
        [--scenarios eval,mask] [--dropout-rng torch]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "unit_tests" / "python"))
from transformer_models import BATCH, SPECS, build, make_inputs  # noqa: E402


def forward_backward(model, inputs: dict, seed: int = 0) -> list[torch.Tensor]:
    """The output and every parameter gradient, for a fixed random cotangent."""
    torch.manual_seed(seed)
    y = model(**inputs)
    cotangent = torch.randn(y.shape, generator=torch.Generator().manual_seed(1))
    y.backward(cotangent)
    grads = [
        p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in model.parameters()
    ]
    model.zero_grad(set_to_none=True)
    return [y.detach()] + grads


def max_error(got: list[torch.Tensor], want: list[torch.Tensor]) -> float:
    return max(
        float((g.double() - w.double()).abs().max()) if g.numel() else 0.0
        for g, w in zip(got, want)
    )


@dataclass
class Result:
    fallback_nodes: int = 0
    fallback_ops: dict[str, int] = field(default_factory=dict)
    eager_graphs: list[str] = field(default_factory=list)
    error: float = float("nan")
    seconds: float = 0.0
    failure: str = ""


def trace_findings(trace: str, result: Result) -> None:
    shown = json.loads(
        subprocess.run(["loupe", "show", trace, "--json"], check=True, capture_output=True).stdout
    )
    result.fallback_nodes = shown["fallback_nodes"]
    with sqlite3.connect(trace) as db:
        for (ops,) in db.execute("SELECT op_summary FROM kernels WHERE kind = 'fallback'"):
            result.fallback_ops[ops] = result.fallback_ops.get(ops, 0) + 1
        for kind, status, message in db.execute(
            "SELECT graph_kind, status, error_message FROM compiles WHERE status != 'ok'"
        ):
            result.eager_graphs.append(f"{kind} {status}: {(message or '').splitlines()[0][:160]}")


def run_scenario(name: str, scenario: str, attention: str | None) -> Result:
    result = Result()
    start = time.time()
    torch._dynamo.reset()
    dropout = scenario == "train"
    model = build(name, dropout, attention)
    model.train(dropout)
    reference = copy.deepcopy(model)
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.db")
        compiled = torch.compile(
            model, backend="loupe", options={"trace": trace}, dynamic=scenario == "dynamic"
        )
        batches = (BATCH, BATCH + 1) if scenario == "dynamic" else (BATCH,)
        try:
            errors = []
            for batch in batches:
                inputs = make_inputs(name, batch, scenario == "mask" and SPECS[name].masks)
                errors.append(
                    max_error(
                        forward_backward(compiled, inputs), forward_backward(reference, inputs)
                    )
                )
            result.error = max(errors)
        except Exception as error:  # a survey reports failures and goes on
            result.failure = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
        if os.path.exists(trace):
            trace_findings(trace, result)
    result.seconds = time.time() - start
    return result


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--models", default=",".join(SPECS), help="comma-separated: " + ", ".join(SPECS)
    )
    parser.add_argument("--scenarios", default="eval,mask,train,dynamic")
    parser.add_argument(
        "--attention", default=None, help="attn_implementation (default: transformers' own)"
    )
    parser.add_argument(
        "--json", action="store_true", help="one JSON object per line instead of text"
    )
    parser.add_argument(
        "--dropout-rng", choices=("loupe", "torch"), default="loupe", help="who draws dropout masks"
    )
    args = parser.parse_args()
    os.environ["LOUPE_DROPOUT_RNG"] = args.dropout_rng  # the backend's dropout_rng option

    totals: dict[str, int] = {}
    for name in args.models.split(","):
        for scenario in args.scenarios.split(","):
            if scenario == "mask" and not SPECS[name].masks:
                continue
            r = run_scenario(name, scenario, args.attention)
            for ops, count in r.fallback_ops.items():
                totals[ops] = totals.get(ops, 0) + count
            if args.json:
                print(json.dumps({"model": name, "scenario": scenario, **r.__dict__}), flush=True)
                continue
            counts = f"fallback_nodes={r.fallback_nodes:<3} max_error={r.error:.2e}"
            print(f"{name:10} {scenario:8} {counts} ({r.seconds:.0f}s)", flush=True)
            for ops, count in sorted(r.fallback_ops.items()):
                print(f"    fallback {ops} x{count}")
            for graph in r.eager_graphs:
                print(f"    eager    {graph}")
            if r.failure:
                print(f"    FAILED   {r.failure}")
    if not args.json:
        print("\nfallback kernels over all runs, most frequent first:")
        for ops, count in sorted(totals.items(), key=lambda kv: -kv[1]):
            print(f"  {count:4}  {ops}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
