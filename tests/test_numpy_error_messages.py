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
