"""Advanced indexing: integer-array and boolean-mask indices (gather and scatter), with
NumPy's rules for where the advanced dimensions go, negative indices and IndexError.

`advanced_getitem(x, index)` is `x[index]`, and `advanced_update(x, index, value)` is the
functional form of `x[index] = value`: it returns the new array and never mutates `x`
(trace/inplace.py writes the result back into `x`'s base). `index` is the tuple the user
wrote, containing at least one array, list or traced array.

Every gather and scatter is one library step (jitkernel/ir/index_prims.py) whose
implementation is NumPy's own indexing: NumPy's semantics and its run-time IndexError for an
out-of-bounds traced index hold by construction. Shapes are checked at trace time by running
NumPy's indexing on zero-byte probe arrays.

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda x, i: x[:, i] * 2)(np.arange(6.0).reshape(2, 3), np.array([2, -1, 0]))
array([[ 4.,  4.,  0.],
       [10., 10.,  6.]])
"""
from __future__ import annotations

import dis
import operator
from typing import Any, Callable

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.numpy_api import NUMPY
from ..trace.context import user_frame, user_frame_location
from ..trace.tracer import Tracer
from ..trace.scalar_store import store_operand
from ..trace.operands import broadcast_to_shape, context_of, lift, normalize_axis
from ._dispatch import register_function
from ..ir.index_prims import decode_index
from ..trace.inplace import INPLACE_OPERATORS
from ._creation import asarray
from ._datadep import getitem as datadep_getitem, is_data_dependent, traced_mask_getitem
from ._datadep import involved, update as datadep_update
from ._shape import reshape

# np.put is numpy/_inplace.py's (static indices), which routes traced indices to `put` here.
__all__ = ["take", "take_along_axis", "put_along_axis", "putmask", "place"]

_WEAK_NAMES = {bool: "bool", int: "int", float: "float"}


# ----------------------------------------------------------------------------- index encoding


def _where(ctx: Any) -> str:
    return f"in jitted function {ctx.name!r} at {user_frame_location()}"


def _static_int(v: Any) -> int | None:
    if v is None:
        return None
    if isinstance(v, Tracer):
        raise UnsupportedOperationError(
            f"a slice with a traced bound next to an index array has a data-dependent length ({_where(v._ctx)}); "
            "use static slice bounds there, or index in two steps")
    return operator.index(v)


def _holds_tracer(items: Any) -> bool:
    return isinstance(items, Tracer) or (isinstance(items, (list, tuple)) and any(_holds_tracer(i) for i in items))


def _as_index_array(ctx: Any, ix: Any) -> Any:
    """A list index as NumPy reads it: an array (an empty list is an empty intp array); a list
    holding traced values is stacked."""
    if _holds_tracer(ix):
        return asarray(ix)
    arr = np.asarray(ix)
    if arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.intp)
    return arr


class _Encoded:
    """An index split into its hashable structure and its array inputs."""

    def __init__(self) -> None:
        self.entries: list[tuple] = []
        self.arrays: list[Tracer] = []
        self.static: dict[int, np.ndarray] = {}  # values of the arrays that are constants
        self.traced_mask = False

    def add_array(self, t: Tracer, value: np.ndarray | None = None) -> None:
        if value is not None:
            self.static[len(self.arrays)] = value
        self.entries.append(("array", len(self.arrays)))
        self.arrays.append(t)

    def probe(self, x_shape: tuple[int, ...], value_shape: tuple[int, ...] | None = None) -> None:
        """Run NumPy's indexing (and assignment of a `value_shape` value) on zero-byte probes,
        with the static index arrays' real values, so NumPy raises its own error now. An
        out-of-bounds error that may come from a traced index's stand-in (zeros, out of bounds
        only on an empty axis) is left to the run time, where NumPy sees the real values."""
        probe = np.empty(x_shape, dtype=np.dtype([]))
        try:
            if value_shape is None:
                probe[_probe_index(self)]
            else:
                probe[_probe_index(self)] = np.empty(value_shape, dtype=np.dtype([]))
        except IndexError as e:
            if len(self.static) == len(self.arrays) or "out of bounds" not in str(e):
                raise


def _encode(ctx: Any, index: tuple) -> _Encoded:
    """Encode `index`: static parts become entries, arrays become step inputs. A static boolean
    array is replaced by its nonzero() integer arrays (NumPy's own definition of a mask
    index); a traced one is kept as an input (an update handles it; a read cannot)."""
    enc = _Encoded()
    for ix in index:
        if ix is None:
            enc.entries.append(("none",))
        elif ix is Ellipsis:
            enc.entries.append(("ellipsis",))
        elif isinstance(ix, (bool, np.bool_)):
            enc.entries.append(("bool", bool(ix)))
        elif isinstance(ix, slice):
            enc.entries.append(("slice", _static_int(ix.start), _static_int(ix.stop), _static_int(ix.step)))
        elif isinstance(ix, (int, np.integer)):
            enc.entries.append(("int", int(ix)))
        elif isinstance(ix, Tracer) or (isinstance(ix, list) and _holds_tracer(ix)):
            t = _as_index_array(ctx, ix) if isinstance(ix, list) else ix
            if t.dtype.kind not in "iub":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            if t.dtype.kind == "b":
                enc.traced_mask = True
            enc.add_array(lift(ctx, t) if t.weak is None else Tracer(ctx, t.ir_var))
        else:
            arr = np.asarray(_as_index_array(ctx, ix) if isinstance(ix, list) else ix)
            if arr.dtype.kind not in "iub":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            if arr.dtype.kind == "b" and arr.ndim == 0:
                enc.entries.append(("bool", bool(arr)))
            elif arr.dtype.kind == "b":
                enc.entries.append(("mask", arr))  # resolved by _static_masks after validation
            elif arr.ndim == 0:  # an advanced index to NumPy (x[np.array(1)] is a copy), equal to an int here
                enc.entries.append(("int", int(arr)))
            else:
                enc.add_array(ctx.const(arr), arr)
    return enc


def _probe_index(enc: _Encoded) -> tuple:
    """The index with zero-byte stand-ins for the traced arrays and the real static masks."""
    out = []
    for entry in enc.entries:
        if entry[0] == "array" and entry[1] in enc.static:
            out.append(enc.static[entry[1]])
        elif entry[0] == "array":
            a = enc.arrays[entry[1]]
            out.append(np.broadcast_to(np.zeros((), a.dtype), a.shape))
        elif entry[0] == "mask":
            out.append(entry[1])
        else:
            out.extend(decode_index((entry,), []))
    return tuple(out)


def _static_masks(ctx: Any, enc: _Encoded) -> tuple:
    """Replace each static boolean mask by its nonzero() integer arrays (equivalent in NumPy)."""
    entries = []
    for entry in enc.entries:
        if entry[0] == "mask":
            for part in np.nonzero(entry[1]):
                entries.append(("array", len(enc.arrays)))
                enc.arrays.append(ctx.const(part.astype(np.intp)))
        else:
            entries.append(entry)
    return tuple(entries)


# ----------------------------------------------------------------------------- getitem


def advanced_getitem(x: Any, index: tuple) -> Any:
    """`x[index]` for an index holding integer arrays (gather) or a static boolean mask."""
    ctx = x._ctx
    if any(is_data_dependent(ix) for ix in index):
        return datadep_getitem(x, index)
    enc = _encode(ctx, index)
    enc.probe(x.shape)
    if enc.traced_mask:
        if len(index) == 1 and _in_augmented_subscript():
            return _MaskedSelection.of(x, enc.arrays[0])
        return traced_mask_getitem(x, index)  # a data-dependent length (numpy/_datadep.py)
    entries = _static_masks(ctx, enc)
    out = ctx.bind1("gather", lift(ctx, x), *enc.arrays, index=entries)
    return out  # a copy, as in NumPy; a 0-d result is a NumPy scalar


# ----------------------------------------------------------------------------- update


def _numpy_update(write: Any, x: Any) -> np.ndarray:
    """Outside a trace the functional updates are NumPy's, on a copy."""
    out = np.array(x, copy=True)
    write(out)
    return out


def _value_operand(ctx: Any, value: Any, dtype: np.dtype) -> tuple[Tracer, str | None]:
    """The value of an update as a step input and its weak (Python scalar) kind: NumPy casts a
    Python scalar by its value (300 into int8 raises OverflowError), an array as the function
    casts (setitem unsafely, np.place safely), and converts a list straight to the target's
    `dtype` (np.place(int32_array, m, [7, 8]) is fine)."""
    if isinstance(value, Tracer):
        return (Tracer(ctx, value.ir_var) if value.weak is not None else value), _WEAK_NAMES.get(value.weak)
    if type(value) in (bool, int, float):
        return ctx.const(np.asarray(value)), _WEAK_NAMES[type(value)]
    if isinstance(value, (list, tuple)):
        if _holds_tracer(value):
            return asarray(value), None
        return ctx.const(np.asarray(value, dtype=dtype)), None
    return ctx.const(np.asarray(value)), None


def _check_value_shape(x: Tracer, enc: _Encoded, v: Tracer) -> None:
    """NumPy's ValueError for a value that does not broadcast to the indexed shape (with a
    traced mask the count is known only at run time: checked then, by NumPy)."""
    enc.probe(x.shape, () if enc.traced_mask else v.shape)


def advanced_update(x: Any, index: tuple, value: Any) -> Any:
    """The array `x` with `x[index] = value` applied (functional: `x` is not changed). Repeated
    indices: the last value wins, as in NumPy."""
    ctx = context_of(x, value, *index)
    if ctx is None:
        return _numpy_update(lambda out: out.__setitem__(index, value), x)
    if not isinstance(x, Tracer):
        x = lift(ctx, x)
    if isinstance(value, _MaskedSelection) and len(index) == 1 and value.mask_source is index[0]:
        return value.merged_into(x)
    if involved(index, value):
        return datadep_update(x, index, value)
    enc = _encode(ctx, index)
    v, weak = _value_operand(ctx, store_operand(value, x.dtype), x.dtype)
    _check_value_shape(x, enc, v)
    selected = _mask_update_as_select(ctx, x, index, v)
    if selected is not None:
        return selected
    entries = _static_masks(ctx, enc)
    out = ctx.bind1("scatter", lift(ctx, x), *enc.arrays, v, index=entries, weak=weak)
    out.scalar = False
    return out


def _mask_update_as_select(ctx: Any, x: Tracer, index: tuple, v: Tracer) -> Tracer | None:
    """`x[mask] = v` as one fused select, when `mask` covers x's leading dimensions and `v`
    broadcasts to the selection for every count (shape (1, *rest) or rest): the common
    `x[x > t] = t` then costs no library step and no copy. None when it does not apply."""
    (mask,) = index if len(index) == 1 else (None,)
    if isinstance(mask, np.ndarray) and mask.dtype == np.bool_ and mask.ndim >= 1:
        mask = ctx.const(mask)
    if not (isinstance(mask, Tracer) and mask.dtype == np.bool_ and mask.ndim >= 1
            and mask.shape == x.shape[:mask.ndim]):
        return None
    rest = x.shape[mask.ndim:]
    vshape = v.shape
    while len(vshape) > len(rest) and vshape[0] == 1:
        vshape = vshape[1:]
    if len(vshape) > len(rest) or np.broadcast_shapes(vshape, rest) != rest:
        return None  # one value per True: NumPy checks the count when the call runs (scatter)
    value = broadcast_to_shape(ctx, reshape(lift(ctx, v, x.dtype), vshape), x.shape)
    m = broadcast_to_shape(ctx, reshape(mask, mask.shape + (1,) * len(rest)), x.shape)
    out = ctx.bind1("select", m, value, lift(ctx, x))
    out.scalar = False
    return out


# ----------------------------------------------------------------------------- x[mask] op= v


def _in_augmented_subscript() -> bool:
    """Whether the user's frame is reading `x[i]` for `x[i] op= v`: CPython compiles that as
    COPY 2, COPY 2, BINARY_SUBSCR, <v>, BINARY_OP op=, SWAP 3, SWAP 2, STORE_SUBSCR (`v` is an
    expression: it cannot hold another augmented assignment, so the first such tail is ours)."""
    frame = user_frame(2)
    if frame is None:
        return False
    ins = list(dis.get_instructions(frame.f_code))
    # The instruction running is the last one at or before f_lasti (a specialised BINARY_SUBSCR
    # that calls __getitem__ reports an offset inside its inline cache).
    at = max((k for k, i in enumerate(ins) if i.offset <= frame.f_lasti), default=None)
    if at is None or at < 2:
        return False
    read = ins[at]
    if not (read.opname == "BINARY_SUBSCR" or (read.opname == "BINARY_OP" and read.argrepr == "[]")):
        return False  # (Python 3.14 spells the read BINARY_OP [])
    if not all(ins[at - d].opname == "COPY" and ins[at - d].arg == 2 for d in (1, 2)):
        return False
    tail = ["SWAP", "SWAP", "STORE_SUBSCR"]
    for k in range(at + 1, len(ins) - 3):
        if ins[k].opname == "BINARY_OP" and ins[k].argrepr.endswith("=") and \
                [i.opname for i in ins[k + 1:k + 4]] == tail:
            return True
    return False


class _MaskedSelection(Tracer):
    """`x[mask]` read only to be updated in place (`x[mask] += v`). NumPy computes it on the
    selected elements, shape (count, *rest); we compute it densely on all of x's elements and
    keep the mask, so the later `x[mask] = result` selects. The count is never needed: the
    value must broadcast to (1, *rest)."""

    __slots__ = ("mask_source", "mask")

    @classmethod
    def of(cls, x: Tracer, mask: Tracer, dense: Tracer | None = None, source: Any = None) -> "_MaskedSelection":
        base = dense if dense is not None else Tracer(x._ctx, x.ir_var)
        out = cls(x._ctx, base.ir_var)
        out.mask = mask
        out.mask_source = source if source is not None else mask
        out.scalar = False
        if mask.ndim > x.ndim or mask.shape != x.shape[:mask.ndim]:
            raise IndexError(f"boolean index did not match indexed array along axis 0; size of axis is "
                             f"{x.shape[0] if x.shape else 0} but size of corresponding boolean axis is "
                             f"{mask.shape[0] if mask.shape else 0}")
        return out

    def _dense_operand(self, other: Any) -> Any:
        """`other` broadcast against the dense layout: it must broadcast to (count, *rest) for
        every count, so its dimension at the count's place (if it has one) is 1."""
        if isinstance(other, (list, tuple)):
            other = np.asarray(other)
        if (other.ndim if isinstance(other, Tracer) else np.ndim(other)) == 0:
            return other  # a scalar (weak Python scalars stay weak)
        rest = self.shape[self.mask.ndim:]
        shape = other.shape
        if len(shape) == len(rest) + 1:
            if shape[0] != 1:
                raise UnsupportedOperationError(
                    f"x[mask] op= v with v of shape {shape}: v must broadcast to the selection (count, *{rest}) "
                    f"for every count, so its first dimension must be 1 ({_where(self._ctx)}); the number of "
                    "True values is not known while tracing")
            shape = shape[1:]
        elif len(shape) > len(rest) + 1:
            raise ValueError(f"operands could not be broadcast together with shapes {shape} and (count,)+{rest}")
        ctx = self._ctx
        t = lift(ctx, other)
        t = reshape(t, shape)
        return broadcast_to_shape(ctx, broadcast_to_shape(ctx, t, rest), self.shape)

    def _inplace_op(self, other: Any, stem: str) -> "_MaskedSelection":
        if stem == "matmul":
            raise UnsupportedOperationError(f"x[mask] @= v is not supported ({_where(self._ctx)})")
        _inplace_verdict(stem, self.dtype, other)
        dense = Tracer(self._ctx, self.ir_var)
        result = getattr(Tracer, f"__{stem}__")(dense, self._dense_operand(other))
        if result is NotImplemented:
            return result
        if result.dtype != self.dtype or result.weak is not None:
            result = lift(self._ctx, Tracer(self._ctx, result.ir_var), self.dtype)
        return _MaskedSelection.of(self, self.mask, result, self.mask_source)

    def merged_into(self, x: Tracer) -> Tracer:
        """x with the selected elements replaced by this dense value."""
        ctx = self._ctx
        m = reshape(self.mask, self.mask.shape + (1,) * (x.ndim - self.mask.ndim))
        out = ctx.bind1("select", broadcast_to_shape(ctx, m, x.shape), Tracer(ctx, self.ir_var), lift(ctx, x))
        out.scalar = False
        return out


def _inplace_verdict(stem: str, dtype: np.dtype, other: Any) -> None:
    """NumPy's error for `tmp op= other` on a `dtype` array (same_kind casting, a Python int out
    of range), raised on one-element stand-ins."""
    target = np.zeros(1, dtype)
    if isinstance(other, Tracer):
        sample = {bool: True, int: 1, float: 1.0}[other.weak] if other.weak is not None else np.zeros(1, other.dtype)
    elif isinstance(other, (list, tuple, np.ndarray)):
        sample = np.zeros(1, np.asarray(other).dtype)
    else:
        sample = other
    try:
        with np.errstate(all="ignore"):
            getattr(operator, f"i{stem}")(target, sample)
    except (ValueError, ArithmeticError):
        pass  # values are not known here


def _install_inplace_operators() -> None:
    for stem in INPLACE_OPERATORS:
        def method(self: _MaskedSelection, other: Any, _stem: str = stem) -> Any:
            return self._inplace_op(other, _stem)
        method.__name__ = f"__i{stem}__"
        setattr(_MaskedSelection, f"__i{stem}__", method)


_install_inplace_operators()


# ----------------------------------------------------------------------------- NumPy functions


def _index_operand(ctx: Any, ix: Any) -> Tracer:
    """An index array argument of take / put / *_along_axis as a step input (NumPy converts
    lists and scalars with np.asarray; a traced Python int is an int64)."""
    if isinstance(ix, Tracer):
        return Tracer(ctx, ix.ir_var) if ix.weak is not None else ix
    if isinstance(ix, list):
        arr = asarray(ix)
        if isinstance(arr, Tracer):
            return arr
        ix = _as_index_array(ctx, ix)
    return ctx.const(np.asarray(ix))


def _no_out(fname: str, out: Any) -> None:
    if out is not None:
        raise UnsupportedOperationError(f"numpy.{fname}: out= is not supported inside jit")


def _write_back(target: Any, new: Tracer, fname: str) -> None:
    """NumPy's mutating functions change their first argument: write the functional result
    back through the in-place machinery (`target[...] = new`, trace/inplace.py)."""
    if not isinstance(target, Tracer):
        raise UnsupportedOperationError(
            f"numpy.{fname} would write traced values into a NumPy array that is not traced "
            f"({_where(new._ctx)}); make the array inside the function from traced values, or pass it as an argument")
    target[...] = new


def take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    """numpy.take (mode 'raise', 'wrap' or 'clip'); an out-of-bounds index raises NumPy's
    IndexError when the call runs.

    >>> import numpy as np, jitkernel as jk
    >>> jk.jit(lambda a, i: np.take(a, i, axis=1, mode="wrap"))(np.eye(3), np.array([4]))
    array([[0.],
           [1.],
           [0.]])
    """
    ctx = context_of(a, indices)
    if ctx is None:
        return np.take(a, indices, axis=axis, out=out, mode=mode)
    _no_out("take", out)
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    x = lift(ctx, a)
    if axis is not None:
        axis = normalize_axis(axis, max(x.ndim, 1))
    return ctx.bind1("take", x, _index_operand(ctx, indices), axis=axis, mode=mode)


def take_along_axis(arr: Any, indices: Any, axis: Any = -1) -> Any:
    """numpy.take_along_axis (NumPy 2's default axis=-1; axis=None takes from arr.ravel())."""
    ctx = context_of(arr, indices)
    if ctx is None:
        return np.take_along_axis(arr, indices, axis=axis)
    x = lift(ctx, arr)
    if axis is not None:
        axis = normalize_axis(axis, x.ndim)
    return ctx.bind1("take_along_axis", x, _index_operand(ctx, indices), axis=axis)


def put_result(a: Any, ind: Any, v: Any, mode: str = "raise") -> Tracer:
    """The array np.put(a, ind, v, mode) leaves in `a`, as a new array."""
    ctx = context_of(a, ind, v)
    if ctx is None:
        return _numpy_update(lambda out: np.put(out, ind, v, mode=mode), a)
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    x = lift(ctx, a)
    value, weak = _value_operand(ctx, store_operand(v, x.dtype), x.dtype)
    out = ctx.bind1("put", x, _index_operand(ctx, ind), value, mode=mode, weak=weak)
    out.scalar = False
    return out


def put(a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    """numpy.put: writes into `a` (through the in-place machinery)."""
    if context_of(a, ind, v) is None:
        return np.put(a, ind, v, mode=mode)
    _write_back(a, put_result(a, ind, v, mode), "put")


def put_along_axis_result(arr: Any, indices: Any, values: Any, axis: Any) -> Tracer:
    """The array np.put_along_axis(arr, indices, values, axis) leaves in `arr`, as a new array."""
    ctx = context_of(arr, indices, values)
    if ctx is None:
        return _numpy_update(lambda out: np.put_along_axis(out, indices, values, axis), arr)
    x = lift(ctx, arr)
    if axis is not None:
        axis = normalize_axis(axis, x.ndim)
    idx = _index_operand(ctx, indices)
    np.take_along_axis(np.empty(x.shape, np.dtype([])), np.broadcast_to(np.zeros((), idx.dtype), idx.shape),
                       axis=axis)  # NumPy's errors for the index shapes, now
    value, weak = _value_operand(ctx, store_operand(values, x.dtype), x.dtype)
    out = ctx.bind1("put_along_axis", x, idx, value, axis=axis, weak=weak)
    out.scalar = False
    return out


def put_along_axis(arr: Any, indices: Any, values: Any, axis: Any) -> None:
    """numpy.put_along_axis: writes into `arr` (through the in-place machinery)."""
    if context_of(arr, indices, values) is None:
        return np.put_along_axis(arr, indices, values, axis)
    _write_back(arr, put_along_axis_result(arr, indices, values, axis), "put_along_axis")


def _mask_operand(ctx: Any, x: Tracer, mask: Any, fname: str) -> Tracer:
    m = lift(ctx, mask if isinstance(mask, Tracer) else np.asarray(mask))
    if m.dtype != np.bool_:
        m = lift(ctx, m, np.dtype(np.bool_))  # NumPy takes any mask as its truth values
    if m.size != x.size:
        raise ValueError(f"{fname}: mask and data must be the same size")
    return m


def _masked_write_result(name: str, numpy_fn: Callable, a: Any, mask: Any, values: Any) -> Tracer:
    """The array `numpy_fn(a, mask, values)` (np.putmask or np.place) leaves in `a`, as a new
    array: the primitive `name` of the same name, or NumPy itself on a copy outside a trace."""
    ctx = context_of(a, mask, values)
    if ctx is None:
        return _numpy_update(lambda out: numpy_fn(out, mask, values), a)
    x = lift(ctx, a)
    value, weak = _value_operand(ctx, store_operand(values, x.dtype), x.dtype)
    out = ctx.bind1(name, x, _mask_operand(ctx, x, mask, name), value, weak=weak)
    out.scalar = False
    return out


def _masked_write(name: str, numpy_fn: Callable, a: Any, mask: Any, values: Any) -> None:
    """np.putmask / np.place: writes into `a` (through the in-place machinery)."""
    if context_of(a, mask, values) is None:
        return numpy_fn(a, mask, values)
    _write_back(a, _masked_write_result(name, numpy_fn, a, mask, values), name)


def putmask_result(a: Any, mask: Any, values: Any) -> Tracer:
    """The array np.putmask(a, mask, values) leaves in `a`, as a new array (values repeat over
    the flat positions: a[i] = values[i % values.size] where mask[i])."""
    return _masked_write_result("putmask", np.putmask, a, mask, values)


def putmask(a: Any, mask: Any, values: Any) -> None:
    """numpy.putmask: writes into `a` (through the in-place machinery)."""
    return _masked_write("putmask", np.putmask, a, mask, values)


def place_result(arr: Any, mask: Any, vals: Any) -> Tracer:
    """The array np.place(arr, mask, vals) leaves in `arr`, as a new array: the n-th True of the
    mask takes vals[n % len(vals)] (a data-dependent position, computed by NumPy's own place
    in one library step)."""
    return _masked_write_result("place", np.place, arr, mask, vals)


def place(arr: Any, mask: Any, vals: Any) -> None:
    """numpy.place: writes into `arr` (through the in-place machinery)."""
    return _masked_write("place", np.place, arr, mask, vals)


def ufunc_at_result(ufunc: np.ufunc, a: Any, indices: Any, b: Any = None) -> Tracer:
    """The array `ufunc.at(a, indices, b)` leaves in `a`, as a new array: unbuffered, so
    repeated indices apply once each (np.add.at accumulates, where `a[idx] += b` does not)."""
    jnp = NUMPY.namespace  # jitkernel.numpy, as it registered itself (no import of the package)
    ctx = context_of(a, indices, b)
    name = ufunc.__name__
    if ctx is None:
        return _numpy_update(lambda out: ufunc.at(out, indices) if b is None else ufunc.at(out, indices, b), a)
    # The step runs NumPy's own ufunc.at (repeated indices apply in order): any one-output
    # ufunc that jitkernel computes, primitive or composed.
    if ufunc.nout != 1 or ufunc.signature is not None or not hasattr(jnp, name):
        raise UnsupportedOperationError(f"numpy.{name}.at is not supported inside a jitted function")
    has_value = ufunc.nin == 2
    if has_value and b is None:
        raise ValueError("second operand needed for ufunc")
    if not has_value and b is not None:
        raise ValueError("second operand provided when ufunc is unary")
    x = lift(ctx, a)
    index = indices if isinstance(indices, tuple) else (indices,)
    enc = _encode(ctx, index)
    enc.probe(x.shape)
    inputs = [x, *enc.arrays]
    weak = None
    if has_value:
        value, weak = _value_operand(ctx, b, x.dtype)
        _ufunc_at_verdict(ufunc, x.dtype, value, weak)
        inputs.append(value)
    else:
        _ufunc_at_verdict(ufunc, x.dtype, None, None)
    entries = _static_masks(ctx, enc)
    out = ctx.bind("scatter_ufunc", inputs, ufunc=name, index=entries, has_value=has_value, weak=weak)[0]
    out.scalar = False
    return out


def _ufunc_at_verdict(ufunc: np.ufunc, dtype: np.dtype, value: Tracer | None, weak: str | None) -> None:
    """NumPy's TypeError for ufunc.at on these dtypes (no loop), raised now on stand-ins."""
    target = np.ones(1, dtype)
    with np.errstate(all="ignore"):
        if value is None:
            ufunc.at(target, [0])
            return
        sample = {"bool": True, "int": 1, "float": 1.0}[weak] if weak else np.ones(1, value.dtype)
        try:
            ufunc.at(target, [0], sample)
        except (ValueError, ArithmeticError, OverflowError):
            pass  # values are not known here


def ufunc_at(ufunc: np.ufunc, a: Any, indices: Any, b: Any = None) -> None:
    """`ufunc.at(a, indices, b)` on traced values: writes into `a` (through the in-place machinery)."""
    new = ufunc_at_result(ufunc, a, indices, b)
    _write_back(a, new, f"{ufunc.__name__}.at")


def ix_(*args: Any) -> tuple:
    """numpy.ix_ of traced (or static) 1-D integer sequences: the open mesh `x[np.ix_(i, j)]`
    reads, each argument reshaped to lie along its own axis. A traced boolean argument is its
    nonzero(), a data-dependent length: unsupported.

    >>> import numpy as np, jitkernel as jk
    >>> jk.jit(lambda x, i: x[np.ix_(i, [0, 2])])(np.arange(9).reshape(3, 3), np.array([2, 0]))
    array([[6, 8],
           [0, 2]])
    """
    ctx = context_of(*args)
    if ctx is None:
        return np.ix_(*args)
    out = []
    for k, a in enumerate(args):
        if not isinstance(a, Tracer):
            # NumPy's own conversion (a boolean sequence is its nonzero(), [] is intp).
            out.append(np.ix_(a)[0].reshape((1,) * k + (-1,) + (1,) * (len(args) - k - 1)))
            continue
        if a.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if a.dtype.kind == "b":
            raise UnsupportedOperationError(
                f"numpy.ix_ of a traced boolean array has a data-dependent length ({_where(ctx)}); pass integer indices")
        if a.dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        out.append(reshape(a, (1,) * k + (a.shape[0],) + (1,) * (len(args) - k - 1)))
    return tuple(out)


register_function(np.ix_, ix_)


# ndarray methods of the same names (installed here, so tracer.py stays untouched by this module).

def _method_take(self: Tracer, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    return take(self, indices, axis=axis, out=out, mode=mode)


def _method_put(self: Tracer, indices: Any, values: Any, mode: str = "raise") -> None:
    np.put(self, indices, values, mode=mode)


Tracer.take = _method_take
Tracer.put = _method_put


# Data-dependent results (np.nonzero, np.flatnonzero, np.argwhere, x[mask]): numpy/_datadep.py.
