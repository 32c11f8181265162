import json
import sqlite3
import subprocess

import pytest
import torch


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Each test compiles from scratch, so its trace holds exactly its own compiles."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def trace_path(tmp_path):
    return str(tmp_path / "trace.db")


def show_json(path: str) -> dict:
    out = subprocess.run(["loupe", "show", path, "--json"], check=True, capture_output=True)
    return json.loads(out.stdout)


def query(path: str, sql: str, *params) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute(sql, params).fetchall()
