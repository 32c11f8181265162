"""First calls in a fresh process, for bench/cpu.py and bench/gpu.py.

A first call measured inside the benchmark's own process is not cold for every row: Inductor
keeps what it compiled in memory (its loaded kernel modules, its compile workers) even with
`TORCHINDUCTOR_FORCE_DISABLE_CACHES=1`, so a model compiled after another with the same kernel
shapes reuses them. On a 2-core machine, BERT's inference (width 256, 4 x 128 tokens) took
Inductor 13.0 s in a fresh process and 3.3 s right after GPT-2 of the same sizes. A user's
script usually compiles its model once in a new process: that first call is the cold one.

`fresh_first_call(script, spec)` runs `script` again in a child process (a fresh interpreter, empty
on-disk caches: every cache variable points at a new temporary folder) with `CHILD_FLAG` and the
JSON `spec`; the script's child mode builds the row's model, compiles it with the named backend,
times its first call and hands the seconds back with `report_seconds`. Importing torch and
building the model happen before the timing, as in the parent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD_FLAG = "--first-call-in-this-process"
_ANSWER = "first-call-seconds "

# Every on-disk cache a first call could find warm: Inductor's, Triton's, Loupe's kernels, and
# the CUDA cache where NVRTC keeps what it compiled when a driver is present.
_CACHE_VARIABLES = (
    "TORCHINDUCTOR_CACHE_DIR",
    "TRITON_CACHE_DIR",
    "LOUPE_CACHE_DIR",
    "CUDA_CACHE_PATH",
)


def fresh_first_call(script: Path, spec: dict, timeout_s: float = 600) -> float:
    """The seconds of the first call `script`'s child mode measures for `spec`. Raises
    RuntimeError with the child's last lines when it fails or says nothing."""
    with tempfile.TemporaryDirectory(prefix="loupe-cold-start-") as folder:
        env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")
        for variable in _CACHE_VARIABLES:
            env[variable] = str(Path(folder) / variable.lower())
        command = [sys.executable, str(script), CHILD_FLAG, json.dumps(spec)]
        try:
            done = subprocess.run(
                command, env=env, capture_output=True, text=True, timeout=timeout_s
            )
        except subprocess.TimeoutExpired as error:
            raise RuntimeError(
                f"first call of {spec} in a fresh process: over {timeout_s:.0f} s"
            ) from error
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(_ANSWER):
            return float(line[len(_ANSWER) :])
    tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
    raise RuntimeError(
        f"first call of {spec} in a fresh process: exit status {done.returncode}, no time:\n{tail}"
    )


def child_spec(argv: list[str]) -> dict | None:
    """The spec when this process is a child run by `fresh_first_call`, else None."""
    if len(argv) == 3 and argv[1] == CHILD_FLAG:
        return json.loads(argv[2])
    return None


def report_seconds(seconds: float) -> None:
    print(f"{_ANSWER}{seconds:.6f}", flush=True)
