"""A shape-generic compile compares its kernel program with a size probe (`backends.size_probe`:
the same function traced at another size, optimised and fused without code generation). The
probe must be scheduled exactly as the backend schedules: where they differed (a gather fused
into a CPU-style kernel in the probe, a library step in the CUDA compile), every new size
compiled again instead of reusing the module. Generated programs, every shape-generic backend:
the probe's structure is the backend's own."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel import lax
from jitkernel.backends import backend_class, size_probe
from jitkernel.fusion.params import constants
from jitkernel.passes import optimize

IDX = np.array([0, 1, -1, -2])

BLOCKS = {
    "gather": lambda x: x[IDX] * 3,
    "mean": lambda x: x - x.mean(),
    "slices": lambda x: np.sin(x[1:]) * 2 + x[:-1],
    "loop_of_dot": lambda x: lax.fori_loop(0, 2, lambda k, c: c * 0.5 + np.dot(c, c), x),
    "loop_of_gather": lambda x: lax.fori_loop(0, 2, lambda k, c: c + c[IDX].sum(), x),
    "cumsum": lambda x: np.cumsum(x) / x.size,
}


def _program(names: list[str]):
    def fn(x):
        return tuple(BLOCKS[n](x) for n in names)
    return fn


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(names=st.lists(st.sampled_from(sorted(BLOCKS)), min_size=1, max_size=3),
       backend=st.sampled_from(["cpu", "cuda-emulator"]), n=st.integers(4, 9))
def test_a_size_probe_is_scheduled_as_its_backend_schedules(names, backend, n):
    program = jk.make_ir(_program(names))(np.linspace(-1.0, 1.0, n))
    own = backend_class(backend)().schedule(optimize(program, size_generic=True), "fn")
    probe = size_probe(program, backend)
    assert constants(probe.kp)[0] == constants(own)[0]
