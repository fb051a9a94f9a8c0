"""Index arrays of every kind on backend="cuda-emulator" (backends/cuda/indexing.py): integer
arrays of every width and signedness give NumPy's gather, scatter and ufunc.at; a boolean mask
is refused (the kernels read index values as positions: a mask's 0s and 1s would silently name
rows 0 and 1, which is what they once did for `x[mask] = v`); one buffer used twice as an index
(`x[i, i]`) is one kernel parameter. Fixed programs (one g++ run); hypothesis draws indices."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitkernel as jk
from cuda_corpus import module_for

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")

X = np.arange(20.0).reshape(5, 4)
INDEX_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def gather(x, i):
    return x[i] * 2


def scatter(x, i):
    y = x * 1
    y[i] = -1.0
    return y


def add_at(x, i):
    y = x * 1
    np.add.at(y, i, 10.0)
    return y


def pair(x, i):
    return x[i, i]


def masked_set(x, m):
    y = x * 1
    y[m] = 7.0
    return y


def masked_add(x, m):
    y = x * 1
    y[m] += 1.0
    return y


PROGRAMS = [(fn, dt) for fn in (gather, scatter, add_at, pair) for dt in INDEX_DTYPES]


@pytest.fixture(scope="module", autouse=True)
def prebuilt() -> None:
    from jitkernel.backends.cuda import emulator
    emulator.prebuild([module_for(fn, X, np.zeros(3, dt))[1] for fn, dt in PROGRAMS])


@pytest.mark.parametrize("fn,dt", PROGRAMS, ids=[f"{fn.__name__}-{np.dtype(dt)}" for fn, dt in PROGRAMS])
def test_integer_index_arrays_of_every_dtype(fn, dt) -> None:
    f = jk.jit(fn, backend="cuda-emulator")
    info = np.iinfo(dt)
    limit = 4 if fn is pair else 5

    @settings(max_examples=10, deadline=None, database=None)
    @given(i=hnp.arrays(np.dtype(dt), 3, elements=st.integers(max(int(info.min), -2 * limit), 2 * limit)))
    def check(i):
        try:
            want = fn(X, i)
        except IndexError:
            # NumPy names the first bad index in axis order; with several bad ones the parallel
            # check may name another (docs/gpu.md, "Indexing and in-place updates on the GPU")
            with pytest.raises(IndexError, match=r"index -?\d+ is out of bounds for axis \d with size \d"):
                f(X, i)
            return
        np.testing.assert_array_equal(f(X, i), want)

    check()


@pytest.mark.parametrize("fn", [masked_set, masked_add])
@settings(max_examples=5, deadline=None, database=None)
@given(m=hnp.arrays(np.bool_, (5, 4)) | hnp.arrays(np.bool_, 5))
def test_a_boolean_mask_is_refused_or_numpys(fn, m) -> None:
    """Never a wrong answer: NumPy's result, or UnsupportedOperationError naming the mask."""
    want = fn(X, m)
    try:
        got = jk.jit(fn, backend="cuda-emulator")(X, m)
    except jk.UnsupportedOperationError as e:
        assert "mask" in str(e) or "datadep" in str(e)
        return
    np.testing.assert_array_equal(got, want)
