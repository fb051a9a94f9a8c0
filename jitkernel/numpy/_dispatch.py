"""NumPy's protocols -> our functions. `np.sin(tracer)` arrives in `__array_ufunc__`,
`np.sum(tracer)` in `__array_function__`; anything without an entry here raises
UnsupportedOperationError naming the function."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.numpy_api import NUMPY
from ..trace import inplace
from ..trace.inplace import function_with_out
from ..trace.operands import context_of
from ..trace.tracer import Tracer
from ..trace.views import fresh
from ._cumulative import ufunc_reduceat, ufunc_method

_REDUCE_METHODS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
                   "logical_and": "all", "logical_or": "any"}


# NumPy callables outside the top-level namespace (np.linalg.solve, np.fft.fft, ...) and any
# other function whose implementation is not `jitkernel.numpy.<same name>`: register_function.
_REGISTERED: dict = {}


def register_function(np_func: Any, impl: Any) -> Any:
    """Route `np_func(tracer, ...)` (the __array_function__ protocol) to `impl`. Returns impl,
    so it can decorate. The table of supported NumPy functions (docs/numpy-support.md) is
    generated from this registry and jitkernel.numpy's names."""
    _REGISTERED[np_func] = impl
    global _FUNCTIONS
    _FUNCTIONS = None
    return impl


def _table() -> dict:
    jnp = NUMPY.namespace  # jitkernel.numpy, as it registered itself (no import of the package)
    table = {}
    for name in jnp.__all__:
        np_obj = getattr(np, name, None)
        np_obj = getattr(np_obj, "__jitkernel_original__", np_obj)  # not trace/creation.py's wrapper
        if np_obj is not None and callable(np_obj) and not isinstance(np_obj, (np.ufunc, type)):
            table[np_obj] = getattr(jnp, name)
    table.update(_REGISTERED)
    return table


_FUNCTIONS: dict | None = None


def _holds_data_dependent(items: Any) -> bool:
    """Whether a data-dependent value (numpy/_datadep.py) is among `items` (or one level down)."""
    for x in items:
        if getattr(type(x), "_jk_datadep", False):
            return True
        if isinstance(x, (tuple, list)) and any(getattr(type(y), "_jk_datadep", False) for y in x):
            return True
    return False


def apply_function_protocol(func: Any, args: tuple, kwargs: dict) -> Any:
    global _FUNCTIONS
    if _holds_data_dependent(args) or _holds_data_dependent(kwargs.values()):
        return NotImplemented  # DataDependent.__array_function__ (numpy/_datadep.py) decides
    if _FUNCTIONS is None:
        _FUNCTIONS = _table()
    impl = _FUNCTIONS.get(func)
    if impl is None:
        name = getattr(func, "__module__", "numpy").replace("numpy._core.", "numpy.") + "." + getattr(func, "__name__", str(func))
        why = NUMPY.unsupported_reason(getattr(func, "__name__", ""))  # the support table's reason
        raise UnsupportedOperationError(
            f"{name} is not supported inside a jitted function ({why + '; ' if why else ''}jitkernel compiles "
            "a subset of NumPy; see docs/numpy-support.md)")
    if kwargs.get("out") is not None:
        return function_with_out(impl, getattr(func, "__name__", "function"), args, kwargs)
    result = impl(*args, **kwargs)
    name = getattr(func, "__name__", None)
    if name not in VIEW_FUNCTIONS and not (name in NO_COPY_FUNCTIONS and kwargs.get("copy", True) is not True):
        result = _not_a_view(result, args)
    if _keeps_byteorder(name, args, kwargs):
        source = args[_SOURCE_POSITION.get(name, 0)] if len(args) > _SOURCE_POSITION.get(name, 0) else None
        if isinstance(source, Tracer):
            source._ctx.keep_byteorder(result, source)
    return result


# NumPy functions that return their argument itself when `copy` is False or None and nothing
# needs converting (np.astype(a, a.dtype, copy=False) is a, np.array(a, copy=None) is a).
NO_COPY_FUNCTIONS = frozenset({"astype", "array", "nan_to_num"})
# NumPy functions whose result has their first argument's dtype, byte order included (NumPy 2
# returns '>f8' for a '>f8' argument; measured one by one): copies, gathers, sorts, padding,
# `*_like` without dtype=. Every other function (ufuncs, reductions, concatenate, stack, where,
# clip, resize, ...) returns native byte order. Views follow their base (VIEW_PRIMITIVES).
BYTEORDER_KEEPING_FUNCTIONS = frozenset({
    "copy", "array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "sort", "partition",
    "take", "take_along_axis", "compress", "extract", "repeat", "tile", "roll", "pad", "unique", "delete",
    "insert", "diag", "diagonal", "real", "nan_to_num", "trim_zeros", "zeros_like", "ones_like", "empty_like",
    "full_like", "flip", "fliplr", "flipud", "rot90", "ravel", "reshape", "transpose", "swapaxes", "moveaxis",
    "rollaxis", "squeeze", "expand_dims", "broadcast_to", "atleast_1d", "atleast_2d", "atleast_3d",
    "unique_values", "unique_counts", "unique_inverse", "unique_all", "setdiff1d"})
# Where the array whose dtype is kept stands, when not first (the condition comes first).
_SOURCE_POSITION = {"compress": 1, "extract": 1}
# Where those functions take a dtype positionally: one given there decides the byte order.
_DTYPE_POSITION = {"zeros_like": 1, "ones_like": 1, "empty_like": 1, "full_like": 2, "array": 1, "asarray": 1,
                   "asanyarray": 1, "ascontiguousarray": 1, "asfortranarray": 1}


def _keeps_byteorder(name: str | None, args: tuple, kwargs: dict) -> bool:
    """Whether NumPy's `name(*args, **kwargs)` has its first argument's dtype (no dtype given)."""
    if name not in BYTEORDER_KEEPING_FUNCTIONS or not args or kwargs.get("dtype") is not None:
        return False
    at = _DTYPE_POSITION.get(name)
    return at is None or len(args) <= at or args[at] is None


# NumPy functions that return views of their argument; every other function returns new arrays.
VIEW_FUNCTIONS = frozenset({
    "reshape", "ravel", "transpose", "permute_dims", "matrix_transpose", "swapaxes", "moveaxis",
    "rollaxis", "squeeze", "expand_dims", "broadcast_to", "broadcast_arrays", "atleast_1d",
    "atleast_2d", "atleast_3d", "flip", "fliplr", "flipud", "asarray", "asanyarray", "real", "imag",
    "diagonal", "split", "array_split", "hsplit", "vsplit", "dsplit", "unstack", "copyto", "put"})


def _not_a_view(result: Any, args: tuple) -> Any:
    """A result that shares an argument's memory, from a function NumPy returns a new array
    for (an implementation that returned its input as is, or a view of it): a fresh array."""
    if type(result) in (list, tuple):
        return type(result)(_not_a_view(r, args) for r in result)
    if not isinstance(result, Tracer) or result._mem is None:
        return result
    mems = {id(a._mem) for a in args if isinstance(a, Tracer) and a._mem is not None}
    for a in args:
        if isinstance(a, (list, tuple)):
            mems.update(id(b._mem) for b in a if isinstance(b, Tracer) and b._mem is not None)
    if id(result._mem) not in mems:
        return result
    out = fresh(result)
    out.scalar, out.weak = result.scalar, result.weak
    return out


def apply_ufunc_protocol(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    if method != "__call__" or not kwargs:
        return _apply_ufunc_protocol(ufunc, method, inputs, kwargs)
    try:
        return _apply_ufunc_protocol(ufunc, method, inputs, dict(kwargs))
    except UnsupportedOperationError:
        _raise_numpys_ufunc_error(ufunc, inputs, kwargs)
        raise


def _raise_numpys_ufunc_error(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> None:
    """Where jitkernel refuses a keyword of a ufunc call (casting='no', dtype=, a cast into
    out=), NumPy may refuse the call itself: its error (a UFuncTypeError subclass naming the
    dtypes) is the one the user gets. One-element stand-ins of the operands' dtypes broadcast
    as the operands do, so NumPy's dtype and casting verdicts are the call's own."""
    def stand_in(v: Any) -> Any:
        return tuple(inplace._dummy(o) for o in v) if isinstance(v, tuple) else inplace._dummy(v)
    try:
        with np.errstate(all="ignore"):
            ufunc(*[inplace._dummy(x) for x in inputs], **{k: stand_in(v) for k, v in kwargs.items()})
    except (TypeError, ValueError) as numpy_error:
        raise numpy_error.with_traceback(None) from None


def _apply_ufunc_protocol(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    jnp = NUMPY.namespace  # jitkernel.numpy, as it registered itself (no import of the package)
    if _holds_data_dependent(inputs):
        return NotImplemented  # DataDependent.__array_ufunc__ (numpy/_datadep.py) decides
    name = ufunc.__name__
    if method == "__call__" and "out" in kwargs:
        stem = inplace.concrete_inplace_stem(ufunc, inputs, kwargs)
        if stem is not None:
            # `a OP= traced` on a NumPy array `a`: ndarray.__iadd__ calls us with out=(a,).
            refs = inplace._refs_of_out(inputs, kwargs)
            return inplace.concrete_augmented_assign(context_of(*inputs), stem, inputs, refs)
        return inplace.ufunc_with_out(ufunc, inputs, kwargs)
    if method == "__call__":
        fn = getattr(jnp, name, None)
        if fn is None:
            raise UnsupportedOperationError(f"numpy.{name} is not supported inside a jitted function")
        return fn(*inputs, **kwargs)
    if method == "at":
        return NUMPY.ufunc_at(ufunc, *inputs, **kwargs)
    if method == "reduce" and name in _REDUCE_METHODS and len(inputs) == 1:
        kwargs.setdefault("axis", 0)
        return getattr(jnp, _REDUCE_METHODS[name])(inputs[0], **kwargs)
    if method == "reduceat":
        return ufunc_reduceat(ufunc, *inputs, **kwargs)
    if method in ("accumulate", "reduce") and len(inputs) == 1:
        return ufunc_method(ufunc, method, inputs[0], kwargs)  # other ufuncs' reduce and every accumulate
    if method == "outer" and len(inputs) == 2 and hasattr(jnp, name):
        a, b = inputs
        nb = len(jnp.asarray(b).shape)
        return getattr(jnp, name)(jnp.reshape(a, tuple(jnp.asarray(a).shape) + (1,) * nb), b)
    raise UnsupportedOperationError(f"numpy.{name}.{method} is not supported inside a jitted function")
