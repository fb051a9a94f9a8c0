"""np.histogramdd and np.histogram2d inside jit: static bin counts, arrays of edges (constant
or traced), range=, density=, weights=, samples given as an (N, D) array, a 1-D array or a
sequence of arrays; counts and edges bit for bit against NumPy (values on the last edge in the
last bin, outliers dropped), density allclose; NumPy's errors (also the data-dependent ones,
raised when the call runs); derivatives in the weights and vmap. (The CUDA renderer has no bincount step: no GPU case.)"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import HOST_BACKENDS, raises_like_numpy, rng_for

SETTINGS = settings(max_examples=30, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
RNG = rng_for("histogram-nd")
X, Y, Z = RNG.standard_normal(40), RNG.standard_normal(40), RNG.integers(-3, 4, 40)
W = RNG.random(40)


def _leaves(result):
    hist, *edges = result
    if len(edges) == 1:  # histogramdd: (hist, list of edges)
        edges = edges[0]
    return [hist, *edges]


def _same(got, want, density=False):
    for g, e in zip(_leaves(got), _leaves(want), strict=True):
        assert type(g) is np.ndarray and g.dtype == e.dtype and g.shape == e.shape, (g, e)
        if density:
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=0)
        else:
            np.testing.assert_array_equal(g, e)


def _check(fn, *args, backend="cpu", density=False):
    _same(jk.jit(fn, backend=backend)(*args), fn(*args), density)


CASES = {
    "default": lambda x, y: np.histogram2d(x, y),
    "counts": lambda x, y: np.histogram2d(x, y, bins=(3, 4)),
    "range": lambda x, y: np.histogram2d(x, y, bins=(3, 4), range=[[-1, 1], [-2.5, 2]]),
    "edges-for-both": lambda x, y: np.histogram2d(x, y, bins=np.array([-2.0, -0.5, 0.0, 1.0, 3.0])),
    "mixed": lambda x, y: np.histogram2d(x, y, bins=[np.array([-1, 0, 2]), 5]),  # int edges kept as given
    "weights": lambda x, y: np.histogram2d(x, y, bins=4, weights=W),
    "dd-array": lambda x, y: np.histogramdd(np.stack([x, y, x * y], 1), bins=(2, 3, 4)),
    "dd-1d": lambda x, y: np.histogramdd(x, bins=5),
    "dd-sequence": lambda x, y: np.histogramdd((x, y, Z), bins=3, range=[(-1, 1), None, (-3, 3)]),
    "dd-int-sample": lambda x, y: np.histogramdd(np.stack([Z, Z * 2], 1), bins=(7, 3)),
    "float32": lambda x, y: np.histogram2d(x.astype(np.float32), y.astype(np.float32), bins=6),
    "on-edges": lambda x, y: np.histogram2d(np.round(x), np.round(y), bins=[np.arange(-2.0, 3.0), 2]),
    "constant-column": lambda x, y: np.histogram2d(x * 0 + 1.5, y, bins=3),      # min == max: +-0.5
    "empty": lambda x, y: np.histogram2d(x[:0], y[:0], bins=3),
}


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("name", list(CASES))
def test_counts_and_edges_bit_for_bit(backend, name):
    _check(CASES[name], X, Y, backend=backend)


DENSITY_CASES = {
    "default": lambda x, y: np.histogram2d(x, y, density=True),
    "range": lambda x, y: np.histogram2d(x, y, bins=(3, 4), range=[[-1, 1], [-2.5, 2]], density=True),
    "mixed": lambda x, y: np.histogram2d(x, y, bins=[np.array([-1, 0, 2]), 5], density=True),
    "weights": lambda x, y: np.histogram2d(x, y, bins=4, weights=W, density=True),
    "dd-array": lambda x, y: np.histogramdd(np.stack([x, y, x * y], 1), bins=(2, 3, 4), density=True),
    "dd-sequence": lambda x, y: np.histogramdd((x, y, Z), bins=3, range=[(-1, 1), None, (-3, 3)], density=True),
    "float32": lambda x, y: np.histogram2d(x.astype(np.float32), y.astype(np.float32), bins=6, density=True),
}


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("name", list(DENSITY_CASES))
def test_density(backend, name):
    _check(DENSITY_CASES[name], X, Y, backend=backend, density=True)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_traced_edges(backend):
    edges = np.array([-2.0, -0.5, 0.0, 1.0, 3.0])
    _check(lambda x, y, e: np.histogram2d(x, y, bins=[e, e[1:]]), X, Y, edges, backend=backend)
    _check(lambda x, y, e: np.histogram2d(x, y, bins=e, density=True), X, Y, edges, backend=backend, density=True)
    _check(lambda x, e, w: np.histogramdd(x, bins=[e], weights=w), X, edges, W, backend=backend)


@given(n=st.integers(0, 30), dims=st.integers(1, 3), seed=st.integers(0, 2 ** 16),
       counts=st.lists(st.integers(1, 5), min_size=3, max_size=3),
       dtype=st.sampled_from([np.float64, np.float32, np.int64, np.int16]),
       ranged=st.booleans(), weighted=st.booleans(), density=st.booleans())
@SETTINGS
def test_histogramdd_matches_numpy(n, dims, seed, counts, dtype, ranged, weighted, density):
    rng = np.random.default_rng(seed)
    sample = (rng.standard_normal((n, dims)) * 3).astype(dtype)
    rng_arg = [(-2, 2.5)] * dims if ranged else None
    w = rng.random(n) if weighted else None
    fn = lambda s, w: np.histogramdd(s, bins=counts[:dims], range=rng_arg, density=density, weights=w)  # noqa: E731
    with np.errstate(all="ignore"):  # density of an empty histogram: 0 / 0
        want = fn(sample, w)
    _same(jk.jit(fn)(sample, w), want, density)


def test_errors_are_numpys():
    raises_like_numpy(lambda x, y: np.histogram2d(x, y), X, Y[:3])                        # lengths differ
    raises_like_numpy(lambda x, y: np.histogram2d(x, y, bins=0), X, Y)                    # not positive
    raises_like_numpy(lambda x, y: np.histogram2d(x, y, bins=2.5), X, Y)                  # not an int
    raises_like_numpy(lambda x, y: np.histogram2d(x, y, range=[[1, 0], [0, 1]]), X, Y)    # min > max
    raises_like_numpy(lambda x, y: np.histogram2d(x, y, range=[[0, np.inf], [0, 1]]), X, Y)
    raises_like_numpy(lambda x, y: np.histogramdd(np.stack([x, y], 1), bins=(2, 2, 2)), X, Y)
    raises_like_numpy(lambda x, y: np.histogramdd(np.stack([x, y], 1), range=[(0, 1)]), X, Y)
    raises_like_numpy(lambda x, y: np.histogram2d(x, y, bins=[[0, 2, 1], 2]), X, Y)       # not increasing
    raises_like_numpy(lambda x, y: np.histogram2d(x, y, bins=[np.ones((2, 2)), 2]), X, Y)
    raises_like_numpy(lambda x, y: np.histogram2d(x, y, weights=W[:5]), X, Y)
    # data-dependent: raised when the call runs
    nan = X.copy()
    nan[3] = np.nan
    raises_like_numpy(lambda x, y: np.histogram2d(x, y), nan, Y)                           # range not finite
    raises_like_numpy(lambda x, y, e: np.histogram2d(x, y, bins=[e, 2]), X, Y, np.array([0.0, 2.0, 1.0]))


def test_traced_bin_count_is_refused():
    with pytest.raises(jk.UnsupportedOperationError, match="static"):
        jk.jit(lambda x, y, n: np.histogram2d(x, y, bins=n))(X, Y, np.array(3))


def test_derivative_in_the_weights_is_the_bin_indicator():
    """d hist / d weights: 1 where a point falls in a bin (density off); jacfwd == jacrev."""
    fn = lambda w: np.histogram2d(X, Y, bins=3, weights=w)[0]  # noqa: E731
    fwd, rev = jk.jacfwd(fn)(W), jk.jacrev(fn)(W)
    np.testing.assert_array_equal(fwd, rev)
    indicator = np.stack([np.histogram2d(X, Y, bins=3, weights=np.eye(40)[k])[0] for k in range(40)], -1)
    np.testing.assert_array_equal(fwd, indicator)


def test_vmap():
    xs, ys = np.stack([X, -X, X * 2]), np.stack([Y, Y, -Y])
    fn = lambda x, y: np.histogram2d(x, y, bins=3, range=[[-2, 2], [-2, 2]])[0]  # noqa: E731
    np.testing.assert_array_equal(jk.vmap(fn)(xs, ys), np.stack([fn(x, y) for x, y in zip(xs, ys)]))
