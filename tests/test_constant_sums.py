"""Sums and differences with constants round as NumPy's, one operation at a time.

XLA's simplifier reassociates + and - with constants: `(x + 1) - 1` became `x` and `x + 1 + 1`
became `x + 2` on the TPU backends (float32 1e-8: 1e-8 where NumPy gives 0.0). The constants are
opaque to it now (backends/tpu/rules_elementwise.py). Drawn: chains of two to four + / - with
constants of every spelling (Python floats and ints, NumPy scalars, 0-d and 1-d constant arrays)
on both sides, over values that lose bits to those constants; compared bit for bit.
"""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import assert_matches_numpy, on_host

CUDA_EMULATOR_SUITE = True  # the backend fixture adds "cuda-emulator" (tests/emulator_suite.py)
TPU_SUITE = True  # and tpu-interpret (tests/tpu_suite.py)

_CONSTANTS = [1, 1.0, 0.1, -0.25, 3e7, 1e-3, "f32", "f16", "arr0", "arr1"]


def _constant(kind, value, dtype):
    return {"f32": np.float32(value), "f16": np.float16(value), "arr0": np.asarray(value, dtype),
            "arr1": np.full(5, value, dtype)}.get(kind, kind)


@st.composite
def chains(draw):
    steps = []
    for _ in range(draw(st.integers(2, 4))):
        kind = draw(st.sampled_from(_CONSTANTS))
        value = draw(st.sampled_from([1.0, 0.1, 3e7, -2.5])) if isinstance(kind, str) else kind
        steps.append((draw(st.sampled_from(["+", "-", "r-"])), kind, value))
    return steps


def _run(steps, dtype):
    def f(x):
        for op, kind, value in steps:
            c = _constant(kind, value, dtype)
            x = x + c if op == "+" else x - c if op == "-" else c - x
        return x
    return f


def test_chains_of_sums_with_constants_round_as_numpy(backend):
    x64 = np.array([1e-8, 1.5, 3e-8, 0.7, 1 / 3])

    @settings(max_examples=20, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(steps=chains(), dtype=st.sampled_from([np.float32, np.float64, np.float16]))
    def run(steps, dtype):
        f = _run(steps, dtype)
        x = x64.astype(dtype)
        with np.errstate(all="ignore"):
            want = f(x)
        assert_matches_numpy(on_host(jk.jit(f, backend=backend)(x)), want, rtol=0, atol=0)
    run()
