"""NumPy functions that write into an existing array: np.copyto, np.put (trace/inplace.py
holds the mechanism shared with `x[i] = v`, augmented operators and ufunc `out=`)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..trace import inplace
from ..trace.operands import context_of

__all__ = ["copyto", "put"]


def copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    """numpy.copyto: `dst[...] = src` where `where`, with NumPy's casting check.

    >>> import numpy as np, jitkernel as jk
    >>> def f(x):
    ...     out = np.zeros(3)
    ...     np.copyto(out, x, where=x > 1)
    ...     return out
    >>> jk.jit(f)(np.arange(3.0))
    array([0., 0., 2.])
    """
    if context_of(dst, src, where) is None:
        return np.copyto(dst, src, casting=casting, where=where)
    return inplace.copyto(dst, src, casting=casting, where=where)


def put(a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    """numpy.put with static indices (`a.flat[ind] = v`, v repeated; mode raise/wrap/clip).

    >>> import numpy as np, jitkernel as jk
    >>> def f(x):
    ...     np.put(x, [0, 2], [10.0, 20.0])
    ...     return x.sum()
    >>> float(jk.jit(f)(np.ones(3)))
    31.0
    """
    if context_of(a, v) is None:
        return np.put(a, ind, v, mode=mode)
    return inplace.put(a, ind, v, mode=mode)
