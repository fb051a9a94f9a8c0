"""Set functions and other data-dependent lengths inside jit: `np.intersect1d`, `np.union1d`,
`np.setdiff1d`, `np.setxor1d`, `np.unique_values`, `np.unique_counts`, `np.unique_inverse`,
`np.unique_all`, `np.trim_zeros`, and `np.bincount` of a narrow integer dtype without
`minlength`.

Each is one `datadep_call` step (numpy/_datadep.py, docs/architecture.md "Data-dependent
shapes"): NumPy's own function runs on the exact values (data-dependent operands trimmed to
their counts), so dtypes, order (NumPy 2.3+'s unsorted `unique_values` included), NaN handling
and errors are NumPy's; the result is a padded buffer of a static largest length plus the count,
compiled once for every count. The largest length is what the function can give at most: the
smaller input's size for `intersect1d`, both sizes for `union1d` and `setxor1d`, the first
input's for `setdiff1d`, the input's for the `unique_*` functions and `trim_zeros`.

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda a, b: np.intersect1d(a, b))(np.array([3, 1, 2, 3]), np.array([3, 2, 5]))
array([2, 3])
"""
from __future__ import annotations

import math
import operator
import warnings
from typing import Any

import numpy as np

from numpy.lib.array_utils import normalize_axis_index

from ..ir.host_lengths import HOST_LENGTHS
from ..trace.context import _traces
from ..trace.tracer import Tracer
from . import _cumulative
from ._dispatch import register_function
from ._datadep import (_FUNCTIONS, DataDependent, _call, _hashable, _I64, _origin, _probe, _unsupported,
                       datadep_call, is_data_dependent)

__all__ = ["intersect1d", "union1d", "setdiff1d", "setxor1d", "unique_values", "unique_counts", "unique_inverse",
           "unique_all", "trim_zeros"]


def _as_operand(x: Any) -> Any:
    """A traced value as it is; anything else (a list, a scalar) as NumPy would convert it."""
    if isinstance(x, Tracer) or is_data_dependent(x):
        return x
    return np.asarray(x)


def _flat_size(x: Any) -> int:
    """The largest number of elements `x` can hold (a data-dependent value: at its largest count)."""
    if is_data_dependent(x):
        return x.maximum * math.prod(x.rest)
    return int(np.size(x))


def _sample(name: str, operands: tuple, kwargs: tuple) -> tuple[np.ndarray, ...]:
    """NumPy's results on small stand-ins: their dtypes and trailing shapes (and NumPy's errors
    for bad arguments, raised at trace time as NumPy raises them)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = getattr(np, name)(*[_probe(o) for o in operands], **dict(kwargs))
    return tuple(np.asarray(o) for o in out) if isinstance(out, tuple) else (np.asarray(out),)


def _new_length(name: str, operands: tuple, kwargs: tuple, max_len: int, kinds: tuple[str, ...]) -> tuple:
    """`numpy.<name>(*operands, **kwargs)` as one step whose results share a new count of at most
    `max_len` rows. `kinds[k]`: "new" (a result of the new count) or "input" (the shape of
    operand 0: the inverse indices of the `unique_*` functions)."""
    samples = _sample(name, operands, kwargs)
    if len(samples) != len(kinds):
        raise TypeError(f"internal error: numpy.{name} gave {len(samples)} results, expected {len(kinds)}")
    x = operands[0]
    outs: list[tuple] = []
    for k, (kind, sample) in enumerate(zip(kinds, samples)):
        if kind == "new":
            outs.append(("pad", (max_len,) + sample.shape[1:], sample.dtype))
            if k == 0:
                outs.append(("len", (), _I64))
        elif is_data_dependent(x):
            outs.append(("pad", (x.maximum,) + x.rest, sample.dtype))
        else:
            outs.append(("static", np.shape(x), sample.dtype))
    origin = _origin(f"numpy.{name}")
    results = datadep_call("call", operands, (("name", name), ("kwargs", kwargs), ("module", "numpy")),
                           tuple(outs), origin)
    count = results[1]
    values = [results[0]] + list(results[2:])
    wrapped = []
    for kind, r in zip(kinds, values):
        if kind == "new":
            wrapped.append(DataDependent(r, count, origin))
        elif is_data_dependent(x):
            wrapped.append(DataDependent(r, x.count, x.origin))
        else:
            wrapped.append(r)
    return tuple(wrapped)


# ----------------------------------------------------------------------------- set operations


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False) -> Any:
    """numpy.intersect1d: sorted common values (and with return_indices their first positions in
    each flattened input); at most as many as the smaller input has elements."""
    a, b = _as_operand(ar1), _as_operand(ar2)
    kwargs = _hashable({"assume_unique": bool(assume_unique), "return_indices": bool(return_indices)})
    kinds = ("new", "new", "new") if return_indices else ("new",)
    out = _new_length("intersect1d", (a, b), kwargs, min(_flat_size(a), _flat_size(b)), kinds)
    return out if return_indices else out[0]


def union1d(ar1: Any, ar2: Any) -> Any:
    """numpy.union1d: the sorted distinct values of both inputs."""
    a, b = _as_operand(ar1), _as_operand(ar2)
    return _new_length("union1d", (a, b), (), _flat_size(a) + _flat_size(b), ("new",))[0]


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Any:
    """numpy.setdiff1d: the values of ar1 not in ar2 (sorted and distinct; with assume_unique,
    in ar1's order)."""
    a, b = _as_operand(ar1), _as_operand(ar2)
    kwargs = _hashable({"assume_unique": bool(assume_unique)})
    return _new_length("setdiff1d", (a, b), kwargs, _flat_size(a), ("new",))[0]


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Any:
    """numpy.setxor1d: the sorted values in exactly one of the inputs."""
    a, b = _as_operand(ar1), _as_operand(ar2)
    kwargs = _hashable({"assume_unique": bool(assume_unique)})
    return _new_length("setxor1d", (a, b), kwargs, _flat_size(a) + _flat_size(b), ("new",))[0]


def _isin_of_selection(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False, *,
                       kind: Any = None) -> Any:
    """numpy.isin where an operand is data-dependent: NumPy's isin on the exact values; the result
    has element's shape (a selection's count when element is one)."""
    element, test_elements = _as_operand(element), _as_operand(test_elements)
    kwargs = _hashable({"assume_unique": bool(assume_unique), "invert": bool(invert), "kind": kind})
    if is_data_dependent(element):
        return _call("isin", (element, test_elements), kwargs, "same", like=element)
    return _call("isin", (element, test_elements), kwargs, "static")


# ----------------------------------------------------------------------------- unique_* (array API)

_UNIQUE_KINDS = {
    "unique_values": ("new",),
    "unique_counts": ("new", "new"),
    "unique_inverse": ("new", "input"),
    "unique_all": ("new", "new", "input", "new"),
}
_RESULT_TYPES: dict[str, type] = {}


def _unique_result_type(name: str) -> type:
    """NumPy's namedtuple of `numpy.<name>` (UniqueCountsResult, ...)."""
    if name not in _RESULT_TYPES:
        _RESULT_TYPES[name] = type(getattr(np, name)(np.zeros(1)))
    return _RESULT_TYPES[name]


def _unique_like(name: str, x: Any) -> Any:
    x = _as_operand(x)
    out = _new_length(name, (x,), (), _flat_size(x), _UNIQUE_KINDS[name])
    return out[0] if name == "unique_values" else _unique_result_type(name)(*out)


def unique_values(x: Any) -> Any:
    """numpy.unique_values: the distinct values in NumPy's order (NumPy 2.3+ does not sort
    integers: its hash-based order, exactly)."""
    return _unique_like("unique_values", x)


def unique_counts(x: Any) -> Any:
    """numpy.unique_counts: UniqueCountsResult(values, counts)."""
    return _unique_like("unique_counts", x)


def unique_inverse(x: Any) -> Any:
    """numpy.unique_inverse: UniqueInverseResult(values, inverse_indices of x's shape)."""
    return _unique_like("unique_inverse", x)


def unique_all(x: Any) -> Any:
    """numpy.unique_all: UniqueAllResult(values, indices, inverse_indices, counts)."""
    return _unique_like("unique_all", x)


# ----------------------------------------------------------------------------- trim_zeros


def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Any:
    """numpy.trim_zeros of a 1-D array, or of an n-D array along axis 0 only (a data-dependent
    length must be the first axis). A copy, where NumPy returns a view."""
    if not isinstance(filt, Tracer) and not is_data_dependent(filt):
        return np.trim_zeros(filt, trim, axis)
    if isinstance(axis, Tracer) or isinstance(trim, Tracer):
        raise _unsupported("numpy.trim_zeros with a traced trim= or axis=")
    if not isinstance(trim, str) or trim.lower() not in {"fb", "bf", "f", "b"}:
        np.trim_zeros(np.zeros(1), trim)  # NumPy's own error
    ndim = filt.ndim
    if axis is None:
        axes = tuple(range(ndim))
    else:
        from numpy.lib.array_utils import normalize_axis_tuple
        axes = normalize_axis_tuple(axis, ndim, argname="axis")
    if not axes:
        return filt  # NumPy returns its input unmodified
    if axes != (0,):
        raise _unsupported(
            f"numpy.trim_zeros of a {ndim}-D array along axes {axes}",
            "Only the first axis can have a data-dependent length: pass axis=0 (or trim a 1-D array).")
    kwargs = _hashable({"trim": trim, "axis": 0})
    return _new_length("trim_zeros", (filt,), kwargs, filt.shape[0] if isinstance(filt, Tracer) else filt.maximum,
                       ("new",))[0]


# ----------------------------------------------------------------------------- bincount

# The largest bincount length an input dtype allows without minlength (max(x) + 1).
_BINCOUNT_BOUND = {np.dtype(np.bool_): 2, np.dtype(np.uint8): 256, np.dtype(np.int8): 128,
                   np.dtype(np.uint16): 65536, np.dtype(np.int16): 32768}


def bincount_bounded(x: Any, weights: Any = None) -> Any | None:
    """numpy.bincount without minlength of an input whose dtype bounds max(x) + 1 (bool, 8- and
    16-bit integers): a data-dependent length, at most that bound. None for wider dtypes."""
    bound = _BINCOUNT_BOUND.get(np.dtype(x.dtype))
    if bound is None or x.ndim != 1:
        return None
    operands = (x,) if weights is None else (x, _as_operand(weights))
    return _new_length("bincount", operands, (), bound, ("new",))[0]


_cumulative.bincount_without_minlength = bincount_bounded


def _bincount_of_selection(x: Any, weights: Any = None, minlength: Any = 0) -> Any:
    if isinstance(minlength, Tracer) or is_data_dependent(minlength):
        raise _unsupported("numpy.bincount with a traced minlength")
    minlength = operator.index(minlength) if minlength is not None else 0
    bound = _BINCOUNT_BOUND.get(np.dtype(x.dtype))
    if bound is None or x.ndim != 1:
        raise _unsupported(
            f"numpy.bincount of a {x.dtype} selection",
            "Its length is max(x) + 1, which only the data decides: only bool, 8- and 16-bit integers bound it.")
    operands = (x,) if weights is None else (x, _as_operand(weights))
    return _new_length("bincount", operands, _hashable({"minlength": minlength}), max(bound, minlength), ("new",))[0]


# ----------------------------------------------------------------------------- repeat with traced repeats

# The largest repeat count a repeats dtype allows.
_LARGEST_REPEAT = {np.dtype(np.bool_): 1, np.dtype(np.uint8): 255, np.dtype(np.int8): 127,
                   np.dtype(np.uint16): 65535, np.dtype(np.int16): 32767}
_LARGEST_PADDED = 1 << 24  # elements of the padded buffer


def repeat_traced(a: Tracer, repeats: Tracer, axis: Any = None) -> Any:
    """numpy.repeat with traced repeats: the length is their sum, known at run time. With bool,
    8- and 16-bit repeats along axis 0 or of the flattened array, a data-dependent value whose
    static bound is the axis length times the largest count the dtype holds; otherwise (int32,
    int64 repeats, another axis) a length read on the host: the program is compiled for it and
    again when it changes (`_repeat_on_host`, ir/host_lengths.py)."""
    if isinstance(axis, Tracer):
        raise _unsupported("numpy.repeat with a traced axis")
    _sample("repeat", (a, repeats), _hashable({"axis": axis}))  # NumPy's errors for the dtypes and the axis
    ax = None if axis is None or a.ndim == 0 else normalize_axis_index(operator.index(axis), a.ndim)
    largest = _LARGEST_REPEAT.get(np.dtype(repeats.dtype))
    n = a.size if ax is None else a.shape[ax]
    rest = () if ax is None else a.shape[ax + 1:]
    if largest is None or ax not in (None, 0) or n * largest * math.prod(rest) > _LARGEST_PADDED:
        return _repeat_on_host(a, repeats, ax)
    kwargs = _hashable({"axis": None if axis is None else 0})
    return _new_length("repeat", (a, repeats), kwargs, n * largest, ("new",))[0]


def _repeat_on_host(a: Tracer, repeats: Tracer, ax: int | None) -> Tracer:
    """numpy.repeat whose length the host reads: a static shape the program is compiled for
    (the one the jitted function assumes for this site, or a first guess: every count 1), checked
    by the step, which raises HostLengthChanged when it differs (ir/host_lengths.py)."""
    ctx = _traces.stack[-1]
    if getattr(ctx, "parent", None) is not None:
        raise _unsupported(
            f"numpy.repeat with traced {repeats.dtype} repeats inside a compiled loop body or branch",
            "Its length may change from one iteration to the next and has no static bound: give the repeats a "
            "bool, 8- or 16-bit dtype, or compute the repeat outside the loop.")
    site = ctx.__dict__.get("_host_length_sites", 0)
    ctx._host_length_sites = site + 1
    guess = a.size if ax is None else a.shape[ax]
    lengths = HOST_LENGTHS.get()
    length = guess if lengths is None else lengths.setdefault(site, guess)
    shape = (length,) if ax is None else a.shape[:ax] + (length,) + a.shape[ax + 1:]
    origin = _origin("numpy.repeat")
    kw = (("axis", ax), ("length", int(length)), ("site", site), ("where", origin))
    (out,) = datadep_call("repeat_exact", (a, repeats), kw, (("static", shape, a.dtype),), origin)
    return out


# ----------------------------------------------------------------------------- delete / insert with a traced obj


def _axis_of(t: Tracer, axis: Any) -> int | None:
    if isinstance(axis, Tracer):
        raise _unsupported("a traced axis")
    if axis is None:
        return None
    from numpy.lib.array_utils import normalize_axis_index
    return normalize_axis_index(operator.index(axis), t.ndim)


def delete_traced(t: Tracer, obj: Tracer, axis: Any = None) -> Any:
    """numpy.delete with traced indices, NumPy's own delete in one step (its index rules and
    IndexError): one index keeps a static shape; an index array or a boolean mask gives a
    data-dependent length along axis 0 or of the flattened array."""
    ax = _axis_of(t, axis)
    n = t.size if ax is None else t.shape[ax]
    kwargs = _hashable({"axis": ax})
    if obj.ndim == 0 and obj.dtype.kind in "iu":
        shape = (n - 1,) if ax is None else t.shape[:ax] + (n - 1,) + t.shape[ax + 1:]
        if n == 0:
            raise IndexError(f"index out of bounds for axis {ax or 0} with size 0")
        (out,) = datadep_call("call", (t, obj), (("name", "delete"), ("kwargs", kwargs), ("module", "numpy")),
                              (("static", shape, t.dtype),), _origin("numpy.delete"))
        return out
    if obj.dtype.kind not in "iub":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    if ax not in (None, 0):
        raise _unsupported(f"numpy.delete of traced indices along axis {ax}",
                           "Only the first axis can have a data-dependent length: transpose to make it axis 0.")
    rest = () if ax is None else t.shape[1:]
    outs = (("pad", (n,) + rest, t.dtype), ("len", (), _I64))
    origin = _origin("numpy.delete")
    data, count = datadep_call("call", (t, obj), (("name", "delete"), ("kwargs", kwargs), ("module", "numpy")),
                               outs, origin)
    return DataDependent(data, count, origin)


def insert_traced(t: Tracer, obj: Tracer, values: Any, axis: Any = None) -> Any:
    """numpy.insert with traced integer indices: the result's shape does not depend on their
    values (NumPy's own insert on index 0 of the same shape gives it); NumPy's insert runs in one
    step (its placement of equal indices, its IndexError)."""
    if obj.dtype.kind not in "iu":
        raise _unsupported(f"numpy.insert with traced {obj.dtype} indices",
                           "A boolean obj inserts at its True positions, a number that only the data decides.")
    ax = _axis_of(t, axis)
    values = _as_operand(values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sample = np.insert(np.zeros(t.shape, t.dtype), np.zeros(obj.shape, obj.dtype), _probe(values), ax)
    kwargs = _hashable({"axis": ax})
    (out,) = datadep_call("call", (t, obj, values), (("name", "insert"), ("kwargs", kwargs), ("module", "numpy")),
                          (("static", sample.shape, sample.dtype),), _origin("numpy.insert"))
    return out


for _np_func, _impl in ((np.intersect1d, intersect1d), (np.union1d, union1d), (np.setdiff1d, setdiff1d),
                        (np.setxor1d, setxor1d), (np.unique_values, unique_values), (np.unique_counts, unique_counts),
                        (np.unique_inverse, unique_inverse), (np.unique_all, unique_all),
                        (np.trim_zeros, trim_zeros)):
    register_function(_np_func, _impl)
    _FUNCTIONS[_np_func] = _impl  # the same functions of a data-dependent value (x[mask], ...)
_FUNCTIONS[np.bincount] = _bincount_of_selection
_FUNCTIONS[np.isin] = _isin_of_selection

trim_zeros.__jk_support__ = ("partly: a 1-D array, or axis=0 of an n-D one (a copy where NumPy returns a view); "
                             "other axes raise")
