"""The static-int retrace holds for Dask arguments as for NumPy ones.

A function that needs an integer argument's value at trace time (`np.zeros(n)`, `a[:, :k]`)
is traced again with its integer arguments static (api.Jitted._with_static_ints), whether its
array arguments are NumPy or Dask arrays (jitkernel/distributed/__init__.py).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

import jitkernel as jk  # noqa: E402
from jitkernel.distributed import RechunkWarning  # noqa: E402
from helpers import HOST_BACKENDS  # noqa: E402

X = np.arange(24.0).reshape(4, 6)


@pytest.fixture(autouse=True)
def synchronous_scheduler():
    with dask.config.set(scheduler="synchronous"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RechunkWarning)
        yield


def zeros_plus_sum(x, n):
    return np.zeros(n) + x.sum()


def first_columns(a, k):
    return a[:, :k] * 2


def both(a, k, n):
    return a[:, :k].sum(0) + np.ones(n)[:k]


@pytest.mark.parametrize("chunks", [(4, 6), (2, 3), (1, (1, 0, 5)), ((3, 1), (4, 2))], ids=str)
@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_int_arguments_used_as_sizes_and_slice_bounds_with_dask_arrays(chunks, backend):
    for fn, ints in [(zeros_plus_sum, (3,)), (first_columns, (4,)), (both, (2, 5))]:
        f = jk.jit(fn, backend=backend)
        got = f(da.from_array(X, chunks=chunks), *ints).compute()
        np.testing.assert_array_equal(got, fn(X, *ints))
        # another value is traced again with it; a NumPy argument still works after
        other = tuple(i + 1 for i in ints)
        np.testing.assert_array_equal(f(da.from_array(X, chunks=chunks), *other).compute(), fn(X, *other))
        np.testing.assert_array_equal(f(X, *ints), fn(X, *ints))


def test_keyword_int_argument_with_dask_arrays():
    f = jk.jit(first_columns)
    np.testing.assert_array_equal(f(da.from_array(X, chunks=2), k=3).compute(), first_columns(X, 3))


def test_numpy_call_first_then_dask():
    f = jk.jit(zeros_plus_sum)
    np.testing.assert_array_equal(f(X, 2), zeros_plus_sum(X, 2))
    np.testing.assert_array_equal(f(da.from_array(X, chunks=2), 2).compute(), zeros_plus_sum(X, 2))


def test_a_failure_with_static_ints_too_names_the_retrace():
    def bad(x, n):
        return np.zeros(n) + x[x > 0].sum() * np.zeros(int(x.sum()))  # a traced value as a size: never static
    with pytest.raises(Exception) as info:
        jk.jit(bad)(da.from_array(X, chunks=2), 3)
    assert "again with its integer arguments n static" in "".join(getattr(info.value, "__notes__", []))
