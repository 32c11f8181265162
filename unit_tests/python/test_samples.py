"""The planted-bug samples (samples/planted/): each is run as a user would, and the differ's
top finding must name the line marked PLANTED; the fault-injection sample must be bisected
to the injected decision. The sample without a bug (samples/mlp.py) must come out clean."""

import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "planted"


def planted_line(script: Path) -> int:
    lines = script.read_text().splitlines()
    marked = [i + 1 for i, line in enumerate(lines) if "# PLANTED" in line]
    assert len(marked) == 1, f"{script} must mark exactly one line with '# PLANTED'"
    return marked[0]


def run_sample(script: Path, trace: Path) -> None:
    subprocess.run(
        [sys.executable, str(script), str(trace)], check=True, capture_output=True, timeout=600
    )


@pytest.mark.parametrize(
    "sample, kind",
    [
        ("broadcast_blowup", "broadcast_blowup"),
        ("hardcoded_reshape", "hardcoded_dim"),
        ("shape_graph_break", "graph_break"),
        ("shape_recompile", "diverged_branch"),
    ],
)
def test_top_finding_names_the_planted_line(tmp_path, sample, kind):
    script = SAMPLES / f"{sample}.py"
    trace = tmp_path / "trace.db"
    run_sample(script, trace)

    diff = subprocess.run(["loupe", "diff", str(trace), "--json"], capture_output=True, text=True)
    assert diff.returncode == 1, diff.stderr  # different beyond shapes
    report = json.loads(diff.stdout)
    # Every recompile pair of the frame is diffed; the planted line must top one of them, and
    # the pair of the first recompile for all but the parity branch (which fails on the third
    # call only).
    tops = [d["findings"][0] for d in report["diffs"] if d["findings"]]
    named = [
        top
        for top in tops
        if top["kind"] == kind
        and top["source"]
        and Path(top["source"]["file"]).name == script.name
        and top["source"]["line"] == planted_line(script)
    ]
    assert named, f"no diff's top finding is a {kind} at line {planted_line(script)}: {tops}"
    if sample != "shape_recompile":
        assert tops[0] in named
    else:
        # The parity branch is also the guard that failed: that finding names the line too,
        # ranked below the branch, which names where each compile went on.
        guards = [
            f
            for d in report["diffs"]
            for f in d["findings"]
            if f["kind"] == "failed_guard"
            and f["source"]
            and f["source"]["line"] == planted_line(script)
        ]
        assert guards, report


def test_bisect_names_a_randomly_injected_fault(tmp_path):
    script = SAMPLES / "numerics_fault.py"
    decision = random.randint(1, 12)
    trace = tmp_path / "trace.db"
    result = subprocess.run(
        ["loupe", "bisect", "--inject-fault", str(decision), "--trace", str(trace), str(script)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"culprit: decision {decision} of" in result.stdout, (decision, result.stdout)
    assert os.path.exists(trace)


def sample_model(name: str):
    """The model class a sample script defines, loaded from its file (samples/ is no package)."""
    path = SAMPLES.parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"sample_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_the_mlp_sample_at_three_batches_has_no_warning(tmp_path, training):
    # samples/mlp.py's block without a bug: its recompile for a dynamic batch differs in
    # nothing the differ warns of, forward and backward.
    torch.manual_seed(0)
    model = sample_model("mlp").Mlp().train(training)
    trace = tmp_path / "trace.db"
    compiled = torch.compile(model, backend="loupe", options={"trace": str(trace)})
    for batch in (2, 4, 8):
        x = torch.randn(batch, 64, requires_grad=training)
        with torch.set_grad_enabled(training):
            y = compiled(x)
        if training:
            y.square().sum().backward()

    diff = subprocess.run(["loupe", "diff", str(trace), "--json"], capture_output=True, text=True)
    assert diff.returncode == 0, diff.stdout + diff.stderr
    report = json.loads(diff.stdout)
    assert report["diffs"], "the batch-4 compile should be a recompile of the batch-2 one"
    kinds = {d["a"]["graph_kind"] for d in report["diffs"]}
    assert kinds == ({"forward", "backward"} if training else {"inference"}), kinds
    warnings = [f for d in report["diffs"] for f in d["findings"] if f["severity"] != "note"]
    assert not warnings, warnings
