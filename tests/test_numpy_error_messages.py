"""Errors raised where NumPy raises, with NumPy's exact class and message: the jitted call's
checks must read the call's own numbers (not a stand-in a shape or dtype probe used), report
what NumPy reports first, and creation of an array NumPy cannot describe must say so as NumPy
does. Each generator compares `type(exc)` and `str(exc)` with NumPy's on cpu and interpret."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from helpers import HOST_BACKENDS, assert_matches_numpy, call_on_copies

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None, print_blob=False)


def assert_same_outcome(fn, args, backend, compare_values=True):
    """NumPy's and the jitted call's exception: the same class and message; or both return."""
    expected = call_on_copies(fn, *args)
    got = call_on_copies(jk.jit(fn, backend=backend), *args)
    if expected[0] == "raise":
        assert got[0] == "raise", (expected[1], got[1])
        assert (type(got[1]), str(got[1])) == (type(expected[1]), str(expected[1]))
    else:
        assert got[0] == "ok", got[1]
        if compare_values:
            assert_matches_numpy(got[1], expected[1])


_EDGES = [0.0, 1.0, -1.0, 1e308, -1e308, 1.7e308, np.inf, -np.inf, np.nan, 5e-324, 1e-300, 2.0**53]


@SETTINGS
@given(bins=st.sampled_from([1, 2, 3, 4, 7, 64, 1000]), lo=st.sampled_from(_EDGES), hi=st.sampled_from(_EDGES),
       dtype=st.sampled_from(["float16", "float32", "float64", "int32"]), backend=st.sampled_from(HOST_BACKENDS))
def test_histogram_range_errors_name_the_calls_bins(bins, lo, hi, dtype, backend):
    """A static range= and an int bins= decide the edges before the data: the call raises
    NumPy's error with NumPy's numbers ("Cannot create 4 finite-sized bins", the range it read)."""
    fn = lambda x: np.histogram(x, bins=bins, range=(lo, hi))  # noqa: E731
    assert_same_outcome(fn, (np.linspace(-3, 3, 9).astype(dtype),), backend, compare_values=False)


def test_histogram_too_many_bins_message():
    x = np.linspace(0, 1, 10)
    with pytest.raises(ValueError, match="^Too many bins for data range. Cannot create 4 finite-sized bins.$"):
        jk.jit(lambda x: np.histogram(x, bins=4, range=(-1e308, 1e308)))(x)


# ----------------------------------------------------------------------------- out-of-bounds indices


def _scatter(x, i, j):
    x[i] = 7.0
    return x


def _scalar_store(x, i, j):
    x[i[0], i[1]] = 2.0
    return x


def _scatter_add(x, i, j):
    x[i, j] += 1.0
    return x


def _put(x, i, j):
    np.put(x, i, 1.0)
    return x


# Index forms of a (4, 5) array by two int arrays i (shape (3,)) and j (shape (2, 3)): NumPy
# names the first bad index in the order it checks them (index arrays in axis order, each in C order).
INDEX_FORMS = {
    "x[i]": lambda x, i, j: x[i], "x[:, i]": lambda x, i, j: x[:, i], "x[i, 1:]": lambda x, i, j: x[i, 1:],
    "x[j]": lambda x, i, j: x[j], "x[:, j]": lambda x, i, j: x[:, j], "x[i, j]": lambda x, i, j: x[i, j],
    "x[j, i]": lambda x, i, j: x[j, i], "x[i[:, None], j[0]]": lambda x, i, j: x[i[:, None], j[0]],
    "x[i, 2]": lambda x, i, j: x[i, 2], "x[1, j]": lambda x, i, j: x[1, j],
    "x[i].sum()": lambda x, i, j: x[i].sum(), "x[i] * 2 + x[:, j].sum()": lambda x, i, j: x[i] * 2 + x[:, j].sum(),
    "take": lambda x, i, j: np.take(x, j), "take axis 1": lambda x, i, j: np.take(x, j, axis=1),
    "take axis 0": lambda x, i, j: np.take(x, i, axis=0), "take_along_axis": lambda x, i, j: np.take_along_axis(x, j, 1),
    "x[i[0], i[1]]": lambda x, i, j: x[i[0], i[1]], "x[i[2]]": lambda x, i, j: x[i[2]],
    "x[:, i[1]]": lambda x, i, j: x[:, i[1]], "x[i[0], j]": lambda x, i, j: x[i[0], j],
    "x[i[0], i[1]] = 2": _scalar_store, "x[i] = 7": _scatter, "x[i, j] += 1": _scatter_add, "put": _put,
}
_JITTED: dict = {}


@SETTINGS
@given(form=st.sampled_from(sorted(INDEX_FORMS)), backend=st.sampled_from(HOST_BACKENDS),
       i=st.lists(st.integers(-9, 9), min_size=3, max_size=3), j=st.lists(st.integers(-9, 9), min_size=6, max_size=6))
def test_out_of_bounds_index_names_numpys_first_bad_index(form, backend, i, j):
    """Every index form on cpu and interpret, drawn indices in and out of bounds: NumPy's
    IndexError with the index NumPy names, or NumPy's result. One compile per form and backend."""
    fn = INDEX_FORMS[form]
    jitted = _JITTED.setdefault((form, backend), jk.jit(fn, backend=backend))
    args = (np.arange(20.0).reshape(4, 5), np.array(i), np.array(j).reshape(2, 3))
    expected, got = call_on_copies(fn, *args), call_on_copies(jitted, *args)
    if expected[0] == "raise":
        assert got[0] == "raise", (form, expected[1], got[1])
        assert (type(got[1]), str(got[1])) == (type(expected[1]), str(expected[1])), form
    else:
        assert got[0] == "ok", (form, got[1])
        assert_matches_numpy(got[1], expected[1])
        np.testing.assert_array_equal(got[2][0], expected[2][0])  # the written array


# ----------------------------------------------------------------------------- arrays too big to make

# Functions that make an array of a length n (static inside jit). NumPy refuses a length past
# npy_intp ("Maximum allowed dimension exceeded"), an array whose bytes overflow it ("array is
# too big"), and fails to allocate one past the address space (its _ArrayMemoryError). Left out:
# np.repeat(x, 2**62) (NumPy 2.4 crashes), np.resize (NumPy's MemoryError comes from repeating a
# Python list), np.pad (NumPy's lengths wrap around), and a broadcast_to that NumPy can return as
# a view of one element (a jitted result is a new array; docs/numpy-support.md).
HUGE_FORMS = {
    "zeros": lambda n: lambda x: np.zeros(n), "ones": lambda n: lambda x: np.ones(n), "empty": lambda n: lambda x: np.empty(n),
    "full": lambda n: lambda x: np.full(n, x[0]), "ones (n, n)": lambda n: lambda x: np.ones((n, n)),
    "zeros (n, 4) int8": lambda n: lambda x: np.zeros((n, 4), np.int8), "zeros (0, n)": lambda n: lambda x: np.zeros((0, n)),
    "ones complex": lambda n: lambda x: np.ones(n // 8, complex), "eye": lambda n: lambda x: np.eye(n),
    "identity": lambda n: lambda x: np.identity(n), "tri": lambda n: lambda x: np.tri(n), "arange": lambda n: lambda x: np.arange(n),
    "arange float": lambda n: lambda x: np.arange(float(n)), "linspace": lambda n: lambda x: np.linspace(0, 1, n),
    "tile": lambda n: lambda x: np.tile(x, n), "tile (n, 2)": lambda n: lambda x: np.tile(x, (n, 2)),
    "ones_like shape": lambda n: lambda x: np.ones_like(x, shape=(n,)),
    "full_like shape": lambda n: lambda x: np.full_like(x, 2, shape=(n, 3)),
    "empty_like shape": lambda n: lambda x: np.empty_like(x, shape=(2, n)), "indices": lambda n: lambda x: np.indices((n, n)),
    "zeros + x": lambda n: lambda x: np.zeros((n, 4)) + x, "outer": lambda n: lambda x: np.outer(np.ones(n), x),
    "kron": lambda n: lambda x: np.kron(np.ones(n), x),
    "broadcast_to (n, 4)": lambda n: lambda x: np.broadcast_to(x, (n, 4)) + 1,
}


@SETTINGS
@given(form=st.sampled_from(sorted(HUGE_FORMS)), n=st.sampled_from([2**64, 2**63 - 1, 2**62, 2**61 + 1, 2**60, 2**50]),
       backend=st.sampled_from(HOST_BACKENDS))
def test_arrays_too_big_raise_numpys_error(form, n, backend):
    """NumPy's class and message (a MemoryError's message names the first array NumPy tried to
    allocate, an intermediate of its own implementation: only its class is compared)."""
    fn = HUGE_FORMS[form](n)
    x = np.arange(4.0)
    expected, got = call_on_copies(fn, x), call_on_copies(jk.jit(fn, backend=backend), x)
    assert got[0] == expected[0], (form, n, expected[1], got[1])
    if expected[0] == "ok":  # np.arange(2**63 - 1) is empty (NumPy's length overflows)
        assert_matches_numpy(got[1], expected[1])
        return
    assert type(got[1]) is type(expected[1]), (form, n, expected[1], got[1])
    if not isinstance(expected[1], MemoryError):
        assert str(got[1]) == str(expected[1]), (form, n)


def test_too_big_checked_at_trace():
    """np.ones(2**62) raises NumPy's ValueError before any backend sees the program (the CPU
    backend's compile used to exhaust memory on it); an unallocatable one raises NumPy's
    MemoryError from the run, not a bare one from the compile."""
    f = jk.jit(lambda x: np.ones(2**62) + x[0], backend="cpu")
    with pytest.raises(ValueError, match="^array is too big"):
        f(np.ones(2))
    with pytest.raises(MemoryError, match="^Unable to allocate 8.00 PiB"):
        jk.jit(lambda x: np.ones(2**50) * x[0], backend="cpu")(np.ones(2))
