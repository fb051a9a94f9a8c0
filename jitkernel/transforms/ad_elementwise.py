"""Differentiation rules: elementwise primitives, convert, reductions, movement.

Each primitive has a forward rule (tangents) and a reverse rule (cotangents); see ad.py for the
signatures and the complex convention.
"""
from __future__ import annotations

from ..trace.tracer import Tracer
from . import ops
from .ad import register_jvp, register_vjp


def _primal(prim: str, primals: list[Tracer], params: dict) -> list[Tracer]:
    return ops.bind(prim, *primals, **params)


# --- add / subtract / negative ----------------------------------------------------------

@register_jvp("add")
def _add_jvp(primals, tangents):
    return _primal("add", primals, {}), [ops.add_any(*tangents)]


@register_vjp("add")
def _add_vjp(cts, primals, outs):
    return [cts[0], cts[0]]


@register_jvp("subtract")
def _sub_jvp(primals, tangents):
    ta, tb = tangents
    return _primal("subtract", primals, {}), [ops.add_any(ta, None if tb is None else ops.neg(tb))]


@register_vjp("subtract")
def _sub_vjp(cts, primals, outs):
    return [cts[0], ops.neg(cts[0])]


@register_jvp("negative")
def _neg_jvp(primals, tangents):
    return _primal("negative", primals, {}), [ops.neg(tangents[0])]


@register_vjp("negative")
def _neg_vjp(cts, primals, outs):
    return [ops.neg(cts[0])]


# --- multiply ---------------------------------------------------------------------------

@register_jvp("multiply")
def _mul_jvp(primals, tangents):
    a, b = primals
    ta, tb = tangents
    return _primal("multiply", primals, {}), [ops.add_any(None if ta is None else ops.mul(ta, b),
                                                          None if tb is None else ops.mul(a, tb))]


@register_vjp("multiply")
def _mul_vjp(cts, primals, outs):
    a, b = primals
    return [ops.mul(cts[0], b), ops.mul(a, cts[0])]


# --- sin (an example of a unary rule: d sin = cos) -----------------------------------------

@register_jvp("sin")
def _sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _primal("sin", primals, {}), [ops.mul(t, ops.bind1("cos", x))]


@register_vjp("sin")
def _sin_vjp(cts, primals, outs):
    return [ops.mul(cts[0], ops.bind1("cos", primals[0]))]


# --- convert ----------------------------------------------------------------------------

@register_jvp("convert")
def _convert_jvp(primals, tangents, *, dtype):
    out = ops.bind("convert", *primals, dtype=dtype)
    return out, [ops.convert(tangents[0], dtype) if out[0].dtype.kind in "fc" else None]


@register_vjp("convert")
def _convert_vjp(cts, primals, outs, *, dtype):
    (x,) = primals
    return [ops.convert(cts[0], x.dtype) if x.dtype.kind in "fc" else None]


# --- broadcast_in_dim / reduce_sum ---------------------------------------------------------

@register_jvp("broadcast_in_dim")
def _bcast_jvp(primals, tangents, *, shape, broadcast_dimensions):
    p = dict(shape=shape, broadcast_dimensions=broadcast_dimensions)
    return _primal("broadcast_in_dim", primals, p), [ops.bind1("broadcast_in_dim", tangents[0], **p)]


@register_vjp("broadcast_in_dim")
def _bcast_vjp(cts, primals, outs, *, shape, broadcast_dimensions):
    return [ops.sum_to_aval(cts[0], primals[0].aval, broadcast_dimensions)]


@register_jvp("reduce_sum")
def _sum_jvp(primals, tangents, *, axes):
    return _primal("reduce_sum", primals, dict(axes=axes)), [ops.bind1("reduce_sum", tangents[0], axes=axes)]


@register_vjp("reduce_sum")
def _sum_vjp(cts, primals, outs, *, axes):
    x = primals[0]
    kept = tuple(d for d in range(x.ndim) if d not in axes)
    return [ops.broadcast_in_dim(cts[0], x.shape, kept)]


# --- reshape / transpose --------------------------------------------------------------------

@register_jvp("reshape")
def _reshape_jvp(primals, tangents, *, new_shape):
    return _primal("reshape", primals, dict(new_shape=new_shape)), [ops.bind1("reshape", tangents[0], new_shape=new_shape)]


@register_vjp("reshape")
def _reshape_vjp(cts, primals, outs, *, new_shape):
    return [ops.reshape(cts[0], primals[0].shape)]


@register_jvp("transpose")
def _transpose_jvp(primals, tangents, *, permutation):
    return (_primal("transpose", primals, dict(permutation=permutation)),
            [ops.bind1("transpose", tangents[0], permutation=permutation)])


@register_vjp("transpose")
def _transpose_vjp(cts, primals, outs, *, permutation):
    inverse = [0] * len(permutation)
    for i, p in enumerate(permutation):
        inverse[p] = i
    return [ops.transpose(cts[0], inverse)]
