"""Array manipulation: repeat, tile, roll, fliplr, flipud, rot90, pad, append, delete.

Everything with static parameters becomes slices, broadcasts, reshapes and concatenations
(index maps that fuse with their consumers). Where the layout along an axis is an arbitrary
list of source indices known at trace time (`repeat` with per-element counts, `delete` of
scattered indices), consecutive runs become slices; more than `MAX_RUNS` runs are one gather
library step (`take_static`, jitkernel/ir/arrayfn_prims.py).

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda a: np.pad(np.roll(a, 1), 2, mode="reflect"))(np.arange(4.0)).tolist()
[1.0, 0.0, 3.0, 0.0, 1.0, 2.0, 1.0, 0.0]
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.tracer import Tracer
from ..trace.operands import broadcast_to_shape, context_of, lift, normalize_axis
from ._shape import concatenate, flip, ravel, reshape, transpose
from ._ufuncs import apply_ufunc
from ._dispatch import register_function
from ._datadep_sets import delete_traced, insert_traced, repeat_traced  # data-dependent lengths (numpy/_datadep.py)

__all__ = ["repeat", "tile", "roll", "fliplr", "flipud", "rot90", "pad", "append", "delete", "insert"]

MAX_RUNS = 8  # slices per axis before a gather is cheaper than that many kernels


def _static(value: Any, fname: str, what: str) -> Any:
    if isinstance(value, Tracer) or (isinstance(value, (list, tuple)) and any(isinstance(v, Tracer) for v in value)):
        raise UnsupportedOperationError(
            f"numpy.{fname}: a traced {what} is not supported inside jit (the result's shape or layout would "
            f"depend on it); pass it as a static argument (static_argnames)")
    return value


def _along(t: Tracer, axis: int, sl: slice) -> Tracer:
    return t[(slice(None),) * axis + (sl,)]


def _strong(ctx: Any, a: Any) -> Tracer:
    """An ndarray operand: a Python scalar argument becomes a strong array, as np.asarray does."""
    t = lift(ctx, a)
    if t.weak is not None:
        t = Tracer(ctx, t.ir_var)
    return t


def _fresh(t: Tracer) -> Tracer:
    out = Tracer(t._ctx, t.ir_var)
    out.scalar = False
    return out


def _gather(ctx: Any, t: Tracer, axis: int, src: np.ndarray) -> Tracer:
    """t taken along `axis` at the static indices `src`: runs of consecutive indices become
    slices (broadcast for a repeated index), many runs one take_static library step."""
    src = np.asarray(src, dtype=np.int64)
    if len(src) == 0:
        return _along(t, axis, slice(0, 0))
    runs = _runs(src)
    if len(runs) > MAX_RUNS:
        return ctx.bind1("take_static", t, ctx.const(src), axis=axis)
    parts = []
    for start, step, length in runs:
        if step == 0:
            one = _along(t, axis, slice(start, start + 1))
            parts.append(broadcast_to_shape(ctx, one, one.shape[:axis] + (length,) + one.shape[axis + 1:]))
        else:
            stop = start + step * length
            parts.append(_along(t, axis, slice(start, stop if stop >= 0 else None, step)))
    return parts[0] if len(parts) == 1 else concatenate(parts, axis=axis)


def _runs(src: np.ndarray) -> list[tuple[int, int, int]]:
    """(start, step, length) runs with step in (-1, 0, 1) covering `src` in order."""
    runs: list[list[int]] = []
    for i in src.tolist():
        if runs:
            start, step, length = runs[-1]
            last = start + step * (length - 1)
            if length == 1 and i - last in (-1, 0, 1):
                runs[-1] = [start, i - last, 2]
                continue
            if length > 1 and i - last == step:
                runs[-1][2] += 1
                continue
        runs.append([i, 1, 1])
    return [tuple(r) for r in runs]


# ----------------------------------------------------------------------------- repeat, tile

def repeat(a: Any, repeats: Any, axis: Any = None) -> Any:
    """numpy.repeat with static repeats (an int, or one count per element along the axis)."""
    if isinstance(repeats, Tracer):
        return repeat_traced(a if isinstance(a, Tracer) else lift(repeats._ctx, np.asarray(a)), repeats, axis)
    ctx = context_of(a)
    if ctx is None or not isinstance(a, Tracer):
        return np.repeat(a, repeats, axis)
    _static(repeats, "repeat", "repeats")
    t = _strong(ctx, a)
    if axis is None or t.ndim == 0:  # NumPy ravels a 0-d array first (axis 0 or -1 of it)
        t = ravel(t) if axis is None else reshape(t, (1,))
    ax = normalize_axis(axis if axis is not None else 0, t.ndim)
    n = t.shape[ax]
    # NumPy's own checks (negative counts, wrong length, non-integer counts) and source indices.
    src = np.repeat(np.arange(n), repeats)
    counts = np.broadcast_to(np.asarray(repeats), (n,)) if n else np.zeros(0, np.int64)
    if n and np.all(counts == counts[0]):
        r = int(counts[0])
        wide = reshape(t, t.shape[:ax + 1] + (1,) + t.shape[ax + 1:])
        wide = broadcast_to_shape(ctx, wide, t.shape[:ax + 1] + (r,) + t.shape[ax + 1:])
        return _fresh(reshape(wide, t.shape[:ax] + (n * r,) + t.shape[ax + 1:]))
    return _fresh(_gather(ctx, t, ax, src))


def tile(A: Any, reps: Any) -> Any:
    """numpy.tile: a broadcast over interleaved repeat axes, reshaped (an index map)."""
    ctx = context_of(A)
    if ctx is None or not isinstance(A, Tracer):
        return np.tile(A, reps)
    _static(reps, "tile", "reps")
    tup = tuple(reps) if isinstance(reps, (tuple, list, np.ndarray)) else (reps,)
    tup = tuple(operator.index(r) for r in tup)
    t = _strong(ctx, A)
    d = max(len(tup), t.ndim)
    if t.ndim < d:
        t = reshape(t, (1,) * (d - t.ndim) + t.shape)
    tup = (1,) * (d - len(tup)) + tup
    if any(r < 0 for r in tup):
        raise ValueError("negative dimensions are not allowed")
    if t.size and any(r > np.iinfo(np.intp).max for r in tup):
        # NumPy's tile repeats a non-empty array with ndarray.repeat, whose C conversion of the count raises
        raise OverflowError("Python int too large to convert to C long")
    inter = tuple(x for r, s in zip(tup, t.shape) for x in (1, s))
    wide = tuple(x for r, s in zip(tup, t.shape) for x in (r, s))
    out = broadcast_to_shape(ctx, reshape(t, inter), wide)
    return _fresh(reshape(out, tuple(r * s for r, s in zip(tup, t.shape))))


# ----------------------------------------------------------------------------- roll, flips

def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    """numpy.roll (int or tuple shifts, several for one axis add up): static shifts become
    two slices and a concatenation, traced ones a gather at (i - shift) mod n."""
    ctx = context_of(a, shift) if _has_tracer(shift) else context_of(a)
    if ctx is None:
        return np.roll(a, shift, axis)
    t = _strong(ctx, a)
    if _has_tracer(shift):
        return _roll_traced(ctx, t, shift, axis)
    if axis is None:
        return reshape(roll(ravel(t), shift, 0), t.shape)
    from numpy.lib.array_utils import normalize_axis_tuple
    axes = normalize_axis_tuple(axis, t.ndim, allow_duplicate=True)
    pairs = np.broadcast(shift, axes)
    if pairs.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = dict.fromkeys(range(t.ndim), 0)
    for sh, ax in pairs:
        shifts[ax] += int(sh)
    out = t
    for ax, offset in shifts.items():
        n = out.shape[ax]
        offset %= n or 1
        if offset:
            out = concatenate([_along(out, ax, slice(n - offset, None)), _along(out, ax, slice(0, n - offset))], axis=ax)
    return _fresh(out) if out is t else out


def _has_tracer(value: Any) -> bool:
    return isinstance(value, Tracer) or (isinstance(value, (list, tuple)) and any(isinstance(v, Tracer) for v in value))


def _roll_traced(ctx: Any, t: Tracer, shift: Any, axis: Any) -> Tracer:
    """numpy.roll with at least one traced shift. NumPy's steps: the shifts broadcast against
    the axes, `int(sh)` each (a float shift truncates), the shifts of one axis add up, and the
    element at i comes from (i - offset) mod n. That index is computed at run time (int64, so
    any shift of NumPy's int range works) and gathered with numpy.take, a permutation whose
    derivative is the same gather / its scatter-add transpose."""
    if axis is None:
        return reshape(_roll_traced(ctx, ravel(t), shift, 0), t.shape)
    from numpy.lib.array_utils import normalize_axis_tuple
    axes = normalize_axis_tuple(axis, t.ndim, allow_duplicate=True)
    elements = _shift_elements(ctx, shift)
    pairs = np.broadcast(np.arange(len(elements)).reshape(np.shape(shift) if not isinstance(shift, Tracer)
                                                          else shift.shape), axes)
    if pairs.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    totals: dict[int, Any] = {}
    for k, ax in pairs:
        sh = elements[int(k)]
        totals[ax] = sh if ax not in totals else apply_ufunc(np.add, totals[ax], sh)
    out = t
    for ax, total in totals.items():
        n = out.shape[ax]
        if n == 0:
            continue  # NumPy: "If `a` is empty, nothing matters."
        if not isinstance(total, Tracer):
            out = roll(out, total, ax)
            continue
        offset = apply_ufunc(np.remainder, total, n)
        index = apply_ufunc(np.remainder, apply_ufunc(np.subtract, ctx.const(np.arange(n, dtype=np.int64)), offset), n)
        out = np.take(out, index, axis=ax)
    return _fresh(out) if out is t else out


def _shift_elements(ctx: Any, shift: Any) -> list:
    """The shifts as a flat list of Python ints and 0-d int64 Tracers (NumPy's int(sh))."""
    if isinstance(shift, Tracer):
        if shift.dtype.kind == "c":
            raise TypeError("int() argument must be a string, a bytes-like object or a real number, not 'complex'")
        flat = reshape(shift, (-1,))
        return [_as_int64(ctx, flat[i]) for i in range(flat.shape[0])]
    items = list(np.ravel(np.asarray(shift, dtype=object)))
    return [_as_int64(ctx, v) if isinstance(v, Tracer) else int(v) for v in items]


def _as_int64(ctx: Any, v: Tracer) -> Tracer:
    """int(v) as an int64 at run time: floats truncate toward zero (the cast does)."""
    if v.dtype.kind == "c":
        raise TypeError("int() argument must be a string, a bytes-like object or a real number, not 'complex'")
    if v.ndim:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    return lift(ctx, Tracer(ctx, v.ir_var), np.dtype(np.int64))


def fliplr(m: Any) -> Any:
    """numpy.fliplr (reverse axis 1)."""
    if context_of(m) is None:
        return np.fliplr(m)
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(m, 1)


def flipud(m: Any) -> Any:
    """numpy.flipud (reverse axis 0)."""
    if context_of(m) is None:
        return np.flipud(m)
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(m, 0)


def rot90(m: Any, k: int = 1, axes: Any = (0, 1)) -> Any:
    """numpy.rot90 (NumPy's own composition of flip and transpose)."""
    ctx = context_of(m)
    if ctx is None or not isinstance(m, Tracer):
        return np.rot90(m, k, axes)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    nd = m.ndim
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == nd:
        raise ValueError("Axes must be different.")
    if axes[0] >= nd or axes[0] < -nd or axes[1] >= nd or axes[1] < -nd:
        raise ValueError(f"Axes={axes} out of range for array of ndim={nd}.")
    k = operator.index(k) % 4
    if k == 0:
        return m[:]
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    perm = list(range(nd))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return transpose(flip(m, axes[1]), perm)
    return flip(transpose(m, perm), axes[1])


# ----------------------------------------------------------------------------- append, delete

def append(arr: Any, values: Any, axis: Any = None) -> Any:
    """numpy.append: concatenate, flattening both when axis is None."""
    ctx = context_of(arr, values)
    if ctx is None:
        return np.append(arr, values, axis)
    a = _strong(ctx, arr)
    if axis is None:
        if a.ndim != 1:
            a = ravel(a)
        values = ravel(_strong(ctx, values))
        axis = a.ndim - 1
    return concatenate((a, values), axis=axis)


def delete(arr: Any, obj: Any, axis: Any = None) -> Any:
    """numpy.delete with static indices (int, slice, list or boolean mask)."""
    ctx = context_of(arr)
    if ctx is None or not isinstance(arr, Tracer):
        return np.delete(arr, obj, axis)
    if isinstance(obj, Tracer):
        return delete_traced(_strong(ctx, arr), obj, axis)
    _static(obj, "delete", "index")
    if isinstance(obj, slice) and any(isinstance(p, Tracer) for p in (obj.start, obj.stop, obj.step)):
        _static(obj.start if isinstance(obj.start, Tracer) else obj.stop, "delete", "slice bound")
    t = _strong(ctx, arr)
    if axis is None:
        if t.ndim != 1:
            t = ravel(t)
        ax = t.ndim - 1
    else:
        ax = normalize_axis(axis, t.ndim)
    kept = np.delete(np.arange(t.shape[ax]), obj)  # NumPy's own index rules and errors
    return _fresh(_gather(ctx, t, ax, kept))


def insert(arr: Any, obj: Any, values: Any, axis: Any = None) -> Any:
    """numpy.insert with static indices; values may be traced. NumPy itself places the values:
    it runs on index arrays (the flat positions of arr's elements and of the values', in one
    vector holding both), and the traced result gathers by that layout."""
    ctx = context_of(arr, values)
    if ctx is None:
        return np.insert(arr, obj, values, axis)
    if isinstance(obj, Tracer):
        return insert_traced(_strong(ctx, arr), obj, values, axis)
    _static(obj, "insert", "index")
    t = _strong(ctx, arr)
    v = lift(ctx, lift(ctx, values), t.dtype)  # NumPy converts values to arr's dtype first
    index_of_arr = np.arange(t.size, dtype=np.int64).reshape(t.shape)
    index_of_values = np.arange(v.size, dtype=np.int64).reshape(v.shape) + t.size
    layout = np.insert(index_of_arr, obj, index_of_values, axis)  # NumPy's rules and errors
    both = concatenate([ravel(t), ravel(v)], axis=0) if v.size else ravel(t)
    return _fresh(reshape(_gather(ctx, both, 0, layout.reshape(-1)), layout.shape))


# ----------------------------------------------------------------------------- pad

_PAD_KWARGS = {
    "empty": [], "edge": [], "wrap": [], "constant": ["constant_values"], "linear_ramp": ["end_values"],
    "maximum": ["stat_length"], "mean": ["stat_length"], "median": ["stat_length"],
    "minimum": ["stat_length"], "reflect": ["reflect_type"], "symmetric": ["reflect_type"],
}
_PAD_SUPPORTED = ("constant", "empty", "edge", "reflect", "symmetric", "wrap")


def _as_pairs(x: Any, ndim: int, as_index: bool = False) -> Any:
    from numpy.lib._arraypad_impl import _as_pairs as numpy_as_pairs
    return numpy_as_pairs(x, ndim, as_index=as_index)


def pad(array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> Any:
    """numpy.pad for modes constant, empty (zeros), edge, reflect, symmetric (even and odd) and
    wrap, with static pad widths in every NumPy form. Each axis is padded in turn, on the
    array padded along the earlier axes, exactly as NumPy fills its corners."""
    ctx = context_of(array)
    if ctx is None or not isinstance(array, Tracer):
        return np.pad(array, pad_width, mode, **kwargs)
    _static(pad_width, "pad", "pad_width")
    t = _strong(ctx, array)
    widths = np.asarray(pad_width)
    if widths.dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    widths = _as_pairs(widths, t.ndim, as_index=True)
    if callable(mode):
        raise UnsupportedOperationError("numpy.pad: a callable mode is not supported inside jit")
    if mode not in _PAD_KWARGS:
        raise ValueError(f"mode '{mode}' is not supported")
    extra = set(kwargs) - set(_PAD_KWARGS[mode])
    if extra:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {extra}")
    if mode not in _PAD_SUPPORTED:
        raise UnsupportedOperationError(
            f"numpy.pad: mode {mode!r} is not supported inside jit (supported: {', '.join(_PAD_SUPPORTED)})")
    if mode in ("constant", "empty"):
        values = _as_pairs(kwargs.get("constant_values", 0) if mode == "constant" else 0, t.ndim)
        for axis, (before, after) in enumerate(widths):
            t = _pad_constant(ctx, t, axis, int(before), int(after), values[axis])
        return _fresh(t)
    if t.size == 0:
        for axis, (before, after) in enumerate(widths):
            if t.shape[axis] == 0 and (before or after):
                raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
        shape = tuple(s + int(b) + int(e) for s, (b, e) in zip(t.shape, widths))
        return broadcast_to_shape(ctx, ctx.const(np.zeros((), t.dtype)), shape)
    method = kwargs.get("reflect_type", "even")
    for axis, (before, after) in enumerate(widths):
        before, after = int(before), int(after)
        if not (before or after):
            continue
        if method == "odd" and mode in ("reflect", "symmetric") and t.shape[axis] > 1:
            t = _pad_reflect(ctx, t, axis, before, after, method, include_edge=mode == "symmetric")
        else:
            # Modes that copy values: NumPy pads the source indices, and the result gathers
            # by them (a few slices, or one gather for widths of many periods).
            even = {"reflect_type": "even"} if mode in ("reflect", "symmetric") else {}
            t = _gather(ctx, t, axis, np.pad(np.arange(t.shape[axis]), (before, after), mode=mode, **even))
    return _fresh(t)


def _block(ctx: Any, t: Tracer, axis: int, width: int, value: Any) -> Tracer:
    """A block of `width` along `axis` filled with one value, converted as NumPy's assignment
    `padded[area] = value` converts it."""
    if isinstance(value, Tracer):
        fill = lift(ctx, value, t.dtype)
    else:
        cell = np.empty((), t.dtype)
        cell[()] = value
        fill = ctx.const(cell)
    return broadcast_to_shape(ctx, fill, t.shape[:axis] + (width,) + t.shape[axis + 1:])


def _pad_constant(ctx: Any, t: Tracer, axis: int, before: int, after: int, values: Any) -> Tracer:
    parts = ([_block(ctx, t, axis, before, values[0])] if before else []) + [t] + (
        [_block(ctx, t, axis, after, values[1])] if after else [])
    return concatenate(parts, axis=axis) if len(parts) > 1 else t


def _reversed_run(t: Tracer, axis: int, lo: int, hi: int) -> Tracer:
    """t[lo:hi] along axis, reversed."""
    return _along(t, axis, slice(hi - 1, lo - 1 if lo > 0 else None, -1))


def _pad_reflect(ctx: Any, t: Tracer, axis: int, before: int, after: int, method: str, include_edge: bool) -> Tracer:
    """NumPy's _set_reflect_both for reflect_type="odd", repeated until the pad area is filled:
    each round reflects the current array (original plus earlier rounds) by at most its own
    length and takes 2 * edge - reflection in the array's dtype, as NumPy's in-place assignment
    does (so wide pads keep NumPy's rounding and integer wraparound)."""
    original = t.shape[axis]
    while before > 0 or after > 0:
        length = t.shape[axis]
        if include_edge:
            old = length // original * original
            edge_offset = 1
        else:
            old = (length - 1) // (original - 1) * (original - 1) + 1 - 1
            edge_offset = 0
        parts = []
        if before > 0:
            chunk = min(old, before)
            piece = _reversed_run(t, axis, 1 - edge_offset, chunk - edge_offset + 1)
            if method == "odd":
                piece = _odd(ctx, _along(t, axis, slice(0, 1)), piece, t.dtype)
            parts.append(piece)
            before -= chunk
        parts.append(t)
        if after > 0:
            chunk = min(old, after)
            piece = _reversed_run(t, axis, length + edge_offset - 1 - chunk, length + edge_offset - 1)
            if method == "odd":
                piece = _odd(ctx, _along(t, axis, slice(length - 1, length)), piece, t.dtype)
            parts.append(piece)
            after -= chunk
        t = concatenate(parts, axis=axis)
    return t


def _odd(ctx: Any, edge: Tracer, piece: Tracer, dtype: np.dtype) -> Tracer:
    value = apply_ufunc(np.subtract, apply_ufunc(np.multiply, 2, edge), piece)
    return lift(ctx, value, dtype)


# ----------------------------------------------------------------------------- numpy.fft shifts

def _fftshift(x: Any, axes: Any = None, inverse: bool = False) -> Any:
    t = lift(context_of(x), x)
    if axes is None:
        axes = tuple(range(t.ndim))
        shift: Any = [(-(d // 2) if inverse else d // 2) for d in t.shape]
    elif isinstance(axes, (int, np.integer)):
        shift = -(t.shape[axes] // 2) if inverse else t.shape[axes] // 2
    else:
        shift = [(-(t.shape[ax] // 2) if inverse else t.shape[ax] // 2) for ax in axes]
    return roll(t, shift, axes)


def fftshift(x: Any, axes: Any = None) -> Any:
    """numpy.fft.fftshift: a roll by half of each axis."""
    return _fftshift(x, axes)


def ifftshift(x: Any, axes: Any = None) -> Any:
    """numpy.fft.ifftshift: the inverse roll."""
    return _fftshift(x, axes, inverse=True)


def _register_fft_shifts() -> None:
    register_function(np.fft.fftshift, fftshift)
    register_function(np.fft.ifftshift, ifftshift)


_register_fft_shifts()


# What the generated support table (numpy/support_table.py) says beyond "supported".
repeat.__jk_support__ = ("partly: static repeats, or traced repeats of a bool, 8- or 16-bit integer dtype (a "
                         "data-dependent length along axis 0 or of the flattened array)")
tile.__jk_support__ = "partly: reps must be static"
delete.__jk_support__ = ("partly: a traced obj is one index (any axis), or an index array or mask along axis 0 "
                         "or of the flattened array (a data-dependent length)")
insert.__jk_support__ = "partly: a traced obj holds integer indices (a boolean one raises)"
pad.__jk_support__ = ("partly: modes constant, empty (zeros), edge, reflect, symmetric, wrap; "
                      "linear_ramp, maximum, mean, median, minimum and callable modes raise; pad_width static")
