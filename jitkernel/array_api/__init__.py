"""`jitkernel.array_api`: the Python array API standard (2024.12) namespace for jitted code.

Inside `jk.jit`, `x.__array_namespace__()` of a traced array returns this module, so code written
against the standard (array-api-compat users, SciPy's and scikit-learn's array-API paths) runs
unchanged and compiles. Outside jit, called on NumPy arrays, each function runs NumPy (the same
values NumPy 2's own namespace gives). docs/array-api.md says where the standard and NumPy differ.

>>> import numpy as np, jitkernel as jk
>>> @jk.jit
... def softmax(x):
...     xp = x.__array_namespace__()
...     e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
...     return e / xp.sum(e, axis=-1, keepdims=True)
>>> softmax(np.zeros((1, 4), np.float32)).tolist()
[[0.25, 0.25, 0.25, 0.25]]
"""
from __future__ import annotations

import math as _math
import sys as _sys

from . import fft as fft, linalg as linalg
from . import _creation, _dtypes, _elementwise, _linear_algebra, _manipulation, _searching, _sets, _statistical
from ._info import __array_namespace_info__ as __array_namespace_info__
from ._tracer_methods import attach as _attach

__array_api_version__ = "2024.12"

e, pi, inf, nan = _math.e, _math.pi, _math.inf, _math.nan
newaxis = None

globals().update(_dtypes.DTYPES)
globals().update(_dtypes.FUNCTIONS)
for _module in (_creation, _elementwise, _linear_algebra, _manipulation, _searching, _sets, _statistical):
    globals().update(_module.FUNCTIONS)

__all__ = sorted(
    ["__array_api_version__", "__array_namespace_info__", "fft", "linalg", "e", "pi", "inf", "nan", "newaxis",
     *_dtypes.DTYPES, *_dtypes.FUNCTIONS]
    + [n for m in (_creation, _elementwise, _linear_algebra, _manipulation, _searching, _sets, _statistical)
       for n in m.FUNCTIONS])

_attach(_sys.modules[__name__])
