"""Python control flow as written: a jitted function's AST is converted before tracing so that
`for i in range(...)`, `while` and `if` on traced values (and `x if c else y`, `and`, `or`,
`not`, `max`, `min`) become `jk.lax` control flow, as TensorFlow's AutoGraph and Numba do.
With concrete values the converted code runs exactly as the original Python.

>>> import numpy as np, jitkernel as jk
>>> @jk.jit
... def count_positive(x):
...     n = 0
...     for i in range(x.shape[0]):
...         if x[i] > 0:
...             n += 1
...     return n
>>> int(count_positive(np.array([1.0, -2.0, 3.0, 4.0, -5.0, 6.0])))
4

`jk.jit(f, autograph=False)` traces the function as written (Python control flow then runs
at trace time, on concrete values only). docs/numpy-support.md, "Python control flow".
"""
from __future__ import annotations

from .convert import convert, converted_source
from .runtime import UNROLL_LIMIT, Undefined
from ..entry import register_converter

__all__ = ["convert", "converted_source", "UNROLL_LIMIT", "Undefined"]

# transformations (jk.grad, jk.vmap, ...) convert the functions they trace through this
register_converter(convert)
