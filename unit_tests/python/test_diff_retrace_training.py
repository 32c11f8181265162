"""`loupe diff` on real models' training steps without a bug: a tiny GPT-2 and a tiny BERT trained
at batch 2, 4 and 8 compile their forward and backward statically at batch 2 and with a symbolic
batch after. aot_autograd's partitioner saves other values for the backward in the two compiles
(GPT-2: a transposed activation in one, the activation itself in the other; BERT: the token
type ids expanded to the batch in one, the row it expands in the other; in another order, with
the batch as an extra input), which computes the same: the differ lines the saved values up
(docs/differ.md, "Views") and must find nothing of warning severity. So must the small models
of models.py, whose backward graphs the partitioner saves alike."""

import json
import subprocess

import pytest
import torch

pytest.importorskip("transformers")

import models  # noqa: E402
from transformer_models import build, make_inputs  # noqa: E402


def diff_report(trace_path: str) -> dict:
    """`loupe diff TRACE --json`, which must say the compiles are the same and warn of nothing."""
    diff = subprocess.run(["loupe", "diff", trace_path, "--json"], capture_output=True, text=True)
    assert diff.returncode == 0, diff.stdout + diff.stderr
    report = json.loads(diff.stdout)
    assert report["same"]
    findings = [f for d in report["diffs"] for f in d["findings"]]
    warnings = [f for f in findings if f["severity"] != "note"]
    assert not warnings, warnings
    return report


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_a_model_trained_at_a_dynamic_batch_has_no_warning(trace_path, name):
    torch.manual_seed(0)
    model = build(name, False, None).train()
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
    for batch in (2, 4, 8):
        compiled(**make_inputs(name, batch, False)).sum().backward()

    report = diff_report(trace_path)
    # The backward's note says the partitioner saved other values.
    backward = [d for d in report["diffs"] if "backward" in d["a"]["label"]]
    assert backward, "the batch-4 backward should be a recompile of the batch-2 one"
    notes = [f for d in backward for f in d["findings"] if f["kind"] == "retraced_views"]
    assert any("saved other values" in f["message"] for f in notes), notes


@pytest.mark.parametrize("name", ["mlp", "cnn", "attention"])
def test_a_small_model_trained_at_three_batches_has_no_warning(trace_path, name):
    model, (example,) = models.MODELS[name]()
    compiled = torch.compile(model.train(), backend="loupe", options={"trace": trace_path})
    for batch in (2, 4, 8):
        x = torch.randn(batch, *example.shape[1:], requires_grad=True)
        compiled(x).sum().backward()

    report = diff_report(trace_path)
    assert {d["a"]["graph_kind"] for d in report["diffs"]} == {"forward", "backward"}, report


class HardcodedBatch(torch.nn.Module):
    """A reshape to batch 2 planted in a training step: lining up saved values must not hide it."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, x):
        h = self.proj(x).reshape(2, -1, 16)
        return torch.relu(h).reshape(x.shape[0], x.shape[1], 16)


def test_a_hardcoded_reshape_in_a_training_step_is_still_found(trace_path):
    compiled = torch.compile(HardcodedBatch(), backend="loupe", options={"trace": trace_path})
    for batch in (2, 4, 8):
        compiled(torch.randn(batch, 8, 16)).sum().backward()

    diff = subprocess.run(["loupe", "diff", trace_path, "--json"], capture_output=True, text=True)
    assert diff.returncode == 1, diff.stdout + diff.stderr
    report = json.loads(diff.stdout)
    for d in report["diffs"]:
        assert d["findings"][0]["kind"] == "hardcoded_dim", (d["a"]["label"], d["findings"])
