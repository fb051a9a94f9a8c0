"""Array creation inside a trace makes traced arrays with their own identity.

`np.zeros(...)` takes no array argument, so NumPy's dispatch protocols never see it: a trace
would get a NumPy constant, and writes of traced values into it (`out[i] = x.sum()`) could not
be recorded. While a thread traces, `numpy.zeros/ones/empty/full` and the `*_like` functions are
replaced by wrappers that, called from the user's code in a tracing thread, return a fresh
traced array (and `np.array` / `np.asarray` of traced values go to jitkernel.numpy's) (a broadcast scalar: no constant of the array's size); called from anywhere else
(jitkernel's and NumPy's own code, other threads) they call NumPy. `np.empty` gives zeros: never
uninitialised memory. Installed and restored like trace/random_guard.py (trace/patching.py).
"""
from __future__ import annotations

import ast
import functools
import linecache
import operator
import sys
from typing import Any, Callable

import numpy as np

from ..ir import check_dtype
from .context import current_context
from .frames import _is_engine_file
from .numpy_api import NUMPY
from .operands import broadcast_to_shape, lift
from .patching import ModulePatches
from .tracer import Tracer, fresh


def _traced_full(shape: Any, fill: Any, dtype: Any) -> Any:
    ctx = current_context()
    # operator.index: a traced size raises the Tracer's own error (make the argument static)
    shape = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(operator.index(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError("negative dimensions are not allowed")
    if isinstance(fill, Tracer):
        dt = check_dtype(dtype, "the dtype= of np.full") if dtype is not None else fill.dtype
        value = lift(ctx, fill, dt)
        if value.ndim:
            value = broadcast_to_shape(ctx, value, shape)
    else:
        dt = check_dtype(np.dtype(dtype) if dtype is not None else np.asarray(fill).dtype, "an array created inside jit")
        filled = np.empty(np.shape(fill), dt)
        np.copyto(filled, fill, casting="unsafe")  # numpy.full's own conversion
        value = ctx.const(filled)
    # np.zeros(n, '>f8') is '>f8' in NumPy: computed natively, returned in that order
    return ctx.request_byteorder(fresh(broadcast_to_shape(ctx, value, shape)), dtype)


_verdicts: dict[tuple, bool] = {}


def _called_by_user(frame: Any, name: str) -> bool:
    """Whether the user's code called `...name(...)` itself. Compiled code (the Cython of
    numpy.random calls `np.empty`) has no frame of its own, so the frame above the wrapper is not
    enough: the call expression the frame is executing, read from its source positions, must
    name the function."""
    if _is_engine_file(frame.f_code.co_filename):
        return False
    key = (frame.f_code, frame.f_lasti, name)
    verdict = _verdicts.get(key)
    if verdict is None:
        verdict = _verdicts[key] = _expression_calls(frame, name)
        if len(_verdicts) > 4096:
            _verdicts.clear()
    return verdict


def _expression_calls(frame: Any, name: str) -> bool:
    try:
        start, end, col, end_col = list(frame.f_code.co_positions())[frame.f_lasti // 2]
        lines = [linecache.getline(frame.f_code.co_filename, n) for n in range(start, end + 1)]
        lines[-1] = lines[-1][:end_col]
        lines[0] = lines[0][col:]
        node = ast.parse("".join(lines).strip(), mode="eval").body
    except (IndexError, ValueError, SyntaxError, TypeError):
        return False
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == name) or (isinstance(func, ast.Name) and func.id == name)


def _creator(name: str, original: Callable) -> Callable:
    like = name.endswith("_like")

    @functools.wraps(original)
    def create(*args: Any, **kwargs: Any) -> Any:
        if current_context() is None or kwargs.get("like") is not None or not _called_by_user(sys._getframe(1), name):
            return original(*args, **kwargs)
        if name in _CONVERSIONS:
            return _converted(name, original, args, kwargs)
        if like and isinstance(args[0] if args else kwargs.get("a", kwargs.get("prototype")), Tracer):
            return original(*args, **kwargs)  # NumPy dispatches to jitkernel.numpy's *_like
        params = _bind(original, name, args, kwargs)
        if params is None:
            return original(*args, **kwargs)
        shape, value, dtype = params
        return _traced_full(shape, value, dtype)
    create.__jitkernel_original__ = original  # type: ignore[attr-defined]
    return create


def _converted(name: str, original: Callable, args: tuple, kwargs: dict) -> Any:
    """np.array / np.asarray / np.ascontiguousarray ... of a traced value (not dispatched by
    NumPy: they take no __array_function__) go to jitkernel.numpy's: a new traced array (array)
    or the same one."""
    a = args[0] if args else kwargs.get("object", kwargs.get("a"))
    if isinstance(a, Tracer) or (isinstance(a, (list, tuple)) and any(isinstance(v, Tracer) for v in a)):
        jnp = NUMPY.namespace
        return getattr(jnp, name)(*args, **kwargs)
    return original(*args, **kwargs)


def _bind(original: Callable, name: str, args: tuple, kwargs: dict) -> tuple | None:
    """(shape, fill value, dtype) of a creation call, or None for what it does not cover
    (order="F" and subok arrays go to NumPy, which makes a constant)."""
    if kwargs.get("order", "C") not in ("C", "K", "A"):
        return None
    fill = {"zeros": 0, "ones": 1, "empty": 0, "zeros_like": 0, "ones_like": 1, "empty_like": 0}
    if name.endswith("_like"):
        proto = args[0] if args else kwargs.get("a", kwargs.get("prototype"))
        rest = list(args[1:])
        value = (rest.pop(0) if rest else kwargs.get("fill_value")) if name == "full_like" else fill[name]
        dtype = rest.pop(0) if rest else kwargs.get("dtype")
        proto = np.asarray(proto)
        shape = kwargs.get("shape") if kwargs.get("shape") is not None else proto.shape
        return shape, value, dtype if dtype is not None else proto.dtype
    rest = list(args)
    shape = rest.pop(0) if rest else kwargs.get("shape")
    if name == "full":
        value = rest.pop(0) if rest else kwargs["fill_value"]
        dtype = rest.pop(0) if rest else kwargs.get("dtype")
        return shape, value, dtype
    dtype = rest.pop(0) if rest else kwargs.get("dtype", float)
    return shape, fill[name], np.float64 if dtype is None else dtype


# np.array and the as*array conversions take no __array_function__ on their first argument
# (nor do np.require and np.asarray_chkfinite, conversions with checks).
_CONVERSIONS = ("array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "require", "asarray_chkfinite")
_NAMES = ("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like") + _CONVERSIONS
_wrappers: dict[str, Callable] = {}


def _creation_targets():
    """numpy's creation functions and their wrappers (made once per original function)."""
    for name in _NAMES:
        value = getattr(np, name)
        if getattr(value, "__jitkernel_original__", None) is not None:
            continue
        wrapper = _wrappers.get(name)
        if wrapper is None or wrapper.__jitkernel_original__ is not value:
            wrapper = _wrappers[name] = _creator(name, value)
        yield np, name, wrapper


_patches = ModulePatches(_creation_targets)
# Enter a trace: patch numpy's creation functions if this is the first active trace; leave it:
# restore them when the last active trace ends.
install, uninstall = _patches.install, _patches.uninstall


# ----------------------------------------------------------------------------- other spellings

_originals: dict[int, str] = {}


def _creation_name(f: Any) -> str | None:
    """The name of the NumPy creation function `f` is (original or wrapper), or None."""
    if not _originals:
        for name in _NAMES:
            value = getattr(np, name)
            _originals[id(getattr(value, "__jitkernel_original__", value))] = name
    return _originals.get(id(getattr(f, "__jitkernel_original__", f)))


def traced_creation(f: Any, args: tuple, kwargs: dict) -> Any:
    """`f(*args, **kwargs)` as a traced array when `f` is a NumPy creation function reached by
    another spelling than `np.<name>` (`from numpy import zeros`, `np.ndarray(shape, dtype)`),
    which the module patch cannot see; NotImplemented for any other `f` (autograph/callees.py
    calls it for every routed call while tracing). `np.ndarray(shape)` is uninitialised in NumPy:
    here it is zeros, as np.empty is."""
    if current_context() is None:
        return NotImplemented
    if f is np.ndarray:
        return _traced_ndarray(*args, **kwargs)
    name = _creation_name(f)
    if name is None or kwargs.get("like") is not None:
        return NotImplemented
    original = getattr(f, "__jitkernel_original__", f)
    if name in _CONVERSIONS:
        return _converted(name, original, args, kwargs)
    if name.endswith("_like") and isinstance(args[0] if args else kwargs.get("a", kwargs.get("prototype")), Tracer):
        return original(*args, **kwargs)  # NumPy dispatches to jitkernel.numpy's *_like
    params = _bind(original, name, args, kwargs)
    if params is None:
        return original(*args, **kwargs)
    return _traced_full(*params)


def _traced_ndarray(shape: Any, dtype: Any = float, buffer: Any = None, offset: int = 0, strides: Any = None,
                    order: Any = None) -> Any:
    if buffer is not None or strides is not None or order not in (None, "C"):
        return np.ndarray(shape, dtype, buffer, offset, strides, order)  # a view of memory: NumPy's own
    return _traced_full(shape, 0, np.float64 if dtype is None else dtype)
