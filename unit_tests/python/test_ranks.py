"""Ranks of a torch.distributed job: samples/ranks/rank_shape.py runs under torchrun (two
processes, gloo on the CPU), each rank's trace records its place in the job, and `loupe diff`
over the ranks' traces names the planted line, or finds nothing when no rank pads."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import query
from loupe import traces

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "ranks" / "rank_shape.py"


def planted_line() -> int:
    lines = SAMPLE.read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if "# PLANTED" in line)


def run_ranks(folder: Path, *flags: str) -> None:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += ["--nproc-per-node", "2", str(SAMPLE), str(folder), *flags]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run(command, check=True, capture_output=True, timeout=300, env=env)


def diff_ranks(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["loupe", "diff", *args, "--json"], capture_output=True, text=True)


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("planted")
    run_ranks(folder)
    return folder


def test_each_trace_records_its_rank_world_size_and_backend(planted):
    for rank in (0, 1):
        rows = query(
            str(planted / f"rank{rank}.db"),
            "SELECT rank, world_size, process_group_backend FROM runs",
        )
        assert rows == [(rank, 2, "gloo")]


def test_diff_over_the_ranks_names_the_planted_line(planted):
    diff = diff_ranks(str(planted / "rank0.db"), str(planted / "rank1.db"))
    assert diff.returncode == 1, diff.stderr
    report = json.loads(diff.stdout)
    assert [r["rank"] for r in report["ranks"]] == [0, 1]
    assert report["ranks"][1]["backend"] == "gloo"
    top = report["findings"][0]
    assert top["kind"] == "rank_graph_diff"
    assert top["severity"] == "error"
    assert top["ranks"] == [1]
    assert Path(top["source"]["file"]).name == SAMPLE.name
    assert top["source"]["line"] == planted_line()
    assert top["nodes"][0]["a"] == "" and top["nodes"][0]["b"]  # a node only rank 1 has
    # A folder of traces is the same comparison.
    assert json.loads(diff_ranks("--ranks", str(planted)).stdout) == report


def test_ranks_that_compile_the_same_graph_are_clean(tmp_path):
    run_ranks(tmp_path, "--same")
    diff = diff_ranks(str(tmp_path))
    assert diff.returncode == 0, diff.stdout + diff.stderr
    report = json.loads(diff.stdout)
    assert report["same"] and report["findings"] == []


def test_torchrun_environment_gives_the_rank_before_the_group_exists(monkeypatch, tmp_path):
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert traces.distributed_place() == (3, 4, None)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(traces, "_default_trace_path", None)
    assert "-rank3-" in Path(traces.default_trace_path()).name
    monkeypatch.delenv("RANK")
    assert traces.distributed_place() == (None, None, None)
