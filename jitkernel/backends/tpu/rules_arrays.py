"""Lowering of creation, movement, structural, reduction and dot primitives to `jax.lax`.

Reductions accumulate as NumPy does where the order is part of the answer (float16 sums and
products in float32, ir/semantics.accumulator_dtype; integers wrap around); float sums are
XLA's tree order, within rounding of NumPy's pairwise order. `dot_general` runs on the MXU at
`precision=HIGHEST` (float32 products as float32, not bfloat16 passes), so results match NumPy
within float32 rounding.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from ...ir import semantics
from .host_steps import lower_host_step
from .rules import lax_rule, out_dtype


@lax_rule("iota")
def _iota(ctx, eqn):
    p = eqn.params
    return [lax.broadcasted_iota(p["dtype"], tuple(p["shape"]), p["dimension"])]


@lax_rule("broadcast_in_dim")
def _broadcast(ctx, eqn, x):
    p = eqn.params
    return [lax.broadcast_in_dim(x, tuple(p["shape"]), tuple(p["broadcast_dimensions"]))]


@lax_rule("reshape")
def _reshape(ctx, eqn, x):
    return [jnp.reshape(x, tuple(eqn.params["new_shape"]))]


@lax_rule("transpose")
def _transpose(ctx, eqn, x):
    return [jnp.transpose(x, tuple(eqn.params["permutation"]))]


def region(starts, steps, shape) -> tuple[slice, ...]:
    """Python slices for out[i] = x[start + step * i] (negative steps included)."""
    index = []
    for s, st, n in zip(starts, steps, shape):
        if n == 0:
            index.append(slice(0, 0))
            continue
        stop = s + st * (n - 1) + (1 if st > 0 else -1)
        index.append(slice(s, stop if stop >= 0 else None, st))
    return tuple(index)


@lax_rule("slice")
def _slice(ctx, eqn, x):
    p = eqn.params
    return [x[region(p["starts"], p["steps"], p["shape"])]]


@lax_rule("concatenate")
def _concatenate(ctx, eqn, *xs):
    return [jnp.concatenate(xs, axis=eqn.params["axis"])]


@lax_rule("update_slice")
def _update_slice(ctx, eqn, base, value):
    p = eqn.params
    return [base.at[region(p["starts"], p["steps"], value.shape)].set(value)]


_REDUCE = {"reduce_sum": "sum", "dot_sum": "sum", "reduce_prod": "prod", "reduce_max": "max", "reduce_min": "min",
           "reduce_and": "and", "reduce_or": "or"}


@lax_rule(*_REDUCE)
def _reduce(ctx, eqn, x):
    kind, axes = _REDUCE[eqn.prim], tuple(eqn.params["axes"])
    dt = np.dtype(x.dtype)
    if not axes:  # NumPy's reduction over no axes returns the operand, -0.0 included
        return [x]
    if kind in ("sum", "prod"):
        acc = semantics.accumulator_dtype(kind, dt)
        fn = jnp.sum if kind == "sum" else jnp.prod
        return [fn(x.astype(acc), axis=axes).astype(dt)]
    if kind == "and":
        return [jnp.all(x, axis=axes)]
    if kind == "or":
        return [jnp.any(x, axis=axes)]
    if dt.kind in "fc":  # NaN propagates, as NumPy's maximum.reduce
        return [jnp.max(x, axis=axes) if kind == "max" else jnp.min(x, axis=axes)]
    return [lax.reduce_max(x, axes) if kind == "max" else lax.reduce_min(x, axes)]


@lax_rule("argmax", "argmin")
def _arg(ctx, eqn, x):
    axis = eqn.params["axis"]
    fn = jnp.argmax if eqn.prim == "argmax" else jnp.argmin
    found = fn(x, axis=axis)
    if x.dtype.kind in "fc":
        # NumPy: the first NaN wins. jnp's comparator keeps whichever NaN is on its left, which is
        # the first only when the reduction runs in order: the chip reduces in a tree and returned
        # the last of two NaNs. Which NaN is first is an argmax over a bool mask (ties there break
        # by index in any order).
        nan = jnp.isnan(x)
        found = jnp.where(jnp.any(nan, axis=axis), jnp.argmax(nan, axis=axis), found)
    return [found.astype(out_dtype(eqn))]


@lax_rule("dot_general")
def _dot(ctx, eqn, lhs, rhs):
    p = eqn.params
    (lc, rc), (lb, rb) = p["contracting"], p["batch"]
    dt = out_dtype(eqn)
    if dt.kind in "iu" and dt.itemsize == 8:
        # The chip's XLA has no 64-bit integer product (UNIMPLEMENTED on a v5e, chip_limits.py):
        # NumPy's own product on the host, exact with NumPy's wrap-around, on tpu-interpret too
        # so that CI runs the path the chip takes.
        return lower_host_step(ctx, eqn, lhs, rhs)
    if dt == np.bool_:  # NumPy's bool matmul is "any(a and b)"
        prod = lax.dot_general(lhs.astype(jnp.int32), rhs.astype(jnp.int32), ((lc, rc), (lb, rb)))
        return [prod != 0]
    return [lax.dot_general(lhs, rhs, ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))),
                            precision=lax.Precision.HIGHEST, preferred_element_type=dt)]
