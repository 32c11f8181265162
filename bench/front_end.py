"""Dynamo and aot_autograd alone, for bench/cpu.py and bench/gpu.py.

`dynamo_and_aot_only()` is a torch.compile backend: Loupe's aot_autograd set-up (partitioner,
decompositions) with compilers that return each graph as it is. Its first call is what any
backend built on Dynamo and aot_autograd pays before compiling anything, Loupe and Inductor
alike: the part of a first call no such backend avoids.
"""

from __future__ import annotations

from functorch.compile import make_boxed_func

from loupe.backend import aot_front_end


def dynamo_and_aot_only():
    def as_is(gm, _inputs):
        return make_boxed_func(gm.forward)

    return aot_front_end(lambda _graph_kind: as_is)
