"""Sums over slices whose length is a loop index (`x[:i + k].sum()` inside a native loop) are
NumPy's sums of exactly those elements, bit for bit, on the CPU backend and in the reference
interpreter: the padded value's zeros must not change NumPy's pairwise grouping (the interpreter
summed the padded length, which differed in the last bits for lengths past 128)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from helpers import HOST_BACKENDS


def prefix_sums(x, n, k):
    out = np.zeros(n, x.dtype)
    for i in range(n):
        out[i] = x[:i + k].sum()
    return out


def row_prefix_sums(x, n, k):
    out = np.zeros((n, x.shape[0]), x.dtype)
    for i in range(n):
        out[i] = x[:, :i + k].sum(axis=1)
    return out


def prefix_means(x, n, k):
    out = np.zeros(n, x.dtype)
    for i in range(n):
        out[i] = x[i:i + k].mean() + x[:i + 1].sum()
    return out


def _values(draw_seed: int, shape: tuple, dtype: str) -> np.ndarray:
    rng = np.random.default_rng(draw_seed)
    # magnitudes over many decades: any change of summation order shows in the last bits
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 6, shape)
    return x.astype(dtype)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(fn=st.sampled_from([prefix_sums, row_prefix_sums, prefix_means]),
       length=st.sampled_from([9, 127, 128, 129, 200, 257, 300]), k=st.integers(0, 140),
       dtype=st.sampled_from(["float16", "float32", "float64"]), seed=st.integers(0, 2**16),
       backend=st.sampled_from(HOST_BACKENDS))
def test_loop_dependent_slice_sums_are_numpys_bit_for_bit(fn, length, k, dtype, seed, backend):
    shape = (3, length) if fn is row_prefix_sums else (length,)
    x = _values(seed, shape, dtype)
    n = max(1, min(20, length - k))
    with np.errstate(all="ignore"):
        want = fn(x, n, k)
        got = jk.jit(fn, backend=backend, static_argnames=("k",))(x, n, k)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
