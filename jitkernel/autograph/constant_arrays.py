"""NumPy arrays made inside a jitted function (`np.arange(n)`, `np.mgrid[...]`, `np.linspace`,
`np.array([...])` with static arguments), indexed by or stored with traced values.

Those arrays are concrete while the function is traced (only `np.zeros`/`ones`/`empty`/`full`
and the `*_like` functions make traced arrays, trace/creation.py), so NumPy's own
`ndarray.__getitem__` / `__setitem__` run on them and fail on a traced index or value
(TracerArrayConversionError). Converted code (subscripts.py) reads every subscript through
`getitem` and prepares every store into a local name through `store_receiver`:

- `getitem(a, index)`: a concrete ndarray with a traced index is lifted to a traced constant
  (a snapshot of its values now) and indexed there, *when NumPy's result is a copy or a
  scalar*: advanced indexing (an index array, a mask) or an integer for every axis. A basic
  index that NumPy answers with a view (`a[i]` of a 2-d array, `a[i:j]`) is left to NumPy and
  keeps its error: a write through the view, or a later write into `a`, would reach the other
  in NumPy and not the traced snapshot.
- `store_receiver(a, index, value)`: before `a[index] = value` (or `op=`) where `a` is a local
  name holding a concrete ndarray and the index or the value is traced, `a` is rebound to a
  traced copy of itself, so the store is recorded (the converted statement then runs on the
  traced array), only when nothing else can see `a`: no other name, container or view refers to
  it (its reference count), it is not a view of an array something else refers to, and is writeable. Otherwise it raises,
  saying why: NumPy would change the other reference too.

>>> import numpy as np, jitkernel as jk
>>> @jk.jit
... def f(x):
...     X, Y = np.mgrid[0:2, 0:3]
...     return X[x > 0.5] * 10 + Y[x > 0.5]
>>> f(np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]))
array([ 1,  2, 10])
"""
from __future__ import annotations

import sys
import weakref
from typing import Any

import numpy as np

from ..errors import TracerArrayConversionError
from ..trace.context import current_context, is_tracing, user_frame_location
from ..trace.tracer import Tracer, fresh

make_slice = slice  # (converted code builds an index's slices outside the subscript: ag__.make_slice)


def _is_traced(x: Any) -> bool:
    """A Tracer or a data-dependent value (numpy/_datadep.py), possibly inside a tuple, list or slice."""
    if isinstance(x, Tracer) or getattr(type(x), "_jk_datadep", False):
        return True
    if isinstance(x, (tuple, list)):
        return any(_is_traced(e) for e in x)
    if isinstance(x, slice):
        return _is_traced((x.start, x.stop, x.step))
    return False


def _copies(array: np.ndarray, index: Any) -> bool:
    """Whether NumPy answers `array[index]` with a new array or a scalar (never a view): an
    advanced index (an array of one axis or more, a bool, a list) or an integer for every axis."""
    items = index if isinstance(index, tuple) else (index,)
    integers, basic = 0, False
    for item in items:
        if isinstance(item, (list, np.ndarray)) or getattr(type(item), "_jk_datadep", False):
            return True
        if isinstance(item, Tracer):
            if item.ndim > 0 or item.dtype == np.bool_:
                return True
            integers += 1
        elif isinstance(item, (bool, np.bool_)):
            return True
        elif isinstance(item, (int, np.integer)):
            integers += 1
        else:
            basic = True  # a slice, None or Ellipsis: a view unless an advanced index comes too
    return not basic and integers == array.ndim


def lifted(array: np.ndarray) -> Tracer:
    """A traced constant holding `array`'s current values (one per trace while they are unchanged)."""
    ctx = current_context()
    memo = ctx.__dict__.setdefault("_lifted_arrays", {})
    hit = memo.get(id(array))
    if hit is not None:
        ref, snapshot, tracer = hit
        if ref() is array and snapshot.dtype == array.dtype and snapshot.shape == array.shape \
                and snapshot.tobytes() == array.tobytes():
            return tracer
    snapshot = np.array(array, copy=True)
    tracer = ctx.const(snapshot)
    memo[id(array)] = (weakref.ref(array), snapshot, tracer)
    return tracer


def getitem(obj: Any, index: Any) -> Any:
    """`obj[index]` in converted code: a concrete ndarray indexed by a traced value is read from
    a traced constant (module docstring); everything else is Python's subscript."""
    if type(obj) is np.ndarray and is_tracing() and _is_traced(index) and _copies(obj, index):
        return lifted(obj)[index]
    return obj[index]


def method_call(obj: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """`obj.name(*args, **kwargs)` in converted code (a read-only method: subscripts.py): on a
    traced constant when `obj` is a concrete ndarray and an argument is traced (NumPy's method
    would ask the traced argument for its data)."""
    if (type(obj) is np.ndarray and is_tracing() and kwargs.get("out") is None
            and (_is_traced(args) or _is_traced(tuple(kwargs.values())))):
        obj = lifted(obj)
    return getattr(obj, name)(*args, **kwargs)


def function_call(fn: Any, array: Any = None, *args: Any, **kwargs: Any) -> Any:
    """`np.take(array, ...)` / `np.repeat(array, ...)` in converted code: NumPy dispatches them
    on `array` only, so a concrete `array` with a traced index or count is lifted first."""
    if (type(array) is np.ndarray and is_tracing() and kwargs.get("out") is None
            and (_is_traced(args) or _is_traced(tuple(kwargs.values())))):
        array = lifted(array)
    return fn(array, *args, **kwargs)


def _refcount(receiver: Any) -> int:
    return sys.getrefcount(receiver)


def _probe_receiver(receiver: Any, index: Any, value: Any, name: str) -> int:
    return _refcount(receiver)  # (the same frames as store_receiver: calibrates _UNSHARED)


def _calibrate() -> int:
    """The reference count store_receiver sees for an array only one local name refers to."""
    def local_array() -> int:
        a = np.zeros(1)
        return _probe_receiver(a, None, None, "a")

    return local_array()


_UNSHARED = _calibrate()


def _base_refs(view: np.ndarray) -> int:
    return sys.getrefcount(view.base)


def _calibrate_base() -> int:
    """The reference count of an array's base that only the array refers to (`np.arange(6).reshape(2, 3)`)."""
    return _base_refs(np.zeros(4).reshape(2, 2))


_BASE_ONLY = _calibrate_base()


def _private_bases(array: np.ndarray) -> bool:
    """Whether every base under `array` is a NumPy array only the view above it refers to (the
    array came out of a chain like `np.arange(12).reshape(3, 4)`): nothing else sees a write."""
    while array.base is not None:
        if not isinstance(array.base, np.ndarray) or _base_refs(array) > _BASE_ONLY:
            return False
        array = array.base
    return True


def store_receiver(receiver: Any, index: Any, value: Any, name: str) -> Any:
    """The array a converted `name[index] = value` (or `name[index] op= value`) stores into:
    `receiver` itself, or a traced copy of it when it is a concrete ndarray that only this name
    sees and the index or the value is traced (module docstring)."""
    if type(receiver) is not np.ndarray or not is_tracing() or not (_is_traced(index) or _is_traced(value)):
        return receiver
    refs = _refcount(receiver)
    ctx = current_context()
    if id(receiver) in ctx._const_ids:
        refs -= 1  # the trace's own keep-alive reference to a constant it captured earlier
    why = None
    if not _private_bases(receiver):
        why = "it is a view of another NumPy array, which NumPy would change too"
    elif not receiver.flags.writeable:
        return receiver  # NumPy's own "assignment destination is read-only"
    elif refs > _UNSHARED:
        why = ("another variable, container or view refers to the same NumPy array, and NumPy would change it "
               "too")
    if why is not None:
        raise TracerArrayConversionError(
            f"a traced value is stored into `{name}`, a NumPy array that is not traced (made by a NumPy function "
            f"jitkernel does not trace, such as np.arange or np.mgrid), at {user_frame_location()}: {why}. "
            f"Store into a traced copy instead (t = np.empty_like({name}); t[...] = {name}; then write into t), "
            "or create the array with np.zeros / np.empty / np.full, which make traced arrays.")
    return fresh(lifted(receiver))
