"""Indices that are traced scalars (a loop counter, a value read from an array): `a[i]`,
`a[i, i]`, `a[i:i + k]`, with NumPy's rules applied at run time (negative indices wrap, slice
bounds clamp, an out-of-bounds integer raises IndexError).

`dynamic_getitem(x, index)` is `x[index]`; `dynamic_update(x, index, value)` is the functional
form of `x[index] = value` (returns the new array; trace/inplace.py writes it back into `x`'s
base). `index` is the tuple the user wrote, with at least one traced scalar and no arrays.

A slice with traced bounds and a step other than 1 (`x[i*i::i]`) is _strided_dynamic.py's: its
`traced_getitem` / `traced_update` come first and call these for every other index.
The others become the primitives of ir/dynamic_slice.py (one start per dimension, static sizes),
whose implementation applies NumPy's rules to the run-time values. A slice whose length would
depend on a traced value is supported only when the trace proves the length constant: its
bounds are `v + a` and `v + b` for the same traced `v` whose range is known (a jk.lax.fori_loop
index with static bounds) and both stay within `[0, n]`, so NumPy never clamps them. Otherwise
it raises UnsupportedOperationError naming the line (symbolic lengths: docs/architecture.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import Var
from ..ir.symdim import SymDim
from ..trace.context import current_context, user_frame_location
from ..trace.tracer import Tracer
from ..trace.numpy_api import NUMPY
from ..trace.operands import expand_index, broadcast_to_shape, lift
from ._datadep import window as data_dependent_window  # CSR: data[ptr[i]:ptr[i + 1]]
from ._shape import reshape, astype

__all__: list[str] = []


@dataclass
class _Axis:
    """What the index does to one axis of x: a window [start, start + size), dropped when the
    index was an integer. `start` is an int or a 0-d integer Tracer."""

    start: Any
    size: Any  # an int, or a SymDim (a length that depends on a loop index)
    drop: bool
    layout: Any = None  # for a symbolic size: "start" or ("end", stop) (passes/lower_symbolic.py)


def _is_static_int(ix: Any) -> bool:
    return isinstance(ix, (int, np.integer)) and not isinstance(ix, (bool, np.bool_))


def _is_traced_int(ix: Any) -> bool:
    return isinstance(ix, Tracer) and ix.ndim == 0 and ix.dtype.kind in "iu"


def _context(x: Any) -> Any:
    ctx = current_context()
    return ctx if ctx is not None else x._ctx


# ----------------------------------------------------------------------------- affine forms


def _constant_int(ctx: Any, v: Var) -> int | None:
    for cv, c in zip(ctx.constvars, ctx.consts):
        if cv is v:
            return int(c) if c.ndim == 0 and c.dtype.kind in "iu" else None
    return None


def _owner(ctx: Any, v: Var) -> Any:
    """The trace (this one or an enclosing one) in which `v` is defined."""
    while getattr(ctx, "parent", None) is not None and v not in ctx._local:
        ctx = ctx.parent
    return ctx


def _producer(ctx: Any, v: Var) -> Any:
    producer = getattr(ctx, "producer", None)
    if producer is not None:
        return producer.get(v)
    for eqn in reversed(ctx.eqns):  # the outermost trace keeps no producer map
        if v in eqn.outputs:
            return eqn
    return None


def linear_form(ctx: Any, v: Var, depth: int = 0) -> tuple[dict, int]:
    """`v` as `const + sum(coef * base)`: ({base: (context of base, coef)}, const). Follows
    `+`, `-`, negation, multiplication by a constant and widening integer casts, through
    captures into enclosing traces; any other value is a base of its own."""
    c = _constant_int(ctx, v)
    if c is not None:
        return {}, c
    if _known_range(ctx, v) is not None or depth > 64:
        return {v: (ctx, 1)}, 0
    outer = ctx.outer_var(v) if hasattr(ctx, "outer_var") else None
    if outer is not None:
        return linear_form(ctx.parent, outer, depth + 1)
    eqn = _producer(ctx, v)
    if eqn is None or v.aval.shape != () or v.aval.dtype.kind not in "iu":
        return {v: (ctx, 1)}, 0
    if eqn.prim == "convert" and eqn.inputs[0].aval.dtype.kind in "iu" \
            and np.can_cast(eqn.inputs[0].aval.dtype, v.aval.dtype, "safe"):
        return linear_form(ctx, eqn.inputs[0], depth + 1)
    if eqn.prim in ("add", "subtract"):
        (ta, ca), (tb, cb) = (linear_form(ctx, x, depth + 1) for x in eqn.inputs)
        sign = 1 if eqn.prim == "add" else -1
        return _combine(ta, tb, sign), ca + sign * cb
    if eqn.prim == "negative":
        t, c = linear_form(ctx, eqn.inputs[0], depth + 1)
        return _combine({}, t, -1), -c
    if eqn.prim == "multiply":
        (ta, ca), (tb, cb) = (linear_form(ctx, x, depth + 1) for x in eqn.inputs)
        if not tb:
            return _combine({}, ta, cb), ca * cb
        if not ta:
            return _combine({}, tb, ca), ca * cb
    return {v: (ctx, 1)}, 0


def _known_range(ctx: Any, v: Var) -> tuple[int, int] | None:
    r = getattr(ctx, "ranges", {}).get(v)
    return r if r is not None else getattr(ctx, "loose_ranges", {}).get(v)


def _combine(a: dict, b: dict, sign: int) -> dict:
    out = dict(a)
    for base, (bctx, coef) in b.items():
        prev = out.get(base, (bctx, 0))[1]
        out[base] = (bctx, prev + sign * coef)
    return {k: v for k, v in out.items() if v[1]}


def _form_range(terms: dict, const: int) -> tuple[int, int] | None:
    lo = hi = const
    for base, (bctx, coef) in terms.items():
        r = _known_range(bctx, base)
        if r is None:
            return None
        lo, hi = lo + min(coef * r[0], coef * r[1]), hi + max(coef * r[0], coef * r[1])
    return lo, hi


def value_range(t: Tracer) -> tuple[int, int] | None:
    """The values a traced integer may take, when the trace knows them."""
    return _form_range(*linear_form(_owner(_context(t), t.ir_var), t.ir_var))


# ----------------------------------------------------------------------------- parsing


def _unsupported_length(x: Any, ix: slice, why: str) -> UnsupportedOperationError:
    return UnsupportedOperationError(
        f"the slice {_slice_text(ix)} of an array of shape {x.shape} has a length that depends on a traced "
        f"value ({why}), at {user_frame_location()}. Such a length is supported when the slice's bounds are "
        "affine forms (c + k * i) of loop indices with static bounds (a jk.lax.fori_loop or a Python for "
        "loop over range) and captured scalars, that stay within the axis; otherwise use a static slice "
        "and np.where, or a static argument.")


def _slice_text(ix: slice) -> str:
    def part(p: Any) -> str:
        return "" if p is None else ("<traced>" if isinstance(p, Tracer) else str(p))
    return f"[{part(ix.start)}:{part(ix.stop)}" + (f":{part(ix.step)}]" if ix.step is not None else "]")


def _dynamic_slice_axis(ctx: Any, x: Any, ix: slice, n: int) -> _Axis:
    if ix.step is not None and not (_is_static_int(ix.step) and int(ix.step) == 1):
        raise UnsupportedOperationError(
            f"a slice with traced bounds and a step other than 1 ({_slice_text(ix)}) is not supported yet, at "
            f"{user_frame_location()}")
    start, stop = _bound_linear(ctx, ix.start, n, 0), _bound_linear(ctx, ix.stop, n, n)
    ranges = [_form_range(*form) for form in (start, stop)]
    if any(r is None for r in ranges):
        raise _unsupported_length(x, ix, "the range of a traced bound is not known")
    if any(lo < 0 or hi > n for lo, hi in ranges):
        raise _unsupported_length(x, ix, "a bound may fall outside the axis, where NumPy clamps it")
    (s_lo, s_hi), (e_lo, e_hi) = ranges
    terms, const = _combine(stop[0], start[0], -1), stop[1] - start[1]
    if not terms or (s_lo == s_hi and e_lo == e_hi):  # a length known at trace time
        length = max(const if terms == {} else e_lo - s_lo, 0)
        if length == 0:
            return _Axis(0, 0, False)
        return _Axis(s_lo if s_lo == s_hi else ix.start, length, False)
    return _symbolic_axis(ctx, x, ix, n, terms, const, (s_lo, s_hi), (e_lo, e_hi))


def _bound_linear(ctx: Any, p: Any, n: int, default: int) -> tuple[dict, int]:
    """A slice bound as a linear form; a static one normalised as NumPy does (wrap, clamp)."""
    if p is None:
        return {}, default
    if _is_static_int(p):
        s = int(p)
        s = s + n if s < 0 else s
        return {}, min(max(s, 0), n)
    return linear_form(_owner(ctx, p.ir_var), p.ir_var)


def _symbolic_axis(ctx: Any, x: Any, ix: slice, n: int, terms: dict, const: int,
                   start_range: tuple[int, int], stop_range: tuple[int, int]) -> _Axis:
    """A window whose length `stop - start` depends on traced values: a SymDim over the inputs
    of this trace (captured when they belong to an enclosing one), with its proved range. A
    negative value at run time is NumPy's empty slice (the lowering's mask is then all false)."""
    lo, hi = _form_range(terms, const)
    if hi <= 0:
        return _Axis(0, 0, False)
    local = {}
    for base, (bctx, coef) in terms.items():
        v = base if bctx is ctx else ctx.localize(Tracer(bctx, base)).ir_var
        if v.aval.shape != () or v.aval.dtype.kind not in "iu" or (v not in ctx.invars and ctx.outer_var(v) is None):
            raise _unsupported_length(x, ix, "a bound is not an affine form of the loop index and captured scalars")
        local[v] = local.get(v, 0) + coef
    length = SymDim.make(const, local, max(lo, 0), hi)
    if start_range[1] + hi <= n:
        layout = "start"  # the padded window [start, start + hi) stays inside the axis
    elif stop_range[0] == stop_range[1]:
        layout = ("end", stop_range[0])  # x[s:c]: the padded window is [c - hi, c)
    else:  # both bounds traced: the padded window starts at min(start, n - hi)
        layout = ("clamp", _start_key(ctx, ix.start))
    start = ix.start if isinstance(ix.start, Tracer) else (0 if ix.start is None else int(ix.start))
    if not isinstance(start, Tracer):
        start = start + n if start < 0 else start
    return _Axis(start, length, False, layout)


def _start_key(ctx: Any, start: Tracer) -> tuple:
    """The start's linear form over this trace's variables: windows with equal keys share their
    clamped start and offset in the lowering."""
    terms, const = linear_form(_owner(ctx, start.ir_var), start.ir_var)
    local = []
    for base, (bctx, coef) in terms.items():
        v = base if bctx is ctx else ctx.localize(Tracer(bctx, base)).ir_var
        local.append((v, coef))
    return const, tuple(sorted(local, key=lambda t: t[0].id))


def _parse(x: Any, index: tuple, allow_none: bool = True) -> tuple[list[_Axis], list[int]]:
    """Per axis of x, its window; and where the index's None entries put new axes (positions in
    the result)."""
    ctx = _context(x)
    expanded = expand_index(index, x.ndim)
    axes: list[_Axis] = []
    new_axes: list[int] = []
    out_pos = 0
    traced_before = False
    for ix in expanded:
        if ix is None:
            if not allow_none:
                raise UnsupportedOperationError(
                    f"np.newaxis (None) in an assignment index with a traced scalar is not supported yet, at "
                    f"{user_frame_location()}")
            new_axes.append(out_pos)
            out_pos += 1
            continue
        d, n = len(axes), x.shape[len(axes)]
        if _is_static_int(ix):
            i = int(ix)
            if not -n <= i < n and not traced_before:
                raise IndexError(f"index {i} is out of bounds for axis {d} with size {n}")
            # After a traced index NumPy reports whichever axis fails first: the run-time check
            # (ir/dynamic_slice.py) goes through the axes in order.
            axes.append(_Axis(i % n if -n <= i < n else i, 1, True))
        elif _is_traced_int(ix):
            axes.append(_Axis(ix, 1, True))
            traced_before = True
        elif isinstance(ix, slice) and not any(isinstance(p, Tracer) for p in (ix.start, ix.stop, ix.step)):
            start, stop, step = ix.indices(n)
            if step != 1:
                axes.append(_Axis(ix, len(range(start, stop, step)), False))  # static strided: sliced first
            else:
                length = max(stop - start, 0)
                axes.append(_Axis(start if length else 0, length, False))
            out_pos += 1
        elif isinstance(ix, slice):
            axes.append(_dynamic_slice_axis(ctx, x, ix, n))
            out_pos += 1
        else:
            raise IndexError(f"invalid index {ix!r} for a traced array")
    return axes, new_axes


def _strided_first(x: Any, axes: list[_Axis]) -> tuple[Any, list[_Axis]]:
    """Static slices with a step other than 1 are taken by basic indexing first (they keep every
    axis), leaving windows of step 1."""
    if not any(isinstance(a.start, slice) for a in axes):
        return x, axes
    x = NUMPY.getitem(x, tuple(a.start if isinstance(a.start, slice) else slice(None) for a in axes))
    return x, [_Axis(0, a.size, False) if isinstance(a.start, slice) else a for a in axes]


def _start_tracers(ctx: Any, axes: list[_Axis]) -> list[Tracer]:
    return [a.start if isinstance(a.start, Tracer) else ctx.const(np.asarray(a.start, np.int64)) for a in axes]


# ----------------------------------------------------------------------------- the two functions


def dynamic_getitem(x: Any, index: tuple) -> Any:
    """`x[index]` where `index` holds traced scalar integers (or slice bounds of step 1: traced
    bounds with another step are _strided_dynamic's, which dispatches here otherwise)."""
    ctx = _context(x)
    try:
        axes, new_axes = _parse(x, index)
    except UnsupportedOperationError:
        selection = data_dependent_window(x, index)
        if selection is None:
            raise
        return selection
    x, axes = _strided_first(x, axes)
    starts = _start_tracers(ctx, axes)
    sizes = tuple(a.size for a in axes)
    window = ctx.bind1("dynamic_slice", x, *starts, sizes=sizes, **_layout(axes))
    shape = [a.size for a in axes if not a.drop]
    for p in new_axes:
        shape.insert(p, 1)
    if all(a.drop for a in axes) and not new_axes:
        return Tracer(ctx, reshape(window, tuple(shape)).ir_var)  # an integer per axis: a NumPy scalar, a copy
    if window.aval.is_symbolic:  # no view: writes through a window of symbolic length are refused
        return reshape(window, tuple(shape))  # (trace/views.py check_writeable)
    # NumPy returns a view of x: a write through it must land in x's window at these starts
    # (trace/views.py writes it back with dynamic_update_slice), never replace x.
    # The starts as the equation reads them: inside a loop body or branch, a start traced outside
    # it (the enclosing loop's index) is captured as an input of the body, and the write-back in
    # that body must read the captured value, not the enclosing trace's (which the body cannot see).
    eqn = window._ctx.eqns[-1]
    assert eqn.outputs[0] is window.ir_var, eqn
    window.share_memory_with(x, "dynamic_slice", {"sizes": sizes, "starts": tuple(eqn.inputs[1:])})
    return reshape(window, tuple(shape))


def dynamic_update(x: Any, index: tuple, value: Any) -> Any:
    """The new array `x` with `x[index] = value` applied (NumPy's casting and broadcasting of
    `value`); `x` itself is not changed."""
    ctx = _context(x)
    axes, _ = _parse(x, index, allow_none=False)
    if any(isinstance(a.start, slice) for a in axes):
        raise UnsupportedOperationError(
            f"assignment through a strided slice combined with a traced index is not supported yet, at "
            f"{user_frame_location()}")
    region = tuple(a.size for a in axes if not a.drop)
    v = lift(ctx, value)
    if v.dtype != x.dtype:
        v = astype(v, x.dtype)  # NumPy's setitem casts the value (unsafe casting)
    try:
        v = broadcast_to_shape(ctx, _drop_leading_ones(v, len(region)), region)
    except ValueError:
        raise ValueError(f"could not broadcast input array from shape {tuple(v.shape)} into shape {region}") from None
    full = tuple(a.size for a in axes)
    if v.shape != full:
        v = ctx.bind1("reshape", v, new_shape=full) if any(isinstance(d, SymDim) for d in full) else reshape(v, full)
    return ctx.bind1("dynamic_update_slice", x, v, *_start_tracers(ctx, axes), **_layout(axes))


def _layout(axes: list[_Axis]) -> dict:
    """The `layout` param, only for a window with a symbolic size."""
    if not any(a.layout for a in axes):
        return {}
    return {"layout": tuple(a.layout for a in axes)}


def _drop_leading_ones(v: Tracer, ndim: int) -> Tracer:
    """NumPy lets a value have extra leading length-1 axes in an assignment."""
    extra = v.ndim - ndim
    if extra > 0 and all(n == 1 for n in v.shape[:extra]):
        return reshape(v, v.shape[extra:])
    return v
