"""Batching rules: elementwise primitives, convert, reductions, movement."""
from __future__ import annotations

from ..ir.primitives import PRIMITIVES
from . import ops
from .batching import broadcast_batch, register_batch


def _elementwise(prim: str):
    def rule(args, batched, size, **params):
        ins = [a if b else broadcast_batch(a, size) for a, b in zip(args, batched)]
        outs = ops.bind(prim, *ins, **params)
        return outs, [True] * len(outs)
    return rule


for _name, _prim in PRIMITIVES.items():
    if _prim.kind == "elementwise" and _name not in ("pad_fill", "where_valid"):
        register_batch(_name)(_elementwise(_name))


@register_batch("broadcast_in_dim")
def _bcast(args, batched, size, *, shape, broadcast_dimensions):
    (x,) = args
    out = ops.bind1("broadcast_in_dim", x, shape=(size,) + tuple(shape),
                    broadcast_dimensions=(0,) + tuple(d + 1 for d in broadcast_dimensions))
    return [out], [True]


def _reduce_rule(prim: str):
    def rule(args, batched, size, *, axes):
        return [ops.bind1(prim, args[0], axes=tuple(a + 1 for a in axes))], [True]
    return rule


for _name in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or"):
    register_batch(_name)(_reduce_rule(_name))


@register_batch("reshape")
def _reshape(args, batched, size, *, new_shape):
    return [ops.bind1("reshape", args[0], new_shape=(size,) + tuple(new_shape))], [True]


@register_batch("transpose")
def _transpose(args, batched, size, *, permutation):
    return [ops.bind1("transpose", args[0], permutation=(0,) + tuple(p + 1 for p in permutation))], [True]
