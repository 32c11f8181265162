"""The backend's configuration: the options of ``torch.compile(..., options={...})``, each
falling back to its LOUPE_* environment variable, then to its default (docs/python-adapter.md,
"Options"). Also the syntax of the fault-injection testing aid."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from .fx_to_lir import DROPOUT_RNG

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass
class Config:
    trace: str | None = None  # None: one file per process under ./loupe_traces/
    check: bool = False
    strict: bool = False
    pipeline: str = "default"
    disable_passes: list[str] = field(default_factory=list)
    # Bisect mode (`loupe bisect SCRIPT.py`): on its first call each graph is also run eagerly
    # and, when the results differ, bisected (docs/bisect.md).
    bisect: bool = False
    # Testing aid: "N" miscompiles the first graph after decision N, "KIND:N" the first graph of
    # that kind (forward, backward, inference).
    inject_fault: str | None = None
    # Where training dropout's masks come from: "loupe" (Loupe's own generator: everything
    # compiled, values differ from eager) or "torch" (torch draws them, one fallback node per
    # dropout, results match eager). docs/python-adapter.md.
    dropout_rng: str = "loupe"
    # Seconds of wall time between writes of the kernel stats into the trace while the program
    # runs (checked at the end of a call); they are written at exit too.
    stats_interval: float = 5.0
    # CUDA graphs: a CUDA graph's launches are captured once per input shape and replayed
    # (docs/cuda.md). "auto": where launch planning chose it (a graph whose launches would keep
    # the GPU waiting for the host), unless profile or check mode is on; True: every graph (and
    # mode="reduce-overhead"); False: none.
    cuda_graphs: bool | str = "auto"
    # Profiling: calls 2 to 6 of each compiled graph time every kernel (CUDA events on a GPU),
    # and the trace's kernel_stats get the times, bytes, FLOPs and share of the device's peak
    # (docs/profile.md). Off: no call does any of it.
    profile: bool = False

    @staticmethod
    def resolve(options: dict[str, Any] | None, mode: str | None = None) -> Config:
        """`options` from torch.compile first, then LOUPE_* environment variables; torch.compile's
        `mode` "reduce-overhead" turns CUDA graphs on (other modes change nothing)."""
        options = dict(options or {})
        known = {
            "trace",
            "check",
            "strict",
            "pipeline",
            "disable_passes",
            "bisect",
            "inject_fault",
            "dropout_rng",
            "stats_interval",
            "cuda_graphs",
            "profile",
        }
        unknown = set(options) - known
        if unknown:
            raise ValueError(f"unknown loupe option(s) {sorted(unknown)}")
        env = os.environ
        config = Config(
            trace=options.get("trace", env.get("LOUPE_TRACE")),
            check=options.get("check", env.get("LOUPE_CHECK", "").lower() in _TRUE),
            strict=options.get("strict", env.get("LOUPE_STRICT", "").lower() in _TRUE),
            pipeline=options.get("pipeline", env.get("LOUPE_PIPELINE", "default")),
            disable_passes=list(options.get("disable_passes", [])),
            bisect=options.get("bisect", env.get("LOUPE_BISECT", "").lower() in _TRUE),
            inject_fault=options.get("inject_fault", env.get("LOUPE_INJECT_FAULT")),
            dropout_rng=options.get("dropout_rng", env.get("LOUPE_DROPOUT_RNG", "loupe")),
            stats_interval=float(
                options.get("stats_interval", env.get("LOUPE_STATS_INTERVAL", 5.0))
            ),
            cuda_graphs=options.get(
                "cuda_graphs",
                True if mode == "reduce-overhead" else _cuda_graphs(env.get("LOUPE_CUDA_GRAPHS")),
            ),
            profile=options.get("profile", env.get("LOUPE_PROFILE", "").lower() in _TRUE),
        )
        if config.dropout_rng not in DROPOUT_RNG:
            raise ValueError(
                f"loupe option dropout_rng must be one of {DROPOUT_RNG}, not {config.dropout_rng!r}"
            )
        if config.cuda_graphs not in (True, False, "auto"):
            raise ValueError(
                "loupe option cuda_graphs must be True, False or 'auto', not "
                f"{config.cuda_graphs!r}"
            )
        if config.inject_fault is not None:
            parse_fault(str(config.inject_fault))  # a malformed value is an error now
        return config


def _cuda_graphs(value: str | None) -> bool | str:
    """LOUPE_CUDA_GRAPHS: 1/true/yes/on, 0/false/no/off, or auto (the default when unset)."""
    word = (value or "").strip().lower()
    if word in ("", "auto"):
        return "auto"
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(f"LOUPE_CUDA_GRAPHS must be 1, 0 or auto, not {value!r}")


_FAULT = re.compile(r"(?:(forward|backward|inference):)?([1-9][0-9]*)")


def parse_fault(text: str) -> tuple[str | None, int]:
    """ "N" or "KIND:N" -> (kind or None, N)."""
    match = _FAULT.fullmatch(text.strip())
    if not match:
        raise ValueError(
            f"inject_fault expects N or KIND:N (KIND forward, backward or inference), got {text!r}"
        )
    return match.group(1), int(match.group(2))
