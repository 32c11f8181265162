"""`loupe diff` on a function that branches on a size: each size takes another branch, and the
top finding names the `if` that chose, with the line each compile went on to, whether Dynamo
compiled it with static shapes (no guard names the `if`) or with automatic dynamic shapes."""

import inspect
import json
import subprocess

import pytest
import torch

from branching import branch_on_parity, line_of


@pytest.mark.parametrize("dynamic", [False, None], ids=["static", "automatic_dynamic"])
def test_top_finding_names_the_condition_and_both_continuations(trace_path, dynamic):
    compiled = torch.compile(
        branch_on_parity, backend="loupe", dynamic=dynamic, options={"trace": trace_path}
    )
    sizes = (4, 5, 6)
    for size in sizes:
        x = torch.randn(size)
        torch.testing.assert_close(compiled(x), branch_on_parity(x))

    diff = subprocess.run(["loupe", "diff", trace_path, "--json"], capture_output=True, text=True)
    assert diff.returncode == 1, diff.stdout + diff.stderr
    report = json.loads(diff.stdout)
    assert report["diffs"], report
    condition = line_of(branch_on_parity, "if h.size(0)")
    even, odd = line_of(branch_on_parity, "h + 1"), line_of(branch_on_parity, "h - 1")
    # Each size compiled once, and each is diffed against the size before it.
    assert len(report["diffs"]) == len(sizes) - 1, report
    for a_size, compared in zip(sizes, report["diffs"]):
        top = compared["findings"][0]
        assert top["kind"] == "diverged_branch", compared["findings"]
        assert top["source"]["line"] == condition, top
        assert top["source"]["file"] == inspect.getsourcefile(branch_on_parity), top
        went_a, went_b = (even, odd) if a_size % 2 == 0 else (odd, even)
        assert f"A went on to line {went_a}" in top["message"], top["message"]
        assert f"B went on to line {went_b}" in top["message"], top["message"]
        assert "if h.size(0) % 2 == 0:" in top["message"], top["message"]
