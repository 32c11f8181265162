"""`loupe reduce` on a real model's graph: a tiny GPT-2 from transformers, compiled through the
backend with a trace, miscompiled by a fault injected after one of its rewrites (the copy of the
embeddings that algebraic simplification drops). The reduction, within the default budget,
comes down to a few nodes at small dims, and the `loupe run` command it prints, run, shows the
divergence; the reduction is a row of the trace."""

import shlex
import subprocess
import sys

import pytest
import torch

from conftest import query

pytest.importorskip("transformers")
import transformer_models  # noqa: E402

pytest.importorskip("loupe.backend", reason="the loupe package is not installed (pip install .)")

CLI = [sys.executable, "-m", "loupe._cli"]


def loupe(*args, cwd):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_reduces_a_fault_in_gpt2_to_a_few_nodes_that_reproduce_it(tmp_path, trace_path):
    model = transformer_models.build("gpt2", dropout=False, attention=None).eval()
    inputs = transformer_models.make_inputs("gpt2", batch=2, mask=False)
    compiled = torch.compile(model, backend="loupe", options={"trace": trace_path})
    with torch.no_grad():
        compiled(**inputs)
    [(compile_id, nodes)] = query(
        trace_path,
        "SELECT c.id, p.nodes_after FROM compiles c JOIN passes p ON p.compile_id = c.id "
        "WHERE p.ordinal = 0",
    )
    assert nodes > 100  # the whole model: embeddings, two blocks, the head
    # The rewrite the fault follows: the first copy that algebraic simplification drops.
    [(fault,)] = query(
        trace_path,
        "SELECT min(ordinal) FROM decisions WHERE compile_id = ? AND kind = 'unmutated-copy'",
        compile_id,
    )

    result = loupe(
        "reduce", trace_path, "--compile", str(compile_id), "--inject-fault", str(fault),
        "--out", "reduced", "--trace", trace_path, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    reduced = lines[0].split()
    assert reduced[:2] == ["reduced", str(nodes)] and reduced[3] == "to", lines[0]
    assert int(reduced[4]) <= 3, result.stdout
    assert "(the budget ended the search)" not in lines[0]
    assert lines[1].startswith("shrank dims "), result.stdout
    assert "the injected fault follows a algebraic-simplification unmutated-copy decision" in lines
    assert "aten.clone" in (tmp_path / "reduced" / "reduced.lir").read_text()

    # The printed command reproduces the divergence on the files written.
    [command] = [line.removeprefix("reproduce: ") for line in lines if line.startswith("reproduce")]
    words = shlex.split(command)
    assert words[:2] == ["loupe", "run"]
    run = loupe(*words[1:], cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "divergence: the compiled results differ from the reference" in run.stdout

    [(original, kept, row_command)] = query(
        trace_path, "SELECT original_nodes, reduced_nodes, command FROM reductions"
    )
    assert (original, kept, row_command) == (nodes, int(reduced[4]), command)
