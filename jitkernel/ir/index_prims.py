"""Primitives of advanced indexing: gathers (`x[idx]`, np.take, np.take_along_axis) and
functional scatters (`x[idx] = v`, `ufunc.at`, np.put, np.put_along_axis, np.putmask, np.place).

All are library steps: their reference implementation is NumPy's own indexing on the step's
inputs, run by the interpreter and, as a library step, by the CPU backend. NumPy's semantics
(where advanced dimensions go, negative indices, repeated indices, casting) and NumPy's errors
(IndexError "index 5 is out of bounds for axis 0 with size 3", raised when the call runs) are
therefore exact by construction. Every scatter is functional: it returns a new array and never
writes into an input.

An index is encoded as a hashable tuple of entries (`encode_index` / `decode_index`):
("array", k) is the k-th index-array input of the step, ("int", i) a static integer,
("slice", start, stop, step), ("none",), ("ellipsis",) and ("bool", b) a static Python bool.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .primitives import Impl, Primitive, register
from .types import AType

Index = tuple[tuple, ...]



def decode_index(index: Index, arrays: Sequence[Any]) -> tuple:
    """The NumPy index tuple that `index` encodes, with the step's index arrays filled in."""
    out: list[Any] = []
    for entry in index:
        tag = entry[0]
        if tag == "array":
            out.append(arrays[entry[1]])
        elif tag == "int":
            out.append(entry[1])
        elif tag == "slice":
            out.append(slice(*entry[1:]))
        elif tag == "none":
            out.append(None)
        elif tag == "ellipsis":
            out.append(Ellipsis)
        elif tag == "bool":
            out.append(entry[1])
        else:
            raise ValueError(f"unknown index entry {entry!r}")
    return tuple(out)


def _shape_probe(shape: tuple[int, ...]) -> np.ndarray:
    """An array of `shape` whose elements take no memory (a structured dtype without fields):
    NumPy's own indexing on it gives the result shape and NumPy's shape errors for free."""
    return np.empty(shape, dtype=np.dtype([]))


def _array_probe(aval: AType) -> np.ndarray:
    """Zeros of `aval` without memory (a broadcast 0-d): in range for any non-empty axis."""
    return np.broadcast_to(np.zeros((), aval.dtype), aval.shape)


def gather_shape(x_shape: tuple[int, ...], index: Index, index_avals: Sequence[AType]) -> tuple[int, ...]:
    """The shape of `x[index]` by NumPy's rules (raises NumPy's IndexError for a bad index)."""
    decoded = decode_index(index, [_array_probe(a) for a in index_avals])
    try:
        return tuple(_shape_probe(x_shape)[decoded].shape)
    except IndexError as e:
        if "out of bounds" not in str(e) or 0 not in x_shape:
            raise
        # A non-empty index into an empty axis: NumPy raises for every value, when the step
        # runs (with the real index in its message); the result shape is never used.
        return tuple(_shape_probe(tuple(max(n, 1) for n in x_shape))[decoded].shape)


def _check_integer_indices(index_avals: Sequence[AType]) -> None:
    for a in index_avals:
        if a.dtype.kind not in "iub":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")


# ----------------------------------------------------------------------------- gather


def _gather_rule(in_avals: list[AType], *, index: Index) -> list[AType]:
    x, *idx = in_avals
    _check_integer_indices(idx)
    if any(a.dtype.kind == "b" for a in idx):
        raise ValueError("gather: a boolean index array has a data-dependent result shape")
    return [AType(gather_shape(x.shape, index, idx), x.dtype)]


def _gather_impl(x: np.ndarray, *arrays: np.ndarray, index: Index) -> list[np.ndarray]:
    out = np.asarray(x[decode_index(index, arrays)])
    # An index of only ints and slices (0-d index arrays are encoded as ints) gives a view in
    # NumPy; a step's result must be its own memory, never an alias of an input buffer.
    return [out.copy() if np.may_share_memory(out, x) else out]


# An index array with an out-of-bounds value raises NumPy's IndexError, read or not (`unused =
# x[idx]`; and under vmap every traced x[i] is such a gather): the trace keeps the value.
register(Primitive("gather", "library", _gather_rule, _gather_impl, unread="output"))


def _take_rule(in_avals: list[AType], *, axis: int | None, mode: str) -> list[AType]:
    a, idx = in_avals
    if idx.dtype.kind not in "iu":
        raise TypeError(f"Cannot cast array data from dtype('{idx.dtype}') to dtype('int64') according to the rule 'safe'")
    return [AType(np.take(_shape_probe(a.shape), _array_probe(idx), axis=axis, mode="wrap").shape, a.dtype)]


register(Primitive("take", "library", _take_rule,
                   lambda a, idx, *, axis, mode: [np.asarray(np.take(a, idx, axis=axis, mode=mode))], unread="output"))


def _take_along_rule(in_avals: list[AType], *, axis: int | None) -> list[AType]:
    arr, idx = in_avals
    if idx.dtype.kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    return [AType(np.take_along_axis(_shape_probe(arr.shape), _array_probe(idx), axis=axis).shape, arr.dtype)]


register(Primitive("take_along_axis", "library", _take_along_rule,
                   lambda arr, idx, *, axis: [np.asarray(np.take_along_axis(arr, idx, axis=axis))], unread="output"))

# ----------------------------------------------------------------------------- scatter


def _python_scalar(v: np.ndarray, weak: str | None) -> Any:
    """A traced Python scalar argument as the Python scalar NumPy saw (`x[i] = 300` on int8
    raises OverflowError for a Python int, where np.int64(300) would wrap)."""
    return v.item() if weak is not None else v


def _same_shape_rule(in_avals: list[AType], **params: Any) -> list[AType]:
    return [in_avals[0]]


def _scatter_rule(in_avals: list[AType], *, index: Index, weak: str | None) -> list[AType]:
    x, *idx, value = in_avals
    _check_integer_indices(idx)
    return [x]


def _scatter_ufunc_rule(in_avals: list[AType], *, ufunc: str, index: Index, has_value: bool,
                        weak: str | None) -> list[AType]:
    uf = getattr(np, ufunc, None)
    if not isinstance(uf, np.ufunc) or uf.nout != 1:
        raise ValueError(f"scatter_ufunc: {ufunc} is not a NumPy ufunc with one output")
    idx = in_avals[1:len(in_avals) - (1 if has_value else 0)]
    _check_integer_indices(idx)
    return [in_avals[0]]


def _scatter_into(out: np.ndarray, *rest: np.ndarray, index: Index, weak: str | None) -> None:
    *arrays, value = rest
    out[decode_index(index, arrays)] = _python_scalar(value, weak)


def _scatter_ufunc_into(out: np.ndarray, *rest: np.ndarray, ufunc: str, index: Index, has_value: bool,
                        weak: str | None) -> None:
    """`ufunc.at(out, index[, value])`: unbuffered, repeated indices accumulate."""
    if has_value:
        *arrays, value = rest
        getattr(np, ufunc).at(out, decode_index(index, arrays), _python_scalar(value, weak))
    else:
        getattr(np, ufunc).at(out, decode_index(index, rest))


def _put_into(out: np.ndarray, ind: np.ndarray, v: np.ndarray, *, mode: str, weak: str | None) -> None:
    np.put(out, ind, _python_scalar(v, weak), mode=mode)


def _put_along_into(out: np.ndarray, idx: np.ndarray, values: np.ndarray, *, axis: int | None,
                    weak: str | None) -> None:
    np.put_along_axis(out, idx, _python_scalar(values, weak), axis=axis)


def _putmask_into(out: np.ndarray, mask: np.ndarray, values: np.ndarray, *, weak: str | None) -> None:
    np.putmask(out, mask, _python_scalar(values, weak))


def _place_into(out: np.ndarray, mask: np.ndarray, vals: np.ndarray, *, weak: str | None) -> None:
    np.place(out, mask, _python_scalar(vals, weak))


def _functional(write_into: Any) -> Impl:
    """The reference implementation of an update: `write_into` applied to a copy of the target."""
    def impl(x: np.ndarray, *rest: np.ndarray, **params: Any) -> list[np.ndarray]:
        out = np.array(x, copy=True)
        write_into(out, *rest, **params)
        return [out]
    return impl


def _in_place(write_into: Any) -> Impl:
    """The same update written into the target's own buffer (its first input), for a backend
    that knows nothing reads that buffer afterwards (backends/cpu/runtime.py)."""
    def impl(x: np.ndarray, *rest: np.ndarray, **params: Any) -> list[np.ndarray]:
        write_into(x, *rest, **params)
        return [x]
    return impl


_UPDATES = {
    "scatter": (_scatter_rule, _scatter_into),
    "scatter_ufunc": (_scatter_ufunc_rule, _scatter_ufunc_into),
    "put": (_same_shape_rule, _put_into),
    "put_along_axis": (_same_shape_rule, _put_along_into),
    "putmask": (_same_shape_rule, _putmask_into),
    "place": (_same_shape_rule, _place_into),
}

# Functional updates of their first input, by primitive: the implementation that writes into
# that input's buffer instead of a copy (same results, same errors).
IN_PLACE_IMPLS: dict[str, Impl] = {}
# How each update raises on the data: an index out of bounds (kept when unread, as a gather), or
# a mask and values that do not fit (`np.place` with no values for a True entry).
_UPDATE_RAISES = {"scatter": "output", "scatter_ufunc": "output", "put": "output", "put_along_axis": "output"}
for _name, (_rule, _into) in _UPDATES.items():
    register(Primitive(_name, "library", _rule, _functional(_into), unread=_UPDATE_RAISES.get(_name),
                       checks_data=_name not in _UPDATE_RAISES))
    IN_PLACE_IMPLS[_name] = _in_place(_into)
