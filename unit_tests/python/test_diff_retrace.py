"""`loupe diff` on real models without a bug: a tiny GPT-2 and a tiny BERT run at batch 2, 4 and 8
with torch's default dynamic settings compile statically at batch 2 and with a symbolic batch
after, and the two traces differ at most in views (docs/differ.md, "Views"). The differ must find
nothing of warning severity. Inference only: test_diff_retrace_training.py trains them."""

import json
import re
import subprocess

import pytest
import torch

pytest.importorskip("transformers")

from transformer_models import build, make_inputs  # noqa: E402


# GPT-2's full slice is an alias at batch 2 and a slice after (a retraced_views note); BERT's
# graphs are the same up to shapes.
@pytest.mark.parametrize("name, retraced", [("gpt2", True), ("bert", False)])
def test_a_model_recompiled_for_a_dynamic_batch_has_no_warning(trace_path, name, retraced):
    model = build(name, False, None).eval()
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
    with torch.no_grad():
        for batch in (2, 4, 8):
            compiled(**make_inputs(name, batch, False))

    diff = subprocess.run(["loupe", "diff", trace_path, "--json"], capture_output=True, text=True)
    assert diff.returncode == 0, diff.stdout + diff.stderr
    report = json.loads(diff.stdout)
    assert report["same"]
    assert report["diffs"], "the batch-4 compile should be a recompile of the batch-2 one"
    findings = [f for d in report["diffs"] for f in d["findings"]]
    warnings = [f for f in findings if f["severity"] != "note"]
    assert not warnings, warnings
    assert any(f["kind"] == "retraced_views" for f in findings) == retraced, findings
    # The label names the keyword input with its symbolic batch and counts the weights (and
    # BERT's buffers: "+42 parameters, 2 buffers unchanged").
    label = report["diffs"][0]["b"]["label"]
    assert "['input_ids']=[s" in label, label
    assert re.search(r"\+\d+ parameters(, \d+ buffers?)? unchanged", label), label
