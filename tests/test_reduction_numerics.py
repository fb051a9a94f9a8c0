"""Reductions follow NumPy: overflow, extreme values with NumPy's kind and sign, pairwise float
sums bit for bit, fused and generic reductions in NumPy's order. Every expectation is computed
by the installed NumPy."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import emulator_suite
import jitkernel as jk
from helpers import HOST_BACKENDS, jit_or_error, numpy_or_error, same_bits, value_kind


SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))


BACKENDS = HOST_BACKENDS + emulator_suite.emulator_backends()  # cuda-emulator where g++ is


FLOATS = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f, x, expected", [
    (np.sum, [1e308, 1e308, -1e308], np.inf),
    (np.prod, [1e300, 1e300, 1e-300], np.inf),
    (np.prod, [1e200, 1e200, 0.0], np.nan),
    (np.mean, [1e308, 1e308, -1e308], np.inf),
])
def test_overflowing_reductions_are_not_finite(backend, f, x, expected):
    if backend == "cuda-emulator":
        pytest.skip("the GPU reduces in a tree, not NumPy's order: where NumPy's order overflows and the tree "
                    "does not, the result's kind differs (docs/gpu.md, 'Reduction order on the GPU')")
    x = np.array(x)
    got = jk.jit(f, backend=backend)(x)
    with np.errstate(all="ignore"):
        assert value_kind(got) == value_kind(f(x)) == value_kind(expected)


def _extreme_array(draw, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    info = np.finfo(dtype)
    big = float(info.max)
    # Two of 0.6 * max overflow, one cancels another: the order decides between inf and finite.
    pool = [0.6 * big, -0.6 * big, 0.6 * big, -0.6 * big, big, -big, big / 3, 1.0, -1.0, 0.0, -0.0,
            float(info.tiny), np.inf, -np.inf, np.nan, 3.5, -2.25, float(info.eps)]
    weights = draw(st.lists(st.integers(0, 4), min_size=len(pool), max_size=len(pool)))
    choices = [v for v, w in zip(pool, weights) for _ in range(w)] or [1.0]
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    with np.errstate(all="ignore"):
        return np.asarray(rng.choice(np.array(choices), size=shape), dtype=dtype)


@st.composite
def reduction_cases(draw):
    dtype = draw(st.sampled_from(FLOATS))
    n = draw(st.one_of(st.integers(0, 20), st.integers(0, 300)))
    layout = draw(st.sampled_from(["1d", "rows", "cols", "3d-inner", "3d-outer-inner", "3d-all"]))
    shape, axis = {
        "1d": ((n,), None), "rows": ((3, n), 1), "cols": ((n, 3), 0), "3d-inner": ((2, 3, n), (1, 2)),
        "3d-outer-inner": ((2, 3, n), (0, 2)), "3d-all": ((2, n, 3), None),
    }[layout]
    return _extreme_array(draw, np.dtype(dtype), shape), axis, draw(st.sampled_from(["sum", "prod", "mean", "var", "std"]))


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(case=reduction_cases())
def test_reductions_of_extreme_values_give_numpy_kind_and_sign(backend, case):
    """Huge values, infinities and NaNs of lengths 0..300 along the reduced axes: the
    inf/nan/finite pattern and the sign of every result are NumPy's (float sums and products
    of these layouts are in fact bit-identical: NumPy's order is followed exactly)."""
    x, axis, name = case
    f = getattr(np, name)
    expected = numpy_or_error(lambda a: f(a, axis=axis), x)
    got = jit_or_error(lambda a: f(a, axis=axis), x, backend=backend)
    if isinstance(expected, type):
        assert got is expected
        return
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    if backend == "cuda-emulator":
        # The GPU reduces in a tree, not NumPy's order (docs/gpu.md, 'Reduction order on the
        # GPU'): the kind and the bits of an overflowing or rounding sum may differ there, as in
        # test_overflowing_reductions_are_not_finite; the examples drawn depend on the node id.
        return
    np.testing.assert_array_equal(value_kind(got), value_kind(expected))
    # The sign of every non-NaN result (a NaN's sign bit is the hardware's, not NumPy's).
    number = ~np.isnan(np.asarray(expected, np.float64))
    np.testing.assert_array_equal(np.signbit(got)[number], np.signbit(expected)[number])
    if name in ("sum", "prod"):
        g, e = np.asarray(got), np.asarray(expected)
        assert same_bits(np.where(number, g, 0), np.where(number, e, 0)), (got, expected)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [3, 7, 8, 9, 127, 128, 129, 300, 1000, 4096, 4097, 10007, 1 << 20])
def test_float_sums_are_numpys_pairwise_sum_bit_for_bit(dtype, n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-4, 5, n)).astype(dtype)
    assert same_bits(jk.jit(np.sum)(x), np.sum(x))
    rows = x[: (n // 3) * 3].reshape(3, -1)
    assert same_bits(jk.jit(lambda a: a.sum(axis=1))(rows), rows.sum(axis=1))
    assert same_bits(jk.jit(lambda a: a.sum(axis=0))(rows), rows.sum(axis=0))


def test_fused_and_generic_reductions_follow_numpy_order():
    """Fused bodies, merged reductions, row kernels and shape-generic kernels (the block size a
    run-time parameter) keep NumPy's order."""
    rng = np.random.default_rng(0)
    f = jk.jit(lambda a: ((a * 2).sum(axis=-1), a.max(axis=-1), (a * a).sum()))
    for n in (5, 7, 9, 130, 1000, 5000):
        x = rng.standard_normal((3, n)).astype(np.float32)
        for got, expected in zip(f(x), ((x * 2).sum(axis=-1), x.max(axis=-1), (x * x).sum())):
            assert same_bits(got, expected)
    g = jk.jit(lambda a: a.sum(axis=(0, 2)))
    for n in (5, 7, 9, 300):
        x = rng.standard_normal((3, 4, n)).astype(np.float64)
        assert same_bits(g(x), x.sum(axis=(0, 2)))


@SETTINGS
@given(rows=st.integers(0, 23), cols=st.integers(1, 70), dtype=st.sampled_from(FLOATS),
       form=st.sampled_from(["plain", "scaled", "masked_rows", "int_rows"]), seed=st.integers(0, 2**16))
def test_column_sums_added_rows_at_a_time_are_numpys_bit_for_bit(rows, cols, dtype, form, seed):
    """A sum over the outer axis of a matrix walks it in memory order and accumulates into the
    output; the CPU renderer adds several rows per pass (backends/cpu/render.py JAM), in order,
    so every row count (multiples of the pass and remainders) gives NumPy's bits. NaN, inf and
    -0.0 included."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * 10.0 ** rng.integers(-4, 5, (rows, cols))).astype(dtype)
    if x.size:
        x.flat[rng.integers(0, x.size, 3)] = rng.choice([np.nan, np.inf, -0.0, 0.0], 3)
    f = {"plain": lambda a: a.sum(axis=0),
         "scaled": lambda a: (a * 3 - 1).sum(axis=0),
         "masked_rows": lambda a: np.where(a > 0, a, 0).sum(axis=0, dtype=a.dtype),
         "int_rows": lambda a: (a * 2).sum(axis=0, keepdims=True)}[form]
    for backend in HOST_BACKENDS:
        assert same_bits(jk.jit(f, backend=backend)(x), f(x))
