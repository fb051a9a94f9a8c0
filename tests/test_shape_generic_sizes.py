"""Shape-generic compiles after small sizes: sizes 0 and 1 first, several dynamic axes, bounded
compiles per size sequence, float16 reductions and NaN/signed-zero constants in shape-generic
programs."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import assert_identical, assert_matches_numpy as assert_same, same_bits


def _elementwise_and_sum(x):
    return np.tanh(x) * 2 + x.sum()


def test_sizes_one_to_five_compile_twice(compiles):
    f = jk.jit(_elementwise_and_sum, disk_cache=False)
    for n in (1, 2, 3, 4, 5):
        x = np.linspace(0, 1, n)
        assert_same(f(x), _elementwise_and_sum(x))
    assert len(compiles) == 2
    assert "x: dimension 0 is now dynamic" in " ".join(f.recompilations()[0].reasons)


@pytest.mark.parametrize("shapes,most", [
    ([(0,), (2,), (3,), (7,)], 2),
    ([(1, 1), (2, 2), (3, 3), (4, 4), (5, 5)], 2),
    ([(1, 5), (2, 5), (3, 5), (9, 5)], 2),
    ([(2, 3), (3, 2), (4, 5), (5, 4), (6, 7)], 3),  # 2*3 == 3*2: the element count stays fixed once
    ([(2, 3), (3, 3), (3, 4), (4, 5), (7, 9)], 3),  # axes that change one at a time end up dynamic together
    ([(1, 3), (1, 4), (2, 4), (5, 6), (1, 9)], 4),  # (1, k) and (m >= 2, k) are two classes
])
def test_dynamic_after_small_sizes_on_several_axes(compiles, shapes, most):
    def fn(x):
        return (np.sin(x) * 3).sum(axis=0) + x.sum()
    f = jk.jit(fn, disk_cache=False)
    for shape in shapes:
        x = np.arange(math.prod(shape), dtype=np.float64).reshape(shape) / 7
        assert_same(f(x), fn(x))
    assert len(compiles) <= most, [str(r) for r in f.recompilations()]


def _pair(x, y):
    return x * y + y.max()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 9), min_size=1, max_size=7), st.booleans())
def test_compiles_per_size_sequence_are_bounded(compiles, sizes, two_args):
    """Sizes 0 and 1 are compiled for themselves; all sizes >= 2 share at most two compiles."""
    compiles.clear()
    if two_args:
        f, fn = jk.jit(_pair, disk_cache=False), _pair
        make = lambda n: (np.arange(n, dtype=np.float32), np.linspace(1, 2, n).astype(np.float32))  # noqa: E731
    else:
        f, fn = jk.jit(_elementwise_and_sum, disk_cache=False), _elementwise_and_sum
        make = lambda n: (np.arange(n, dtype=np.float64) / 3,)  # noqa: E731
    for n in sizes:
        args = make(n)
        if two_args and n == 0:
            continue  # max of an empty array raises, in NumPy as here
        assert_same(f(*args), fn(*args))
    used = {n for n in sizes if not (two_args and n == 0)}
    assert len(compiles) <= len(used & {0, 1}) + min(2, len(used - {0, 1})), sizes


F16_REDUCTIONS = {
    "sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean, "var": np.var,
    "std": np.std, "argmax": np.argmax, "argmin": np.argmin, "any": np.any, "all": np.all,
}


@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("name", sorted(F16_REDUCTIONS))
def test_float16_reductions_on_shape_generic_programs(name, axis):
    """Sizes 5, 7, 9: the third call runs on shape-generic kernels (run-time parameters), which
    once needed compiler-rt's __truncdfhf2 for their float literals."""
    f = F16_REDUCTIONS[name]
    g = jk.jit(lambda a: f(a, axis=axis))
    for n in (5, 7, 9):
        x = ((np.arange(2 * n).reshape(2, n) % 7) - 3).astype(np.float16) / np.float16(4)
        got, expected = g(x), f(x, axis=axis)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(expected, np.float64), rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("src", ["int64", "uint64", "float64", "float32", "int8", "bool"])
@pytest.mark.parametrize("dst", ["float16", "float32", "int16", "uint64", "bool"])
def test_shape_generic_literals_of_every_dtype(src, dst):
    """A literal that depends on a dynamic size becomes a run-time parameter and is converted
    in the kernel: every dtype pair must compile (no runtime-library symbol) and match NumPy."""
    f = jk.jit(lambda a: (a.astype(src) + np.asarray(a.shape[0], src)).astype(dst))
    for n in (3, 4, 5):
        x = np.arange(n, dtype=np.int16)
        expected = (x.astype(src) + np.asarray(n, src)).astype(dst)
        assert same_bits(f(x), expected)


@pytest.mark.parametrize("value", [np.nan, -np.nan, -0.0, np.inf])
def test_uniform_nan_and_signed_zero_constants_stay_shape_generic(value, compiles):
    # A folded constant whose elements share one bit pattern becomes a broadcast scalar, NaN
    # included, so the program's kernels do not change with the size (README: sizes 1..5
    # compile at most twice).
    f = jk.jit(lambda a: (a + np.full(a.shape, value), np.argmin(value < a, axis=0)))
    for n in range(1, 6):
        a = np.arange(n, dtype=np.float64)
        got, want = f(a), (a + np.full(a.shape, value), np.argmin(value < a, axis=0))
        assert_identical(got[0], want[0])
        assert got[1] == want[1]
    assert len(compiles) <= 2
