"""The CPU runtime's compiled histogram of equal bins (backends/cpu/histograms.py) against
NumPy's `np.histogram`, bit for bit: counts, weight sums (NumPy's block order), edges, density,
and NumPy's errors; with the blocks of 65,536 elements on one to three threads.

The data put many values exactly on bin edges (multiples of the bin width), where the rounding
of NumPy's float index is corrected against the edges; weights hold NaN, infinities and -0.0.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import jitkernel as jk
from jitkernel.backends.cpu.histograms import native_histogram
from jitkernel.ir import primitives

_POOL = ThreadPoolExecutor(2, thread_name_prefix="test-histograms")


def _native(threads: int):
    impl = primitives.get("histogram").impl
    return native_histogram("histogram", {"bins": 1}, impl, lambda: threads, lambda n: _POOL)


def _data(seed: int, size: int, kind: str, bins: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "edges":  # values on the edges of [0, 3) cut in `bins`, and between them
        return rng.integers(0, 2 * bins + 1, size) * (1.5 / bins)
    if kind == "near":  # the data's own edges and their neighbours one ulp away: the corrections
        lo = rng.uniform(-10, 10) * 10.0 ** rng.integers(-3, 4)
        edges = np.linspace(lo, lo + rng.uniform(1e-3, 100) * 10.0 ** rng.integers(-3, 4), bins + 1)
        points = edges[rng.integers(0, bins + 1, size)]
        points = np.where(rng.random(size) < 1 / 3, np.nextafter(points, -np.inf), points)
        points = np.where(rng.random(size) < 1 / 2, np.nextafter(points, np.inf), points)
        points = np.clip(points, edges[0], edges[-1])  # the data's range stays [edges[0], edges[-1]]
        return np.concatenate([edges[[0, -1]], points])[:size] if size >= 2 else points
    if kind == "constant":
        return np.full(size, 2.5)
    if kind == "wide":
        return rng.standard_normal(size) * 1e6
    return rng.random(size)


def _outcome(fn, *args, **kw):
    try:
        return fn(*args, **kw)
    except Exception as err:  # noqa: BLE001 - the error itself is compared
        return type(err), str(err)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.sampled_from([0, 1, 7, 300, 65536, 65537, 140000]),
       kind=st.sampled_from(["uniform", "edges", "near", "constant", "wide"]), bins=st.integers(1, 60),
       range_=st.sampled_from([None, (0.0, 1.0), (0, 3), (0.25, 0.75), (-1e6, 1e6), (2.5, 2.5), (1.0, 0.0)]),
       weighted=st.booleans(), density=st.booleans(), specials=st.booleans(), threads=st.integers(1, 3))
@example(seed=0, size=140000, kind="edges", bins=7, range_=None, weighted=True, density=False,
         specials=False, threads=2)
@example(seed=1, size=300, kind="near", bins=17, range_=None, weighted=False, density=False,
         specials=False, threads=1)  # an index one too high, corrected down by its left edge
@example(seed=2, size=140000, kind="near", bins=50, range_=None, weighted=True, density=False,
         specials=True, threads=3)
def test_native_histogram_is_numpys(seed, size, kind, bins, range_, weighted, density, specials, threads):
    a = _data(seed, size, kind, bins)
    weights = None
    if weighted:
        weights = np.random.default_rng(seed + 1).standard_normal(size)
    if specials and size:
        rng = np.random.default_rng(seed + 2)
        spots = rng.integers(0, size, 3)
        if range_ is not None:  # NaN and inf data outside any range (NumPy raises without one)
            a[spots[0]], a[spots[1]] = np.nan, np.inf
        if weights is not None:
            weights[spots[1]], weights[spots[2]] = np.inf, -0.0
            weights[spots[0]] = np.nan
    expected = _outcome(np.histogram, a, bins, range=range_, density=density or None, weights=weights)
    rest = (weights,) if weighted else ()
    got = _outcome(_native(threads), a, *rest, bins=bins, range=range_, density=density, weighted=weighted)
    if isinstance(expected[0], type):
        assert got == expected
        return
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)
        assert np.array_equal(np.signbit(g), np.signbit(e))


@pytest.mark.parametrize("threads", [1, 2])
def test_block_sums_are_added_in_numpys_order(threads):
    """NumPy adds each block's sums to the totals block by block: 1 + 1e16 - 1e16 is 0 in that
    order, 1 in any other."""
    a = np.zeros(3 * 65536)
    weights = np.zeros_like(a)
    weights[0], weights[65536], weights[2 * 65536] = 1.0, 1e16, -1e16
    got = _native(threads)(a, weights, bins=1, range=None, density=False, weighted=True)[0]
    expected = np.histogram(a, 1, weights=weights)[0]
    assert expected[0] == 0.0
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("a, kw", [
    (np.arange(10, dtype=np.float32), {}),                       # float32 data: NumPy's function
    (np.arange(10.0), {"weights": np.arange(10)}),               # int weights: NumPy's function
    (np.arange(10.0), {"range": (0, 2**60)}),                    # an end that is no float64 exactly
])
def test_other_histograms_run_numpys_function(a, kw):
    weights = kw.get("weights")
    rest = (weights,) if weights is not None else ()
    got = _native(2)(a, *rest, bins=4, range=kw.get("range"), density=False, weighted=weights is not None)
    expected = np.histogram(a, 4, range=kw.get("range"), weights=weights)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)


def test_jitted_histograms_of_one_radius_are_numpys():
    """NPBench's azimint_hist, as written: two histograms of one radius, one of them weighted."""
    def azimint_hist(data, radius, npt):
        histu = np.histogram(radius, npt)[0]
        histw = np.histogram(radius, npt, weights=data)[0]
        return histw / histu

    rng = np.random.default_rng(42)
    data, radius = rng.random(200_000), rng.random(200_000)
    got, expected = jk.jit(azimint_hist)(data, radius, 1000), azimint_hist(data, radius, 1000)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
