"""The standard's elementwise functions: jitkernel.numpy's ufuncs under the standard's names
(NumPy 2 already follows the standard's type promotion, Python scalars included), plus `clip`
and `round` with the standard's signatures.

>>> import numpy as np
>>> clip(np.array([-2, 0, 5]), min=-1, max=3)
array([-1,  0,  3])
"""
from __future__ import annotations

from typing import Any

from .. import numpy as jnp

_SAME_AS_NUMPY = (
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
    "bitwise_left_shift", "bitwise_invert", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil",
    "conj", "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide",
    "greater", "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan", "less", "less_equal", "log",
    "log1p", "log2", "log10", "logaddexp", "logical_and", "logical_not", "logical_or", "logical_xor",
    "maximum", "minimum", "multiply", "negative", "nextafter", "not_equal", "positive", "pow", "real",
    "reciprocal", "remainder", "sign", "signbit", "sin", "sinh", "square", "sqrt", "subtract", "tan",
    "tanh", "trunc")

FUNCTIONS: dict[str, Any] = {name: getattr(jnp, name) for name in _SAME_AS_NUMPY}


def clip(x: Any, /, min: Any = None, max: Any = None) -> Any:  # noqa: A002 - the standard's names
    """`x` limited to [min, max]; either bound may be None, an array or a Python scalar. The
    result keeps `x`'s dtype (a Python scalar bound is cast to it, as the standard requires)."""
    if min is None and max is None:
        return jnp.asarray(x).copy() if hasattr(x, "copy") else jnp.asarray(x)
    out = jnp.clip(x, min, max)
    return out if out.dtype == x.dtype else jnp.astype(out, x.dtype)


def round(x: Any, /) -> Any:  # noqa: A001 - the standard's name
    """Round half to even (no `decimals`: the standard's round is to integers)."""
    return jnp.round(x)


FUNCTIONS.update(clip=clip, round=round)
