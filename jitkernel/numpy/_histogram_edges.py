"""histogram_bin_edges: the edges numpy.histogram would use, from the same library step
(numpy/_cumulative.py's histogram runs NumPy's own histogram at run time, so the edges are
NumPy's bit for bit, and its data errors, such as a non-finite autodetected range, are raised
from the call). bins is an int (a static count) or an array of edges; the string rules
('auto', 'fd', ...) choose the count from the data, so the result's shape would depend on it:
refused with UnsupportedOperationError.

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda a: np.histogram_bin_edges(a, bins=4))(np.array([0.0, 1.0, 2.0]))
array([0. , 0.5, 1. , 1.5, 2. ])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.operands import context_of
from ._cumulative import histogram

__all__ = ["histogram_bin_edges"]


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Any:  # noqa: A002
    """numpy.histogram_bin_edges with an int or array `bins`."""
    ctx = context_of(a, bins, weights, range)
    if ctx is None:
        return np.histogram_bin_edges(a, bins, range, weights)
    if isinstance(bins, str):
        raise UnsupportedOperationError(
            f"numpy.histogram_bin_edges: bins={bins!r} chooses the number of bins from the data, so the "
            "result shape would depend on it; pass an int or an array of edges inside jit")
    return histogram(a, bins=bins, range=range, weights=weights)[1]


histogram_bin_edges.__jk_support__ = "partly: bins an int or an array (string rules pick the count from the data)"
