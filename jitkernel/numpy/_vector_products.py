"""The vector products NumPy 2 added as generalized ufuncs: vecdot, matvec and vecmat.

Each is one `dot_general` (the step matmul uses: a BLAS call on the CPU, NumPy's integer wrap,
bool as or-of-ands), after the core axes are moved last and the batch axes broadcast:

- vecdot  (n),(n)->()     sum(conj(x1) * x2) over the core axis
- matvec  (m,n),(n)->(m)  no conjugate
- vecmat  (n),(n,m)->(m)  conj(x1) against the rows' axis of x2

The loop dtype is NumPy's (`resolve_dtypes` of the gufunc: ints stay ints, bool stays bool).
`axes=` and `axis=` move core axes as NumPy does; `keepdims=` works for vecdot. They are first
checked by NumPy itself on stand-ins of the operands' ranks (one-element arrays), so a malformed
`axes` raises NumPy's own error; `out=` goes through the in-place machinery (numpy/_dispatch.py),
and the other ufunc keywords (dtype=, casting=, signature=, ...) are refused by name.

>>> import numpy as np, jitkernel as jk
>>> jk.jit(np.matvec)(np.eye(2), np.array([3.0, 4.0]))
array([3., 4.])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..trace.operands import WEAK_DEFAULT, broadcast_shapes, broadcast_to_shape, context_of, dtype_key, lift
from ..trace.tracer import Tracer
from ._shape import expand_dims, moveaxis
from ..trace.operands import unsupported_kwargs
from ._ufuncs import apply_ufunc

__all__ = ["vecdot", "matvec", "vecmat"]

# name -> (core ranks of the inputs, core rank of the output, gufunc signature as NumPy prints it)
_CORES = {"vecdot": ((1, 1), 0), "matvec": ((2, 1), 1), "vecmat": ((1, 2), 1)}


def _check_keywords(name: str, kwargs: dict) -> None:
    unsupported_kwargs(name, kwargs, out=None, casting="same_kind", order="K", dtype=None, subok=True)


def _loop_dtype(uf: np.ufunc, a: Any, b: Any) -> np.dtype:
    keys = [dtype_key(x) for x in (a, b)]
    keys = [WEAK_DEFAULT[k] if isinstance(k, type) else k for k in keys]
    return uf.resolve_dtypes((keys[0], keys[1], None))[2]


def _check_ranks(uf: np.ufunc, ts: list[Tracer], cores: tuple[int, int]) -> None:
    """NumPy's error for an operand with fewer dimensions than its core."""
    for i, (t, k) in enumerate(zip(ts, cores)):
        if t.ndim < k:
            raise ValueError(f"{uf.__name__}: Input operand {i} does not have enough dimensions (has {t.ndim}, "
                             f"gufunc core with signature {uf.signature} requires {k})")


def _normalized_axes(uf: np.ufunc, ts: list[Tracer], axes: Any, axis: Any, keepdims: Any) -> tuple[list, int | None]:
    """(per input, the tuple of its core axes, non-negative; the output's core axis or None for
    the default). NumPy validates the request first, on one-element stand-ins of the operands'
    ranks: its own TypeError / ValueError / AxisError for a malformed axes, axis or keepdims."""
    stand_ins = [np.zeros((1,) * t.ndim, dtype=np.float64) for t in ts]
    uf(*stand_ins, **_given(axes, axis, keepdims))
    cores, out_core = _CORES[uf.__name__]
    if axis is not None:
        axes = [axis] * len(ts) + ([axis] if _keeps(keepdims) else [])
    if axes is None:
        axes = [tuple(range(-k, 0)) for k in cores]
    per_input = []
    for t, k, entry in zip(ts, cores, axes):
        entry = (entry,) if k == 1 and not isinstance(entry, (tuple, list)) else tuple(entry)
        per_input.append(tuple(int(a) % t.ndim for a in entry))
    out_entry = None
    if len(axes) > len(ts):
        entry = axes[len(ts)]
        out_entry = tuple(entry) if isinstance(entry, (tuple, list)) else (entry,)
    return per_input, (out_entry[0] if out_entry else None)


def _keeps(keepdims: Any) -> bool:
    return keepdims is not np._NoValue and bool(keepdims)


def _given(axes: Any, axis: Any, keepdims: Any) -> dict:
    """The keywords the caller passed (NumPy refuses keepdims=False for matvec, too)."""
    return {k: v for k, v in (("axes", axes), ("axis", axis), ("keepdims", keepdims))
            if v is not None and v is not np._NoValue}


def _core_last(t: Tracer, core: tuple[int, ...]) -> Tracer:
    return moveaxis(t, core, tuple(range(-len(core), 0))) if core else t


def _check_core_sizes(uf: np.ufunc, x: Tracer, y: Tracer, xn: int, yn: int) -> None:
    """NumPy's error when the shared dimension n differs (x's axis xn, y's axis yn)."""
    if x.shape[xn] != y.shape[yn]:
        raise ValueError(f"{uf.__name__}: Input operand 1 has a mismatch in its core dimension 0, with "
                         f"gufunc signature {uf.signature} (size {y.shape[yn]} is different from {x.shape[xn]})")


def _conj(t: Tracer) -> Tracer:
    return apply_ufunc(np.conjugate, t) if t.dtype.kind == "c" else t


def _product(uf: np.ufunc, x1: Any, x2: Any, axes: Any, axis: Any, keepdims: Any) -> Tracer:
    ctx = context_of(x1, x2)
    dt = _loop_dtype(uf, x1, x2)
    x, y = lift(ctx, x1, dt), lift(ctx, x2, dt)
    x, y = lift(ctx, x, dt), lift(ctx, y, dt)  # array operands (never weak)
    name = uf.__name__
    cores, out_core = _CORES[name]
    _check_ranks(uf, [x, y], cores)
    per_input, out_axis = _normalized_axes(uf, [x, y], axes, axis, keepdims)
    x, y = _core_last(x, per_input[0]), _core_last(y, per_input[1])
    if name == "vecmat":
        _check_core_sizes(uf, x, y, -1, -2)
    else:
        _check_core_sizes(uf, x, y, -1, -1)
    xc, yc = cores
    batch = broadcast_shapes(x.shape[:x.ndim - xc], y.shape[:y.ndim - yc])
    x = broadcast_to_shape(ctx, x, batch + x.shape[x.ndim - xc:])
    y = broadcast_to_shape(ctx, y, batch + y.shape[y.ndim - yc:])
    if name in ("vecdot", "vecmat"):
        x = _conj(x)
    nb = len(batch)
    # vecdot: x[b, n] . y[b, n]; matvec: x[b, m, n] . y[b, n]; vecmat: x[b, n] . y[b, n, m]
    contract = {"vecdot": (nb, nb), "matvec": (nb + 1, nb), "vecmat": (nb, nb)}[name]
    out = ctx.bind1("dot_general", x, y, contracting=((contract[0],), (contract[1],)),
                    batch=(tuple(range(nb)), tuple(range(nb))))
    if _keeps(keepdims):
        out = expand_dims(out, -1 if out_axis is None else out_axis)
    elif out_core and out_axis is not None:
        out = moveaxis(out, -1, out_axis)
    out.scalar = False
    return out


def _gufunc(uf: np.ufunc):
    name = uf.__name__

    def fn(x1: Any, x2: Any, /, *, axes: Any = None, axis: Any = None, keepdims: Any = np._NoValue, **kwargs: Any) -> Any:
        _check_keywords(name, kwargs)
        if context_of(x1, x2) is None:
            return uf(x1, x2, **_given(axes, axis, keepdims))
        return _product(uf, x1, x2, axes, axis, keepdims)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"numpy.{name} {uf.signature}: NumPy's loop dtype, broadcasting of the batch axes, "
                  "axes=, axis= and (vecdot) keepdims=; one dot_general.")
    return fn


vecdot = _gufunc(np.vecdot)
matvec = _gufunc(np.matvec)
vecmat = _gufunc(np.vecmat)
