"""Tracer: the stand-in for an array while a function is traced. Operators, methods,
`__array_ufunc__` and `__array_function__` all record primitives via `jitkernel.numpy`."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import (TracerArrayConversionError, TracerBoolConversionError,
                      TracerIntegerConversionError, UnsupportedOperationError)
from ..ir import AType, Var
from .context import TraceContext, user_frame_location


def _jnp():
    from .. import numpy as jnp
    return jnp


class Tracer:
    """An abstract array (shape, dtype) inside a trace. `weak` is int/float/bool for values that
    came from Python scalars, which promote weakly as NEP 50 says."""

    __slots__ = ("_ctx", "ir_var", "weak")
    __array_priority__ = 1000

    def __init__(self, ctx: TraceContext, var: Var, weak: type | None = None) -> None:
        self._ctx = ctx
        self.ir_var = var
        self.weak = weak

    # -- abstract value -------------------------------------------------------------
    @property
    def aval(self) -> AType:
        return self.ir_var.aval

    @property
    def shape(self) -> tuple[int, ...]:
        return self.ir_var.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.ir_var.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return self.ir_var.aval.size

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
        raise TracerBoolConversionError(
            f"the truth value of a traced array {self.aval} is not known while tracing ({self._where()}). "
            "Python `if`, `while`, `and`, `or`, `not` and bool() need concrete values. Use "
            "np.where(cond, a, b) (or jitkernel.numpy.where) to choose elementwise, or pass the value "
            "as a static argument (jk.jit(f, static_argnums=...) / static_argnames=...) so it is "
            "known at trace time. Traced control flow (jitkernel.cond / while_loop / fori_loop / scan) "
            "is not available yet.")

    def _no_scalar(self, what: str) -> Any:
        raise TracerIntegerConversionError(
            f"{what}() of a traced array {self.aval} needs its concrete value, which is not known while "
            f"tracing ({self._where()}). Keep the value as an array, or make the argument static "
            "(static_argnums / static_argnames).")

    def __int__(self) -> int:
        return self._no_scalar("int")

    def __float__(self) -> float:
        return self._no_scalar("float")

    def __index__(self) -> int:
        return self._no_scalar("operator.index")

    def __complex__(self) -> complex:
        return self._no_scalar("complex")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TracerArrayConversionError(
            f"a traced array {self.aval} cannot be converted to a concrete NumPy array "
            f"({self._where()}); the NumPy function called here is probably not supported by jitkernel.")

    def tolist(self) -> Any:
        return self._no_scalar("tolist")

    def item(self, *args: Any) -> Any:
        return self._no_scalar("item")

    # -- NumPy protocols ----------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        from ..numpy._dispatch import apply_ufunc_protocol
        return apply_ufunc_protocol(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        from ..numpy._dispatch import apply_function_protocol
        return apply_function_protocol(func, args, kwargs)

    # -- indexing ---------------------------------------------------------------------
    def __getitem__(self, index: Any) -> "Tracer":
        from ..numpy._indexing import getitem
        return getitem(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        raise UnsupportedOperationError(
            f"in-place assignment x[...] = v on a traced array is not supported ({self._where()}); "
            "arrays inside jit are immutable: build the result with np.where or np.concatenate")

    # -- methods that mirror ndarray ---------------------------------------------------
    def astype(self, dtype: Any, copy: bool = True) -> "Tracer":
        return _jnp().astype(self, dtype)

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
        return _jnp().ravel(self, order)

    def copy(self) -> "Tracer":
        return self

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


def _binary(name: str, reflected: bool = False):
    def method(self: Tracer, other: Any) -> Any:
        if isinstance(other, (list, tuple)):
            other = np.asarray(other)
        elif not isinstance(other, (Tracer, np.ndarray, np.generic, bool, int, float)):
            return NotImplemented
        fn = getattr(_jnp(), name)
        return fn(other, self) if reflected else fn(self, other)
    return method


for _op, _fn in {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
                 "floordiv": "floor_divide", "mod": "remainder", "pow": "power",
                 "matmul": "matmul", "and": "bitwise_and", "or": "bitwise_or",
                 "xor": "bitwise_xor", "lshift": "left_shift", "rshift": "right_shift"}.items():
    setattr(Tracer, f"__{_op}__", _binary(_fn))
    setattr(Tracer, f"__r{_op}__", _binary(_fn, reflected=True))
for _op, _fn in {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                 "gt": "greater", "ge": "greater_equal"}.items():
    setattr(Tracer, f"__{_op}__", _binary(_fn))
Tracer.__neg__ = lambda self: _jnp().negative(self)
Tracer.__pos__ = lambda self: _jnp().positive(self)
Tracer.__abs__ = lambda self: _jnp().absolute(self)
Tracer.__invert__ = lambda self: _jnp().invert(self)
Tracer.__divmod__ = lambda self, o: (_jnp().floor_divide(self, o), _jnp().remainder(self, o))
