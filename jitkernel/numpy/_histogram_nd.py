"""histogramdd and histogram2d inside a trace: NumPy's own algorithm (numpy/lib/
_histograms_impl.py) written over existing functions, with no primitive of its own:

- edges per dimension: for an int bin count, np.linspace between the outer edges, which are
  the static range= (NumPy's own _get_outer_edges checks it and the edges are a NumPy
  constant) or the traced min and max of the sample column (NumPy's +-0.5 widening when they
  are equal; a non-finite min or max raises ValueError when the call runs); an array of edges,
  constant (checked now) or traced (checked when the call runs), is used as given;
- the bin of each sample: searchsorted(edges, x, side='right'), one bin lower for values on
  the last edge (the last bin is closed on the right), outliers in the extra bins 0 and -1;
- the flat bin index (the strides of the (nbins + 2)-shaped grid), bincount with the static
  minlength = the grid's size (every index is below it), then the outlier bins cut off;
- density: NumPy's division by each dimension's bin widths and by the total.

Counts are NumPy's exactly; the density agrees to rounding (NumPy sums a strided view).
The number of bins must be static (it is the result's shape).

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda x, y: np.histogram2d(x, y, bins=2)[0])(np.array([0.0, 1.0, 1.0]), np.array([0.0, 0.0, 1.0]))
array([[1., 0.],
       [1., 1.]])
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import Any

import numpy as np
from numpy.lib._histograms_impl import _get_outer_edges

from ..errors import UnsupportedOperationError
from ..trace.operands import context_of, lift, shape_of
from ..trace.tracer import Tracer
from ._cumulative import bincount
from ._matrix import linspace
from ._reductions import any as _any, max as _max, min as _min, sum as _sum
from ._shape import astype, reshape, stack, transpose
from ._sorting import searchsorted
from ._statistics import raise_if
from ._ufuncs import apply_ufunc, where

__all__ = ["histogramdd", "histogram2d"]

_INTP = np.dtype(np.intp)


def _leaves(sample: Any, bins: Any, range: Any, weights: Any) -> list:  # noqa: A002
    """Every value a trace could hide in (NumPy's dispatcher looks at the same places)."""
    out = [sample] if hasattr(sample, "shape") else list(sample)
    if isinstance(bins, (list, tuple)):
        out.extend(bins)
    else:
        out.append(bins)
    if range is not None:
        for r in range:
            out.extend(r if isinstance(r, (list, tuple)) else [r])
    return out + [weights]


def _as_sample(ctx: Any, sample: Any) -> Any:
    """The (N, D) sample: an (N, D) array as is, a 1-D array as N points of one dimension, a
    sequence of D arrays as their stack transposed (NumPy's atleast_2d(sample).T)."""
    if hasattr(sample, "shape") and len(shape_of(sample)) == 2:
        return lift(ctx, sample)
    rows = lift(ctx, sample) if hasattr(sample, "shape") else stack([lift(ctx, x) for x in sample])
    if rows.ndim == 1:
        rows = reshape(rows, (1, -1))
    if rows.ndim != 2:
        raise ValueError(f"too many values to unpack (expected 2, got {rows.ndim})")
    return transpose(rows)


def _traced_outer_edges(column: Any) -> tuple[Any, Any]:
    """NumPy's _get_outer_edges without range= on a traced, non-empty column: min and max,
    checked finite when the call runs, widened by 0.5 each way when equal."""
    lo, hi = _min(column), _max(column)
    finite = apply_ufunc(np.logical_and, apply_ufunc(np.isfinite, lo), apply_ufunc(np.isfinite, hi))
    lo = raise_if(lo, apply_ufunc(np.logical_not, finite), "ValueError",
                  "autodetected range of [min, max] is not finite")
    equal = apply_ufunc(np.equal, lo, hi)
    return (where(equal, apply_ufunc(np.subtract, lo, 0.5), lo),
            where(equal, apply_ufunc(np.add, hi, 0.5), hi))


def _count_edges(ctx: Any, column: Any, count: Any, rng: Any, i: int) -> Any:
    """The n + 1 edges of `count` equal bins (NumPy's checks and messages)."""
    if isinstance(count, Tracer):
        raise UnsupportedOperationError(
            "numpy.histogramdd: the number of bins is the result's shape: it must be static inside jit")
    if count < 1:
        raise ValueError(f"`bins[{i}]` must be positive, when an integer")
    if rng is not None and any(isinstance(r, Tracer) for r in rng):
        raise UnsupportedOperationError("numpy.histogramdd: range must be static (Python numbers) inside jit")
    if rng is not None or column.shape[0] == 0:
        smin, smax = _get_outer_edges(np.zeros(0), rng)  # NumPy's own checks of range
    else:
        smin, smax = _traced_outer_edges(column)
    try:
        n = operator.index(count)
    except TypeError as e:
        raise TypeError(f"`bins[{i}]` must be an integer, when a scalar") from e
    return linspace(smin, smax, n + 1)


def _given_edges(ctx: Any, edges: Any, i: int) -> Any:
    """An array of edges as given, checked increasing (now if constant, else when it runs)."""
    message = f"`bins[{i}]` must be monotonically increasing, when an array"
    if not isinstance(edges, Tracer):
        edges = np.asarray(edges)
        if np.any(edges[:-1] > edges[1:]):
            raise ValueError(message)
        return lift(ctx, edges)
    return raise_if(edges, _any(apply_ufunc(np.greater, edges[:-1], edges[1:])), "ValueError", message)


def histogramdd(sample: Any, bins: Any = 10, range: Any = None, density: Any = None,  # noqa: A002
                weights: Any = None) -> Any:
    """numpy.histogramdd with static bin counts or arrays of edges (constant or traced)."""
    ctx = context_of(*_leaves(sample, bins, range, weights))
    if ctx is None:
        return np.histogramdd(sample, bins, range, density, weights)
    s = _as_sample(ctx, sample)
    n_points, dims = s.shape
    try:
        if len(bins) != dims:
            raise ValueError('The dimension of bins must be equal to the dimension of the sample x.')
    except TypeError:  # an int: the same count in every dimension
        bins = dims * [bins]
    if range is None:
        range = (None,) * dims  # noqa: A001
    elif len(range) != dims:
        raise ValueError('range argument must have one entry per dimension')
    edges, nbin = [], []
    for i in builtins.range(dims):  # `range` is NumPy's argument here
        column = s[:, i]
        if len(shape_of(bins[i])) == 0:
            e = _count_edges(ctx, column, bins[i], range[i], i)
        elif len(shape_of(bins[i])) == 1:
            e = _given_edges(ctx, bins[i], i)
        else:
            raise ValueError(f'`bins[{i}]` must be a scalar or 1d array')
        edges.append(e)
        nbin.append(e.shape[0] + 1)  # an outlier bin at each end
    flat = _flat_bins(ctx, s, edges, nbin)
    if weights is not None:
        weights = lift(ctx, weights)
        if weights.shape != (n_points,):
            raise ValueError("The weights and list don't have the same length.")
    hist = bincount(flat, weights, minlength=math.prod(nbin))
    hist = reshape(hist, tuple(nbin))
    hist = astype(hist, np.float64)
    hist = hist[(slice(1, -1),) * dims]
    if density:
        hist = _density(hist, edges, nbin)
    return hist, edges


def _flat_bins(ctx: Any, s: Any, edges: list, nbin: list) -> Any:
    """The index of each sample's bin in the flattened (nbin)-shaped grid (C order)."""
    flat = None
    for i, (e, n) in enumerate(zip(edges, nbin)):
        column = s[:, i]
        index = lift(ctx, searchsorted(e, column, side="right"), _INTP)
        on_edge = apply_ufunc(np.equal, column, e[-1])  # the last bin is closed on the right
        index = where(on_edge, apply_ufunc(np.subtract, index, 1), index)
        term = apply_ufunc(np.multiply, index, math.prod(nbin[i + 1:]))
        flat = term if flat is None else apply_ufunc(np.add, flat, term)
    return flat


def _density(hist: Any, edges: list, nbin: list) -> Any:
    """NumPy's: each dimension's bin widths divided out in turn, then the total."""
    total = _sum(hist)
    dims = len(edges)
    for i, e in enumerate(edges):
        shape = [1] * dims
        shape[i] = nbin[i] - 2
        widths = apply_ufunc(np.subtract, e[1:], e[:-1])
        hist = apply_ufunc(np.divide, hist, reshape(widths, tuple(shape)))
    return apply_ufunc(np.divide, hist, total)


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, density: Any = None,  # noqa: A002
                weights: Any = None) -> Any:
    """numpy.histogram2d: histogramdd of the points (x, y); bins an int, a pair, or one array
    of edges for both."""
    pair = [x, y]
    ctx = context_of(x, y, weights, *(bins if isinstance(bins, (list, tuple)) else [bins]))
    if ctx is None:
        return np.histogram2d(x, y, bins, range, density, weights)
    if len(x) != len(y):
        raise ValueError('x and y must have the same length.')
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n not in {1, 2}:
        xedges = yedges = bins if isinstance(bins, Tracer) else np.asarray(bins)
        bins = [xedges, yedges]
    hist, edges = histogramdd(pair, bins, range, density, weights)
    return hist, edges[0], edges[1]


histogramdd.__jk_support__ = "partly: static bin counts (or arrays of edges); static range"
histogram2d.__jk_support__ = "partly: static bin counts (or arrays of edges); static range"
