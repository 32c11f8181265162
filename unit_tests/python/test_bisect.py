"""`loupe bisect SCRIPT.py`: a model script run in bisect mode names the decision a fault was
injected after, prints it with its source line, records it in the trace and lets the script
finish; input signatures carry the user's names of the inputs."""

import json
import os
import random
import subprocess
import sys
import textwrap

import pytest
import torch

from conftest import query

SCRIPT = textwrap.dedent(
    """
    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(8, 16)
            self.norm = torch.nn.LayerNorm(16)
            self.fc2 = torch.nn.Linear(16, 4)

        def forward(self, x):
            h = torch.relu(self.fc1(x)) * 2.0 + 1.0
            return self.fc2(self.norm(h)).softmax(-1)

    torch.manual_seed(0)
    model = torch.compile(Model(), backend="loupe")
    with torch.no_grad():
        out = model(torch.randn(4, 8))
    print("script finished", tuple(out.shape))
    """
)


def bisect(tmp_path, *options):
    script = tmp_path / "model.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    command = [sys.executable, "-m", "loupe._cli", "bisect", *options, str(script)]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)


def counted_decisions(trace: str) -> int:
    return query(trace, "SELECT count(*) FROM decisions WHERE ordinal > 0 AND compile_id = 1")[0][0]


def test_without_a_fault_no_graph_diverges(tmp_path):
    trace = str(tmp_path / "clean.db")
    result = bisect(tmp_path, "--trace", trace)
    assert result.returncode == 0, result.stderr
    assert "script finished (4, 4)" in result.stdout
    assert query(trace, "SELECT status FROM bisections") == [("no_divergence",)]


def test_an_injected_fault_at_a_random_decision_is_named_and_recorded(tmp_path):
    clean = str(tmp_path / "clean.db")
    assert bisect(tmp_path, "--trace", clean).returncode == 0
    total = counted_decisions(clean)
    assert total >= 5
    seed = random.randrange(1 << 30)
    decision = random.Random(seed).randint(1, total)
    expected = query(
        clean, "SELECT description FROM decisions WHERE compile_id = 1 AND ordinal = ?", decision
    )[0][0]

    trace = str(tmp_path / "faulty.db")
    result = bisect(tmp_path, "--inject-fault", str(decision), "--trace", trace)
    context = f"seed {seed}, decision {decision}\n{result.stdout}\n{result.stderr}"
    assert result.returncode == 1, context
    assert "script finished (4, 4)" in result.stdout, context  # the program carried on
    assert f"culprit: decision {decision} of " in result.stdout, context
    assert expected in result.stdout, context
    assert "model.py:" in result.stdout, context  # the culprit's source line

    rows = query(
        trace,
        "SELECT status, injected_fault, decision_ordinal, decision_description FROM bisections",
    )
    assert rows == [("culprit_decision", decision, decision, expected)], context
    steps = query(trace, "SELECT phase, diverged FROM bisection_steps ORDER BY ordinal")
    assert steps[0] == ("full", 1) and len(steps) >= 3
    assert query(trace, "SELECT count(*) FROM decisions WHERE kind = 'fault'") == [(1,)]


def test_a_malformed_fault_is_a_usage_error(tmp_path):
    result = bisect(tmp_path, "--inject-fault", "sideways:3")
    assert result.returncode == 2
    assert "inject_fault expects N or KIND:N" in result.stderr


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 3)
        self.register_buffer("scale", torch.ones(3))

    def forward(self, x, y):
        return torch.relu(self.fc1(x)) * self.scale + y


@pytest.mark.parametrize("grad", [True, False])
def test_input_signature_names_dynamo_inputs(trace_path, grad):
    model = torch.compile(Net(), backend="loupe", options={"trace": trace_path})
    with torch.set_grad_enabled(grad):
        model(torch.randn(2, 4), torch.randn(2, 3))
    rows = query(trace_path, "SELECT graph_kind, input_signature FROM compiles ORDER BY id")
    first_kind, first = rows[0][0], json.loads(rows[0][1])
    assert first_kind == ("forward" if grad else "inference")
    names = [entry.get("name") for entry in first]
    assert names == ["self.fc1.weight", "self.fc1.bias", "x", "self.scale", "y"]
    kinds = [entry.get("kind") for entry in first]
    assert kinds == ["parameter", "parameter", "input", "buffer", "input"]
    assert [entry["shape"] for entry in first][2] == ["2", "4"]
    for kind, signature in rows[1:]:
        assert kind == "backward"
        assert all("name" not in entry for entry in json.loads(signature))
