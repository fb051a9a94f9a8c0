"""Primitives that the lowering of symbolic lengths emits (passes/lower_symbolic.py).

- `dot_sum(x; axes)`: the contraction of a dot product as a reduction, `sum(x, axes)`, whose
  order of additions is free. NumPy computes `a @ b` and `np.dot` of floats with BLAS, in an
  order it does not specify (vectorised, fused multiply-adds), unlike `np.sum`'s pairwise order.
  A dot over a slice of symbolic length is lowered to a multiply and a `dot_sum`, so that it
  fuses (a native loop needs no BLAS step); the CPU renderer may reassociate it
  (`Store.block == "free"`). The reference implementation is NumPy's sum; results agree within
  rounding, as two BLAS builds do.
- `pad_fill(mask, x, fill)`: `select(mask, x, fill)`, written where the padding of a value of
  symbolic length is replaced by a reduction's identity. The same values; the name tells
  fusion/extents.py that the masked points are padding, so a pairwise sum may stop at the
  length (NumPy's order for `x[:i].sum()`), which a user's `np.where(mask, x, 0).sum()` may not.
- `where_valid(mask, x)`: `x` where `mask` holds; anything elsewhere (the padding of a value of
  symbolic length, which nothing reads). Compiled code computes `x` everywhere, or skips the
  points outside the mask when it recognises a loop bound in it (fusion/extents.py); the
  reference implementation puts 0 there.
"""
from __future__ import annotations

import numpy as np

from .primitives import Primitive, _reduce_impl, _reduce_rule, register
from .types import AType

register(Primitive("dot_sum", "reduce", _reduce_rule("reduce_sum"), _reduce_impl("reduce_sum")))


def _where_valid_rule(in_avals: list[AType]) -> list[AType]:
    mask, x = in_avals
    if mask.dtype != np.bool_ or mask.shape != x.shape:
        raise TypeError(f"where_valid needs a bool mask of the value's shape, got {mask} and {x}")
    return [x]


def _where_valid_impl(mask: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
    return [np.asarray(np.where(mask, x, np.zeros((), x.dtype)))]


def _pad_fill_rule(in_avals: list[AType]) -> list[AType]:
    mask, x, fill = in_avals
    if mask.dtype != np.bool_ or not (mask.shape == x.shape == fill.shape) or x.dtype != fill.dtype:
        raise TypeError(f"pad_fill needs a bool mask and two operands of one type, got {mask}, {x}, {fill}")
    return [x]


register(Primitive("pad_fill", "elementwise", _pad_fill_rule,
                   lambda mask, x, fill: [np.asarray(np.where(mask, x, fill))]))
register(Primitive("where_valid", "elementwise", _where_valid_rule, _where_valid_impl))
