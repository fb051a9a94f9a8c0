"""NumPy's signed zeros and NaNs: maximum/minimum and their reductions, NaN through float
remainders."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import emulator_suite
import jitkernel as jk
from helpers import HOST_BACKENDS, same_bits


BACKENDS = HOST_BACKENDS + emulator_suite.emulator_backends()  # cuda-emulator where g++ is


FLOATS = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)]


FLOAT_TYPES = [np.float16, np.float32, np.float64]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_keep_numpys_zero_and_nan(backend, dtype, name):
    f = getattr(np, name)
    for a, b in [(0.0, -0.0), (-0.0, 0.0), (np.nan, 0.0), (0.0, np.nan), (-0.0, -0.0), (1.0, -0.0)]:
        for n in (1, 3, 17):
            x, y = np.full(n, a, dtype), np.full(n, b, dtype)
            for args in ((x, y), (x, dtype.type(b)), (x, b)):
                got, expected = jk.jit(f, backend=backend)(*args), f(*args)
                assert np.array_equal(np.isnan(got), np.isnan(expected))
                assert np.array_equal(np.signbit(got), np.signbit(expected)), (a, b, n, got, expected)
    assert np.signbit(jk.jit(f, backend=backend)(np.array([0.0], dtype), -0.0)) == np.signbit(f(np.array([0.0], dtype), -0.0))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_reductions_of_signed_zeros(backend, dtype, name):
    """Of equal zeros NumPy keeps the later one (float32/64) or the first (float16). Lengths
    1 + k * (64 / itemsize) are left out: there NumPy's own answer comes from its SIMD lane
    reduction and depends on the CPU's vector width."""
    rng = np.random.default_rng(1)
    f = getattr(np, name)
    lanes = 64 // dtype.itemsize
    for n in (1, 2, 3, 5, 8, 10, 16, 100):
        if dtype.itemsize != 2 and n > 1 and (n - 1) % lanes == 0:
            continue
        for _ in range(10):
            x = np.where(rng.random(n) < 0.5, -0.0, 0.0).astype(dtype)
            if rng.random() < 0.3:
                x[rng.integers(n)] = -1.0 if name == "max" else 1.0
            assert np.signbit(jk.jit(f, backend=backend)(x)) == np.signbit(f(x)), x
        cols = np.where(rng.random((n, 4)) < 0.5, -0.0, 0.0).astype(dtype)
        assert same_bits(jk.jit(lambda a: f(a, axis=0), backend=backend)(cols), f(cols, axis=0))
    nan = np.array([1.0, np.nan, -0.0], dtype)
    assert np.isnan(jk.jit(f, backend=backend)(nan))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(op=st.sampled_from(["%", "//", "fmod", "divmod0", "divmod1"]),
       dtype=st.sampled_from(FLOAT_TYPES),
       divisor=st.sampled_from([1e300, 2.0, -3.5, 0.0, -0.0, np.inf, np.nan]),
       special=st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0]))
def test_nan_through_float_remainders_survives_llvm(op, dtype, divisor, special):
    # LLVM folded isnan(fmod(select(c, NaN, y), x)) to false when fmod was a libm call; the
    # backend emits `frem` now. Values chosen by a comparison, then reduced modulo a constant.
    expr = {"%": "v % D", "//": "v // D", "fmod": "np.fmod(v, D)",
            "divmod0": "divmod(v, D)[0]", "divmod1": "divmod(v, D)[1]"}[op]
    ns: dict = {"np": np, "D": dtype(divisor), "S": dtype(special), "T": dtype(0.75)}  # constants
    exec(f"def f(a):\n    v = np.where(a >= 0, S, T)\n    r = {expr}\n"
         f"    return np.isnan(r), np.signbit(r), r\n", ns)
    f = ns["f"]
    a = np.array([-4.5, 0.25, 7.0, -0.0], dtype)
    with np.errstate(all="ignore"):
        want = f(a)
        got = jk.jit(f)(a)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[2], want[2])
