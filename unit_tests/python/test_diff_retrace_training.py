"""`loupe diff` on a real model's training steps without a bug: a tiny GPT-2 trained at batch 2,
4 and 8 compiles its forward and backward statically at batch 2 and with a symbolic batch
after. aot_autograd's partitioner saves other values for the backward in the two compiles (a
transposed activation in one, the activation itself in the other, in another order, with the
batch as an extra input), which computes the same: the differ lines the saved values up
(docs/differ.md, "Views") and must find nothing of warning severity."""

import json
import subprocess

import pytest
import torch

pytest.importorskip("transformers")

from transformer_models import build, make_inputs  # noqa: E402


def test_gpt2_trained_at_a_dynamic_batch_has_no_warning(trace_path):
    torch.manual_seed(0)
    model = build("gpt2", False, None).train()
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
    for batch in (2, 4, 8):
        compiled(**make_inputs("gpt2", batch, False)).sum().backward()

    diff = subprocess.run(["loupe", "diff", trace_path, "--json"], capture_output=True, text=True)
    assert diff.returncode == 0, diff.stdout + diff.stderr
    report = json.loads(diff.stdout)
    assert report["same"]
    findings = [f for d in report["diffs"] for f in d["findings"]]
    warnings = [f for f in findings if f["severity"] != "note"]
    assert not warnings, warnings
    # The backward's note says the partitioner saved other values.
    backward = [d for d in report["diffs"] if "backward" in d["a"]["label"]]
    assert backward, "the batch-4 backward should be a recompile of the batch-2 one"
    notes = [f for d in backward for f in d["findings"] if f["kind"] == "retraced_views"]
    assert any("saved other values" in f["message"] for f in notes), notes
