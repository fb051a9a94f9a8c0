"""np.searchsorted on backend="cuda-emulator" (backends/cuda/search.py): NumPy's indices for
both sides, mixed dtypes (compared in the common dtype), NaN sorting last, ties, and a sorter,
whose out-of-range entry is NumPy's ValueError. Fixed programs (one g++ run); hypothesis draws
the values."""
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


def _search(side):
    return lambda a, v: np.searchsorted(a, v, side=side)


def _sorted_by(side):
    return lambda a, v, s: np.searchsorted(a, v, side=side, sorter=s)


# (name, function, a dtype, a length, v dtype, v shape, with a sorter)
CASES = [
    ("left-f64", _search("left"), np.float64, 40, np.float64, (9,), False),
    ("right-f64", _search("right"), np.float64, 40, np.float64, (3, 3), False),
    ("left-f16", _search("left"), np.float16, 17, np.float16, (6,), False),
    ("right-i16-f32", _search("right"), np.int16, 25, np.float32, (8,), False),
    ("left-u8-i64", _search("left"), np.uint8, 1, np.int64, (5,), False),
    ("left-bool", _search("left"), np.bool_, 12, np.bool_, (4,), False),
    ("sorter-left-i32", _sorted_by("left"), np.int32, 30, np.int32, (7,), True),
    ("sorter-right-f64", _sorted_by("right"), np.float64, 19, np.float64, (5,), True),
]


def _numbers(dt, shape):
    dt = np.dtype(dt)
    if dt.kind == "f":
        return hnp.arrays(dt, shape, elements=st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5])
                          | st.integers(-5, 5).map(float))
    if dt.kind == "b":
        return hnp.arrays(dt, shape)
    info = np.iinfo(dt)
    return hnp.arrays(dt, shape, elements=st.integers(max(-6, int(info.min)), 6) | st.sampled_from([int(info.max)]))


def _args(adt, n, vdt, vshape, sorter):
    args = [np.zeros(n, adt), np.zeros(vshape, vdt)]
    return args + [np.arange(n)] if sorter else args


@pytest.fixture(scope="module")
def modules() -> list:
    return [module_for(fn, *_args(adt, n, vdt, vsh, s))[1] for _, fn, adt, n, vdt, vsh, s in CASES]


@pytest.fixture(scope="module", autouse=True)
def prebuilt(modules) -> None:
    from jitkernel.backends.cuda import emulator
    emulator.prebuild(modules)


@pytest.mark.parametrize("name,fn,adt,n,vdt,vshape,with_sorter", CASES, ids=[c[0] for c in CASES])
def test_matches_numpy(name, fn, adt, n, vdt, vshape, with_sorter) -> None:
    f = jk.jit(fn, backend="cuda-emulator")

    @settings(max_examples=12, deadline=None, database=None)
    @given(a=_numbers(adt, n), v=_numbers(vdt, vshape), seed=st.integers(0, 2**32 - 1))
    def check(a, v, seed):
        if with_sorter:
            s = np.random.default_rng(seed).permutation(n)
            a = a[s]  # unsorted; a[s'] with s' = argsort is sorted
            args = (a, v, np.argsort(a, kind="stable"))
        else:
            args = (np.sort(a), v)
        want = fn(*args)
        got = f(*args)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)

    check()


@pytest.mark.parametrize("bad", [15, 4])
def test_a_sorter_entry_out_of_range_is_numpys_value_error(bad: int) -> None:
    """Entry 15 is the first one NumPy's binary search visits: both raise. NumPy checks only the
    entries its search visits (entry 4 goes unnoticed for these values); the GPU checks every
    entry (it never reads outside the array), so it raises there too: stricter, never a value."""
    f = jk.jit(_sorted_by("left"), backend="cuda-emulator")
    a, v = np.arange(30, dtype=np.int32), np.zeros(7, np.int32)
    s = np.arange(30)
    s[bad] = 30
    with pytest.raises(ValueError, match="Sorter index out of range."):
        f(a, v, s)
    if bad == 15:
        with pytest.raises(ValueError, match="Sorter index out of range."):
            np.searchsorted(a, v, sorter=s)


@needs_nvcc
def test_every_case_compiles_with_nvcc(modules) -> None:
    assert_compiles_with_nvcc(modules)
