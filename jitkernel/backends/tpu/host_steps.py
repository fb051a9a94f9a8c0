"""Host steps: an equation the TPU lowering has no rule for runs its NumPy reference
implementation on the host, called back from the XLA computation (`jax.pure_callback`). Its
answer is NumPy's by construction; the cost is a transfer of its operands and results.

An exception of the reference implementation (NumPy's IndexError, LinAlgError, ...) is caught
on the host and kept for the call; the step returns zeros and a failure flag, which becomes a
check site (backends/tpu/checks.py), so the exception is raised after the call, unchanged, if
no earlier check failed.
"""
from __future__ import annotations

from typing import Any

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import io_callback

from ...ir import primitives


class ExceptionSlots:
    """The exceptions host steps raised during the current call, by step number."""

    def __init__(self) -> None:
        self.raised: dict[int, BaseException] = {}

    def clear(self) -> None:
        self.raised.clear()


def lower_host_step(ctx: Any, eqn: Any, *inputs: Any) -> list:
    """The equation as a host callback; `ctx.checks` gets its failure flag as a site."""
    slots: ExceptionSlots = ctx.exception_slots
    step = len(ctx.host_steps)
    ctx.host_steps.append(eqn.prim)
    prim, params = eqn.prim, eqn.params
    avals = [o.aval for o in eqn.outputs]
    shapes = [tuple(int(d) for d in a.shape) for a in avals]
    carried = [_carrier(shape, np.dtype(a.dtype)) for shape, a in zip(shapes, avals)]

    def host(*arrays: np.ndarray) -> tuple:
        try:
            operands = [_from_host_carrier(np.asarray(a), d) for a, d in zip(arrays, in_dtypes)]
            outs = primitives.evaluate(prim, operands, params)
            results = tuple(_to_carrier(np.asarray(o, a.dtype).reshape(s)).reshape(c.shape)  # a 0-d result too
                            for o, a, s, c in zip(outs, avals, shapes, carried))
            return results + (np.bool_(False),)
        except Exception as e:  # noqa: BLE001  (raised on the host after the call: checks.py)
            slots.raised.setdefault(step, e.with_traceback(None))
            return tuple(np.zeros(c.shape, c.dtype) for c in carried) + (np.bool_(True),)

    in_dtypes = [np.dtype(v.aval.dtype) for v in eqn.inputs]
    # An effect (jk.debug.print) is an ordered io_callback: XLA neither drops it (its token is
    # unread) nor reorders it; a pure step may be scheduled freely.
    call = (partial(io_callback, ordered=True) if primitives.PRIMITIVES[prim].effect else jax.pure_callback)
    results = call(host, tuple(carried) + (jax.ShapeDtypeStruct((), np.bool_),),
                   *[_to_device_carrier(x, d) for x, d in zip(inputs, in_dtypes)])
    *outs, failed = results
    ctx.checks.site(failed, lambda: slots.raised[step])
    return [_from_carrier(o, np.dtype(a.dtype)) for o, a in zip(outs, avals)]


# A callback's operands and results pass through JAX's canonicalisation in a thread where
# 64-bit types may be off (on the TPU the callback thread is not the caller's, and x64 is a
# thread-local setting): a float64 value would cross as float32 (measured on the chip: a sort
# of float64 came back rounded to float32). 64-bit values therefore cross as their bytes
# (uint8, a trailing axis of 8) and are bit-cast on the other side.
_WIDE = frozenset(map(np.dtype, (np.float64, np.int64, np.uint64, np.complex128)))


def _carrier(shape: tuple, dtype: np.dtype) -> "jax.ShapeDtypeStruct":
    if dtype not in _WIDE:
        return jax.ShapeDtypeStruct(shape, dtype)
    parts = (2,) if dtype.kind == "c" else ()
    return jax.ShapeDtypeStruct(shape + parts + (8,), np.uint8)


def _to_carrier(x: np.ndarray) -> np.ndarray:
    if x.dtype not in _WIDE:
        return x
    x = np.ascontiguousarray(x)
    if x.dtype.kind == "c":
        x = x.view(np.float64).reshape(x.shape + (2,))
    return x.view(np.uint8).reshape(x.shape + (8,))


def _from_carrier(y: "jax.Array", dtype: np.dtype) -> "jax.Array":
    if dtype not in _WIDE:
        return y
    if dtype.kind == "c":
        parts = lax.bitcast_convert_type(y, jnp.float64)
        return lax.complex(parts[..., 0], parts[..., 1])
    return lax.bitcast_convert_type(y, dtype)


def _to_device_carrier(x: "jax.Array", dtype: np.dtype) -> "jax.Array":
    if dtype not in _WIDE:
        return x
    if dtype.kind == "c":
        x = jnp.stack([jnp.real(x), jnp.imag(x)], axis=-1)
    return lax.bitcast_convert_type(x, jnp.uint8)


def _from_host_carrier(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype not in _WIDE:
        return a
    a = np.ascontiguousarray(a)
    if dtype.kind == "c":
        return a.view(np.float64).reshape(a.shape[:-2] + (2,)).view(dtype).reshape(a.shape[:-2])
    return a.view(dtype).reshape(a.shape[:-1])
