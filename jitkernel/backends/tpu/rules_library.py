"""Lowering of the frequent library steps to `jax.lax`, so that a program using them stays on the
chip: sorting, `take` and `take_along_axis` with NumPy's index rules, running sums and products.

A library step whose NumPy answer XLA cannot give exactly stays a host step (host_steps.py):
`argsort` of an unstable kind (NumPy's introsort orders ties its own way; the stable kinds are
lowered), accumulations other than add / multiply / maximum / minimum.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from .host_steps import lower_host_step
from .rules import lax_rule, out_dtype


@lax_rule("sort")
def _sort(ctx, eqn, a):
    # The sorted values do not depend on stability; NaN sorts last, as NumPy's.
    return [jnp.sort(a, axis=eqn.params["axis"])]


@lax_rule("argsort")
def _argsort(ctx, eqn, a):
    if eqn.params["kind"] not in ("stable", "mergesort"):
        return lower_host_step(ctx, eqn, a)
    return [jnp.argsort(a, axis=eqn.params["axis"], stable=True).astype(out_dtype(eqn))]


def _checked_indices(ctx, idx, n: int, axis: int):
    """NumPy's `mode="raise"` indices into an axis of length n: negative ones wrap, the first
    index outside [-n, n) (in C order) is NumPy's IndexError naming it."""
    idx = idx.astype(jnp.int64)
    bad = (idx < -n) | (idx >= n)
    first = jnp.argmax(bad.reshape(-1)) if idx.size else 0
    ctx.checks.index(jnp.any(bad), idx.reshape(-1)[first] if idx.size else 0, axis, n)
    return jnp.where(idx < 0, idx + n, idx)


@lax_rule("take")
def _take(ctx, eqn, a, idx):
    axis, mode = eqn.params["axis"], eqn.params["mode"]
    if axis is None:
        a, axis = a.reshape(-1), 0
    n = a.shape[axis]
    if n == 0:
        return lower_host_step(ctx, eqn, a, idx)
    if mode == "raise":
        safe = _checked_indices(ctx, idx, n, axis)
        safe = jnp.clip(safe, 0, n - 1)  # a failed call's garbage stays in bounds
    elif mode == "wrap":
        safe = jnp.mod(idx.astype(jnp.int64), n)
    else:  # clip
        safe = jnp.clip(idx.astype(jnp.int64), 0, n - 1)
    return [jnp.take(a, safe, axis=axis)]


@lax_rule("take_along_axis")
def _take_along_axis(ctx, eqn, arr, idx):
    axis = eqn.params["axis"]
    if axis is None:
        arr, axis = arr.reshape(-1), 0
    n = arr.shape[axis]
    if n == 0:
        return lower_host_step(ctx, eqn, arr, idx)
    safe = jnp.clip(_checked_indices(ctx, idx, n, axis), 0, n - 1)
    return [jnp.take_along_axis(arr, safe, axis=axis)]


_ACCUMULATE = {"add": jnp.cumsum, "multiply": jnp.cumprod}
_RUNNING = {"maximum": lax.cummax, "minimum": lax.cummin}


@lax_rule("accumulate")
def _accumulate(ctx, eqn, a):
    ufunc, axis, dtype = eqn.params["ufunc"], eqn.params["axis"], np.dtype(eqn.params["dtype"])
    if ufunc in _ACCUMULATE and dtype.kind in "iufb":
        return [_ACCUMULATE[ufunc](a.astype(dtype), axis=axis).astype(dtype)]
    if ufunc in _RUNNING and dtype.kind in "iu" and np.dtype(a.dtype) == dtype:
        return [_RUNNING[ufunc](a, axis=axis)]
    return lower_host_step(ctx, eqn, a)
