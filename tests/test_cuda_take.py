"""np.take and np.take_along_axis on backend="cuda-emulator" (backends/cuda/take.py): NumPy's
values and dtype for every mode, axis and dtype, and NumPy's IndexError (message included) for an
index out of range. The programs are fixed (one g++ run builds them); hypothesis draws indices,
in range and out of it, negative ones included."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitkernel as jk
from cuda_corpus import assert_compiles_with_nvcc, module_for, needs_nvcc

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")


def _take(axis, mode="raise"):
    return lambda a, i: np.take(a, i, axis=axis, mode=mode)


def _along(axis):
    return lambda a, i: np.take_along_axis(a, i, axis=axis)


# (name, function, array shape, array dtype, index shape, index dtype)
CASES = [
    ("take-1d", _take(None), (7,), np.float64, (5,), np.int64),
    ("take-flat-2d", _take(None), (3, 4), np.float32, (2, 3), np.int32),
    ("take-axis0", _take(0), (5, 3), np.int16, (4,), np.int64),
    ("take-axis1-2d-index", _take(1), (2, 6, 3), np.float16, (2, 2), np.int8),
    ("take-axis-1", _take(-1), (3, 5), np.bool_, (6,), np.int64),
    ("take-wrap", _take(0, "wrap"), (6,), np.float64, (8,), np.int64),
    ("take-clip", _take(1, "clip"), (2, 5), np.uint64, (7,), np.int32),
    ("take-uint-index", _take(0), (4, 2), np.float32, (3,), np.uint16),
    ("along-axis1", _along(1), (3, 5), np.float64, (3, 4), np.int64),
    ("along-axis0-broadcast", _along(0), (4, 3), np.int32, (2, 1), np.int64),
    ("along-none", _along(None), (2, 3), np.float32, (4,), np.int64),
]


def _example(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 10).astype(dtype)


def _indices(shape, dtype, n):
    dt = np.dtype(dtype)
    lo = max(-2 * n, np.iinfo(dt).min)
    hi = min(2 * n, np.iinfo(dt).max)
    return hnp.arrays(dt, shape, elements=st.integers(lo, hi))


@pytest.fixture(scope="module")
def modules() -> list:
    return [module_for(fn, _example(ash, adt), np.zeros(ish, idt))[1] for _, fn, ash, adt, ish, idt in CASES]


@pytest.fixture(scope="module", autouse=True)
def prebuilt(modules) -> None:
    from jitkernel.backends.cuda import emulator
    emulator.prebuild(modules)


def _numpy(fn, a, i):
    try:
        return fn(a, i), None
    except IndexError as e:
        return None, str(e)


@pytest.mark.parametrize("name,fn,a_shape,a_dtype,i_shape,i_dtype", CASES, ids=[c[0] for c in CASES])
def test_matches_numpy(name, fn, a_shape, a_dtype, i_shape, i_dtype) -> None:
    a = _example(a_shape, a_dtype, seed=len(name))
    f = jk.jit(fn, backend="cuda-emulator")
    n = max(a_shape) if "flat" not in name and "none" not in name and "1d" not in name else a.size

    @settings(max_examples=12, deadline=None, database=None)
    @given(i=_indices(i_shape, i_dtype, n))
    def check(i):
        want, error = _numpy(fn, a, i)
        if error is not None:
            with pytest.raises(IndexError) as info:
                f(a, i)
            assert str(info.value) == error
            return
        got = f(a, i)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)

    check()


def test_take_inside_a_loop_body() -> None:
    """A fori_loop whose body gathers with np.take runs as a loop step on the GPU."""
    def f(x, i):
        return jk.lax.fori_loop(0, 3, lambda k, c: np.take(c, i) * 2.0, x)
    x, i = np.arange(6.0), np.array([5, 0, 1, 2, 3, 4])
    want = x
    for _ in range(3):
        want = np.take(want, i) * 2.0
    np.testing.assert_array_equal(jk.jit(f, backend="cuda-emulator")(x, i), want)


@needs_nvcc
def test_every_case_compiles_with_nvcc(modules) -> None:
    assert_compiles_with_nvcc(modules)


@pytest.mark.parametrize("index", [np.array([5]), np.array([0, -1]), np.array([-2])], ids=["past", "in-range", "before"])
def test_an_empty_result_still_checks_every_index(index) -> None:
    """np.take from a (1, 0) array: no output element, yet NumPy checks the indices."""
    a = np.ones((1, 0))
    fn = _take(0)
    try:
        want = fn(a, index)
    except IndexError as e:
        with pytest.raises(IndexError, match=str(e)):
            jk.jit(fn, backend="cuda-emulator")(a, index)
        return
    got = jk.jit(fn, backend="cuda-emulator")(a, index)
    assert got.shape == want.shape
