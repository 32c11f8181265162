"""`loupe diff` on a real model without a bug: a tiny GPT-2 run at batch 2, 4 and 8 with torch's
default dynamic settings compiles statically at batch 2 and with a symbolic batch after, and
the two traces differ only in views (docs/differ.md, "Views"). The differ must find nothing of
warning severity. Inference only: a training step's backward graphs take other saved values
in the static and the dynamic compile, which the differ still reports."""

import json
import subprocess

import pytest
import torch

pytest.importorskip("transformers")

from transformer_models import build, make_inputs  # noqa: E402


def test_gpt2_recompiled_for_a_dynamic_batch_has_no_warning(trace_path):
    model = build("gpt2", False, None).eval()
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
    with torch.no_grad():
        for batch in (2, 4, 8):
            compiled(**make_inputs("gpt2", batch, False))

    diff = subprocess.run(["loupe", "diff", trace_path, "--json"], capture_output=True, text=True)
    assert diff.returncode == 0, diff.stdout + diff.stderr
    report = json.loads(diff.stdout)
    assert report["same"]
    assert report["diffs"], "the batch-4 compile should be a recompile of the batch-2 one"
    findings = [f for d in report["diffs"] for f in d["findings"]]
    warnings = [f for f in findings if f["severity"] != "note"]
    assert not warnings, warnings
    assert any(f["kind"] == "retraced_views" for f in findings), findings
    # The label names the keyword input with its symbolic batch and counts the weights.
    label = report["diffs"][0]["b"]["label"]
    assert "['input_ids']=[s" in label, label
    assert "parameters unchanged" in label, label
