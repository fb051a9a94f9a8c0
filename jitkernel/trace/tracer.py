"""Tracer: the stand-in for an array while a function is traced. Its methods, `__array_ufunc__`
and `__array_function__` record primitives via `jitkernel.numpy` (trace/numpy_api.py); its
operators (`x + y`, `x += y`) are attached by trace/operators.py, `x[i] = v` and `fill` by
trace/inplace.py, and more ndarray methods by jitkernel.numpy's modules (sort, take, ...)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import (TracerArrayConversionError, TracerBoolConversionError, TracerError,
                      TracerIntegerConversionError, UnsupportedAttributeError, UnsupportedOperationError)
from ..ir import AType, Var
from .active import current_context
from .frames import read_by_engine, user_frame, user_frame_location, user_instruction
from .memory import make_view, refresh
from .numpy_api import NUMPY


def _jnp():
    return NUMPY.namespace  # registered by jitkernel.numpy (trace/numpy_api.py)


# Errors NumPy raises in place of the one a Tracer raised inside its conversion code.
_NUMPY_REPLACEMENTS = ("setting an array element with a sequence", "expected a sequence of integers",
                       "cannot be interpreted as an integer", "must be a string, a bytes-like object or a real number")


def conversion_error(ctx: Any, e: BaseException) -> BaseException | None:
    """The Tracer's own error behind NumPy's error `e` (see Tracer._raise_pending), if any."""
    pending, ctx.pending_conversion_error = ctx.pending_conversion_error, None
    if pending is None or isinstance(e, TracerError):
        return None
    cause, depth = e, 0
    while cause is not None and depth < 8:
        if cause is pending:
            return pending
        cause, depth = cause.__context__, depth + 1
    return pending if any(m in str(e) for m in _NUMPY_REPLACEMENTS) else None


class Tracer:
    """An abstract array (shape, dtype) inside a trace. `weak` is int/float/bool for values that
    stand for Python scalars, which promote weakly as NEP 50 says (only Python scalars are weak:
    the result of a NumPy function never is). `scalar` tells, for a 0-d value, whether NumPy
    would hold a scalar (immutable: the 0-d result of a ufunc, a reduction or an integer index)
    rather than a 0-d ndarray (an argument, a view). `_mem` is the base Memory it is a view of
    (None for a fresh result until a view of it is made or it is written), `_view` the movement
    that made it from its parent (None for a base); trace/views.py explains the model."""

    __slots__ = ("_ctx", "_var", "weak", "scalar", "_mem", "_view", "_strides", "_version")
    __array_priority__ = 1000

    # `ctx` is a TraceContext (trace/context.py, which makes Tracers and so imports this module:
    # not imported here, not even for the annotation, so the two do not form a circle).
    def __init__(self, ctx: Any, var: Var, weak: type | None = None) -> None:
        self._ctx = ctx
        self._var = var
        self.weak = weak
        self.scalar = not var.aval.shape
        self._mem = None
        self._view = None
        self._strides = None
        self._version = 0

    @property
    def ir_var(self) -> Var:
        """The current value: re-derived from the base when a write moved its version."""
        mem = self._mem
        if mem is None or mem.version == self._version:
            return self._var
        return refresh(self)

    def share_memory_with(self, base: "Tracer", prim: str = "identity", params: dict | None = None) -> None:
        """Make this Tracer a view of `base` (NumPy returns a view for this operation)."""
        make_view(self, base, prim, params)

    # -- abstract value -------------------------------------------------------------
    @property
    def aval(self) -> AType:
        return self._var.aval  # shape and dtype never change: no need for the current value

    @property
    def shape(self) -> tuple[int, ...]:
        return self._var.aval.shape

    @shape.setter
    def shape(self, value: Any) -> None:
        """`x.shape = (2, 3)`: NumPy reshapes this array object in place (no copy). For an array
        the function made and nothing else sees (no view of it, never written, not an argument)
        this Tracer simply becomes its reshaped value; NumPy's errors for a size that does not fit.
        An argument would change shape in the caller's hands, and views already made from this
        Tracer are derived from its old shape: those stay refused."""
        if self._mem is not None or self.weak is not None or (self.ndim == 0 and self.scalar):
            whose = ("an argument" if self._mem is not None and self._mem.argument
                     else "an array with views or writes" if self._mem is not None else "a scalar")
            raise UnsupportedOperationError(
                f"setting the shape of {whose} in place (`x.shape = ...`) is not supported inside jit, at "
                f"{user_frame_location()}: write `x = x.reshape(...)` instead")
        reshaped = NUMPY.reshape(self, value)  # NumPy's size checks and -1; a view of our memory
        self._var, self._mem, self._view, self._strides, self._version = reshaped.ir_var, None, None, None, 0
        self.scalar = False

    @property
    def dtype(self) -> np.dtype:
        dt = self._var.aval.dtype
        if self._ctx.byteorders_seen and not read_by_engine():
            # The user's code reads NumPy's dtype, byte order included ('>f8' for a byte-swapped
            # argument); the engine computes natively and reads the native one.
            return self._ctx.user_dtype(self)
        return dt

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return self._var.aval.size

    @property
    def T(self) -> "Tracer":
        return _jnp().transpose(self)

    @property
    def mT(self) -> "Tracer":
        return _jnp().swapaxes(self, -1, -2)

    def __repr__(self) -> str:
        return f"Tracer<{self.aval}>"

    def __len__(self) -> int:
        if not self.shape:
            self._stored_into_array()  # NumPy's `out[i] = traced` asks for len() first
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    __hash__ = None  # arrays are unhashable, as in NumPy

    # -- concrete-value conversions are errors ------------------------------------------
    def _where(self) -> str:
        return f"in jitted function {self._ctx.name!r} at {user_frame_location()}"

    def __bool__(self) -> bool:
        self._stored_into_array()
        raise TracerBoolConversionError(
            f"the truth value of a traced array {self.aval} is not known while tracing ({self._where()}). "
            "Python `if`, `while`, `and`, `or`, `not` and bool() need concrete values. Use "
            "np.where(cond, a, b) (or jitkernel.numpy.where) to choose elementwise, or pass the value "
            "as a static argument (jk.jit(f, static_argnums=...) / static_argnames=...) so it is "
            "known at trace time. For control flow on traced values use jk.lax.cond / jk.lax.switch "
            "(branches), jk.lax.while_loop or jk.lax.fori_loop (loops) and jk.lax.scan. (jk.jit "
            "converts `if`, `while` and `for ... in range` of the jitted function itself when its source "
            "is available; this code runs as Python: a helper it calls, a lambda, an `assert`, a `for` "
            "over something else than range(), or autograph=False. docs/numpy-support.md, 'Python "
            "control flow'.)")

    def _argument_name(self) -> str | None:
        """The user's local name for this Tracer when it is an argument of the function."""
        is_argument_array = self._mem is not None and self._mem.argument and self._view is None
        if not is_argument_array and self._var not in self._ctx._input_index:
            return None
        frame = user_frame(2)
        if frame is None:
            return None
        return next((k for k, v in frame.f_locals.items() if v is self), None)

    def _static_hint(self) -> str:
        name = self._argument_name()
        if name is None:
            return "Keep the value as an array, or make the argument it comes from static (static_argnums / static_argnames)."
        return (f"`{name}` is an argument: mark it static so its value is known at trace time, "
                f"jk.jit(f, static_argnames=(\"{name}\",)) (or %%jit --static {name} in a notebook); "
                "a new value then compiles a new version.")

    def _raise_pending(self, err: Exception) -> None:
        # NumPy often replaces what a Tracer raises inside its conversions (np.zeros(n): "expected
        # a sequence of integers"; out[i] = v: "setting an array element with a sequence"),
        # sometimes clearing it; trace_program puts the real cause back (conversion_error).
        self._ctx.pending_conversion_error = err
        raise err

    def _no_scalar(self, what: str) -> Any:
        self._stored_into_array()
        self._raise_pending(TracerIntegerConversionError(
            f"{what}() of a traced array {self.aval} needs its concrete value, which is not known while "
            f"tracing ({self._where()}). {self._static_hint()}"))

    def __int__(self) -> int:
        return self._no_scalar("int")

    def __float__(self) -> float:
        return self._no_scalar("float")

    def __index__(self) -> int:
        self._stored_into_array()
        self._raise_pending(TracerIntegerConversionError(
            f"a traced value {self.aval} is used where a Python int is needed (a shape, a size, an index, "
            f"range(...)) ({self._where()}); shapes and sizes must be known at trace time. {self._static_hint()}"))

    def __complex__(self) -> complex:
        return self._no_scalar("complex")

    def _stored_into_array(self) -> None:
        """`out[i] = traced` on a NumPy array (made inside the function, hence a constant): NumPy
        asks the traced value for its data; say what really happened."""
        if user_instruction()[0] == "STORE_SUBSCR":
            self._raise_pending(TracerArrayConversionError(
                f"a traced value {self.aval} is being stored into a NumPy array ({self._where()}). "
                "A NumPy array captured from outside the jitted function (a closure, a global, an "
                "attribute), or made by a NumPy function jitkernel does not trace, is a constant of the "
                "compiled program and cannot hold traced values. Pass the array as an argument (written "
                "arguments are written back to the caller), or create it inside the function with "
                "np.zeros / np.empty / np.full / .copy(), which make traced arrays."))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        self._stored_into_array()
        why = ("NumPy needs concrete data here: np.asarray()/np.array() of a traced value (use the value "
               "itself, or jitkernel.numpy.asarray), or a NumPy function jitkernel does not support")
        if user_instruction()[0] == "BINARY_SUBSCR":
            why = ("a NumPy array that is not traced (a closure, a global, or an array made with NumPy inside "
                   "the function) is indexed by a traced value, and NumPy's own indexing needs a concrete "
                   "index; pass that array as an argument of the jitted function so the index is traced too")
        elif self.weak is not None and self.ir_var in self._ctx.invars:
            why += (". This value is a Python scalar argument: a list or tuple argument is traced as separate "
                    "Python scalars, not as an array; pass an array (np.asarray(...)) to the jitted function instead")
        self._raise_pending(TracerArrayConversionError(
            f"a traced array {self.aval} cannot be converted to a concrete NumPy array ({self._where()}); {why}."))

    def tolist(self) -> Any:
        return self._no_scalar("tolist")

    def item(self, *args: Any) -> Any:
        return self._no_scalar("item")

    # -- NumPy protocols ----------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        apply_ufunc_protocol = NUMPY.apply_ufunc_protocol
        return apply_ufunc_protocol(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        apply_function_protocol = NUMPY.apply_function_protocol
        return apply_function_protocol(func, args, kwargs)

    # -- indexing ---------------------------------------------------------------------
    def __getitem__(self, index: Any) -> "Tracer":
        getitem = NUMPY.getitem
        return self._ctx.keep_byteorder(getitem(self, index), self)  # views and gathers: NumPy keeps the dtype

    # `x[i] = v` and `x.fill(v)` are attached by trace/inplace.py, the operators (`x + y`,
    # `x += y`) by trace/operators.py, when trace/__init__.py imports them: this class knows
    # nothing of writes or of the checks of Python-int arithmetic.

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes a Tracer does not have. An AttributeError (the
        # UnsupportedAttributeError is one) keeps hasattr() working.
        if not name.startswith("_"):
            # jitkernel.numpy's modules attach ndarray methods (sort, cumsum, take, nonzero, ...)
            # when they are imported, which a trace may not have needed yet.
            _jnp()
            if hasattr(type(self), name):
                return object.__getattribute__(self, name)
        if name == "at":
            raise UnsupportedAttributeError(
                f"traced arrays have no .at ({self._where()}): NumPy arrays have none either. Write NumPy's "
                "way, which jit compiles: x[i] = v, x[i] += v, np.where(mask, value, x), np.add.at.")
        if not name.startswith("_") and hasattr(np.ndarray, name):
            raise self._unsupported_attribute(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _unsupported_attribute(self, name: str) -> Exception:
        why = _UNSUPPORTED_ATTRIBUTES.get(name, "see docs/numpy-support.md for what is")
        return UnsupportedAttributeError(
            f"ndarray.{name} is not supported on traced arrays inside jit ({self._where()}); {why}")

    # -- static attributes ---------------------------------------------------------------
    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    # -- methods that mirror ndarray ---------------------------------------------------
    def astype(self, dtype: Any, copy: bool = True) -> "Tracer":
        out = _jnp().astype(self, dtype, copy=copy)
        return out if out is self else fresh(out)

    def view(self, dtype: Any = None, type: Any = None) -> "Tracer":
        """ndarray.view() (or to its own dtype): a new view of the same memory, as in NumPy."""
        if type is None and (dtype is None or np.dtype(dtype) == self.dtype):
            view_of = NUMPY.view_of
            return view_of(self)
        raise self._unsupported_attribute("view")  # another dtype or type: not compiled

    def reshape(self, *shape: Any, order: str = "C") -> "Tracer":
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _jnp().reshape(self, shape, order=order)

    def transpose(self, *axes: Any) -> "Tracer":
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return _jnp().transpose(self, axes or None)

    def swapaxes(self, a: int, b: int) -> "Tracer":
        return _jnp().swapaxes(self, a, b)

    def squeeze(self, axis: Any = None) -> "Tracer":
        return _jnp().squeeze(self, axis)

    def ravel(self, order: str = "C") -> "Tracer":
        return _jnp().ravel(self, order)

    def flatten(self, order: str = "C") -> "Tracer":
        return fresh(_jnp().ravel(self, order))  # always a copy, as in NumPy

    def copy(self) -> "Tracer":
        return fresh(self)

    def sum(self, axis: Any = None, dtype: Any = None, keepdims: bool = False, **kw: Any) -> "Tracer":
        return _jnp().sum(self, axis=axis, dtype=dtype, keepdims=keepdims, **kw)

    def prod(self, axis: Any = None, dtype: Any = None, keepdims: bool = False, **kw: Any) -> "Tracer":
        return _jnp().prod(self, axis=axis, dtype=dtype, keepdims=keepdims, **kw)

    def mean(self, axis: Any = None, dtype: Any = None, keepdims: bool = False, **kw: Any) -> "Tracer":
        return _jnp().mean(self, axis=axis, dtype=dtype, keepdims=keepdims, **kw)

    def var(self, axis: Any = None, dtype: Any = None, ddof: int = 0, keepdims: bool = False, **kw: Any) -> "Tracer":
        return _jnp().var(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, **kw)

    def std(self, axis: Any = None, dtype: Any = None, ddof: int = 0, keepdims: bool = False, **kw: Any) -> "Tracer":
        return _jnp().std(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, **kw)

    def max(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> "Tracer":
        return _jnp().max(self, axis=axis, keepdims=keepdims, **kw)

    def min(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> "Tracer":
        return _jnp().min(self, axis=axis, keepdims=keepdims, **kw)

    def argmax(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> "Tracer":
        return _jnp().argmax(self, axis=axis, keepdims=keepdims, **kw)

    def argmin(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> "Tracer":
        return _jnp().argmin(self, axis=axis, keepdims=keepdims, **kw)

    def any(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> "Tracer":
        return _jnp().any(self, axis=axis, keepdims=keepdims, **kw)

    def all(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> "Tracer":
        return _jnp().all(self, axis=axis, keepdims=keepdims, **kw)

    def clip(self, min: Any = None, max: Any = None) -> "Tracer":
        return _jnp().clip(self, min, max)

    def round(self, decimals: int = 0) -> "Tracer":
        return _jnp().round(self, decimals)

    def dot(self, other: Any) -> "Tracer":
        return _jnp().dot(self, other)

    # ndarray methods of the array functions (numpy/_matrix.py, numpy/_manipulation.py)
    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> "Tracer":
        return self._ctx.keep_byteorder(_jnp().diagonal(self, offset, axis1, axis2), self)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> "Tracer":
        return _jnp().trace(self, offset, axis1, axis2, dtype, out)

    def repeat(self, repeats: Any, axis: Any = None) -> "Tracer":
        return self._ctx.keep_byteorder(_jnp().repeat(self, repeats, axis), self)
    # complex numbers (numpy/_complex.py)
    @property
    def real(self) -> "Tracer":
        return _jnp().real(self)

    @real.setter
    def real(self, value: Any) -> None:
        self.real[...] = value  # z.real = v writes into z's memory, as NumPy

    @property
    def imag(self) -> "Tracer":
        return _jnp().imag(self)

    @imag.setter
    def imag(self, value: Any) -> None:
        self.imag[...] = value

    def conj(self) -> "Tracer":
        return _jnp().conjugate(self)

    conjugate = conj


# Why an ndarray attribute is not on traced arrays, where more can be said than "unsupported".
_UNSUPPORTED_ATTRIBUTES = {
    "strides": "the memory layout of a traced array is the compiler's (NumPy's own layout of a result "
               "depends on its inputs' layouts), so its byte strides are not known while tracing",
    "flat": "read elements with a.ravel()[i] or a.reshape(-1), write them with a.reshape(-1)[i] = v "
            "(a view when a is contiguous, as in NumPy) or np.put(a, i, v)",
    "flags": "the memory layout of a traced array is the compiler's, not known while tracing",
    "view": "reinterpreting the bytes as another dtype is not compiled: a.astype(dtype) converts the "
            "values, a[...] is a view of the same array",
    "data": "a traced array has no memory buffer while tracing",
    "ctypes": "a traced array has no memory buffer while tracing",
    "base": "which array owns the memory is decided by the compiler",
    "tofile": "files are outside the compiled subset: return the array and write it outside",
    "tobytes": "a traced array has no bytes while tracing: return it and convert outside",
    "resize": "changing the size of an array in place is not compiled: build a new array (np.concatenate, "
              "np.pad, slicing)",
}


def fresh(t: Any) -> Tracer:
    """A new array with t's current values (a copy: its own identity, nothing shared). A copy
    made inside a loop body or branch of an array of the enclosing trace belongs to the body
    (its value captured), so the body may write it."""
    ctx = current_context()
    if ctx is not None and t._ctx is not ctx and hasattr(ctx, "localize"):
        t = ctx.localize(t)
    out = Tracer(t._ctx, t.ir_var)
    out.scalar = False
    return out


def _scalar_type_name(x: Any) -> str:
    """The type NumPy's and Python's messages name for scalar `x` ("int", "numpy.float32")."""
    if isinstance(x, Tracer):
        return {bool: "bool", int: "int", float: "float", complex: "complex"}[x.weak] if x.weak else f"numpy.{x.dtype.name}"
    return type(x).__name__ if type(x) in (bool, int, float, complex) else f"numpy.{np.dtype(type(x)).name}"
