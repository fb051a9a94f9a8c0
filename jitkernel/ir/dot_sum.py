"""`dot_sum`: the contraction of a dot product as a reduction, `sum(x, axes)`, whose order of
additions is free.

NumPy computes `a @ b` and `np.dot` of floats with BLAS, in an order it does not specify
(vectorised, fused multiply-adds), unlike `np.sum`'s pairwise order. When a dot is written as a
multiply and a sum (passes/lower_symbolic.py does so for a dot over a slice of symbolic length,
so that it fuses and a native loop needs no BLAS step), its sum is a `dot_sum`: the CPU renderer
may reassociate it (vectorised accumulators, `Store.block == "free"`). The reference
implementation is NumPy's sum; results agree within rounding, as two BLAS builds do.
"""
from __future__ import annotations

from .primitives import Primitive, _reduce_impl, _reduce_rule, register

register(Primitive("dot_sum", "reduce", _reduce_rule("reduce_sum"), _reduce_impl("reduce_sum")))
