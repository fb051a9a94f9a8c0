"""Python's operators on Tracers (`+`, `@`, `**`, `<`, `-x`, `x += y`, divmod), attached to the
Tracer class when this module is imported (trace/__init__.py imports it), as jitkernel.numpy's
modules attach ndarray methods: tracer.py stays below the in-place machinery
(trace/inplace.py) and the checks of Python-int arithmetic (trace/python_int.py).

Between arrays an operator is NumPy's ufunc. Between two values that stand for Python scalars
the result is a Python scalar too, with Python's bool -> int promotion and, for Python ints,
run-time checks where int64 cannot hold Python's exact result.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from .inplace import INPLACE_OPERATORS, augmented_assign
from .numpy_api import NUMPY
from .python_int import CHECKED_OPERATIONS, checked_python_int_op
from .tracer import Tracer, _scalar_type_name


def _jnp():
    return NUMPY.namespace  # registered by jitkernel.numpy (trace/numpy_api.py)


def _is_python_scalar(x: Any) -> bool:
    """A Python scalar, or a Tracer standing for one (np.float64 is a float subclass: excluded)."""
    return type(x) in (bool, int, float, complex) or (isinstance(x, Tracer) and x.weak is not None)


# Python promotes bool to int for arithmetic (True + True == 2); NumPy's bool loops would not.
_BOOL_STAYS_BOOL = {"bitwise_and", "bitwise_or", "bitwise_xor", "equal", "not_equal", "less",
                    "less_equal", "greater", "greater_equal"}


def _weak_result(t: Any) -> Any:
    """Mark a result as a Python scalar (an operator applied to Python scalars only)."""
    if not isinstance(t, Tracer):
        return t
    kind = {"b": bool, "i": int, "u": int, "f": float, "c": complex}[t.dtype.kind]
    return Tracer(t._ctx, t.ir_var, kind)


def _python_int(x: Any) -> Any:
    if type(x) is bool:
        return int(x)
    if isinstance(x, Tracer) and x.weak is bool:
        return Tracer(x._ctx, _jnp().astype(x, np.int64).ir_var, int)
    return x


def _python_scalar_op(name: str, a: Any, b: Any) -> Any:
    """`a OP b` where both stand for Python scalars: the result is a Python scalar too, with
    Python's bool -> int promotion. Between two Python ints the int64 result is checked at run
    time where Python's unbounded int could leave int64 (trace/python_int.py); floats follow
    float64 (ZeroDivisionError of `/` is not modelled; see docs/numpy-support.md)."""
    if name not in _BOOL_STAYS_BOOL or not (dtype_is_bool(a) and dtype_is_bool(b)):
        a, b = _python_int(a), _python_int(b)
    result = _weak_result(getattr(_jnp(), name)(a, b))
    if _both_python_ints(a, b) and isinstance(result, Tracer) and result.weak is int:
        if name in CHECKED_OPERATIONS:
            return checked_python_int_op(name, a, b, result)
    return result


def _both_python_ints(*xs: Any) -> bool:
    return all(type(x) is int or (isinstance(x, Tracer) and x.weak is int) for x in xs)


def dtype_is_bool(x: Any) -> bool:
    return type(x) is bool or (isinstance(x, Tracer) and x.weak is bool)


def _is_numpy_scalar(x: Any) -> bool:
    return (isinstance(x, Tracer) and x.ndim == 0 and x.scalar) or type(x) in (bool, int, float, complex) \
        or isinstance(x, np.generic)


def _binary(name: str, reflected: bool = False):
    def method(self: Tracer, other: Any) -> Any:
        if isinstance(other, (list, tuple)):
            other = np.asarray(other)
        elif not isinstance(other, (Tracer, np.ndarray, np.generic, bool, int, float, complex)):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        if name == "matmul" and _is_numpy_scalar(a) and _is_numpy_scalar(b):
            # NumPy scalars have no `@` (0-d arrays raise ValueError in np.matmul instead).
            raise TypeError(f"unsupported operand type(s) for @: '{_scalar_type_name(a)}' and '{_scalar_type_name(b)}'")
        if self.weak is not None and _is_python_scalar(other):
            return _python_scalar_op(name, a, b)
        if name == "power":
            return _power_operator(a, b)
        return getattr(_jnp(), name)(a, b)
    return method


def _power_operator(base: Any, exponent: Any) -> Any:
    """`base ** exponent` as NumPy's operator computes it. ndarray.__pow__ and __ipow__ (number.c,
    fast_scalar_power, NumPy 2.4) take a Python int 2 as np.square for every dtype (bool ** 2 is
    int8), and for float arrays a Python int -1 as np.reciprocal and a Python float 0.5 as
    np.sqrt (-inf ** 0.5 is nan); anything else (NumPy scalars, bools, other values) is
    np.power. Between NumPy (or Python) scalars it is NumPy's scalar math: C pow, no fast path."""
    jnp = _jnp()
    if _is_numpy_scalar(base) and _is_numpy_scalar(exponent):
        apply_ufunc = NUMPY.apply_ufunc
        return apply_ufunc(np.power, base, exponent)
    if not isinstance(base, Tracer):  # 2 ** array: the array's __rpow__, never a fast scalar power
        return jnp.power(base, exponent)
    is_float = base.dtype.kind in "fc"  # NumPy's fast paths take complex arrays as well
    if type(exponent) is int and -2**63 <= exponent < 2**63:
        if exponent == 2:
            return jnp.square(base)
        if exponent == -1 and is_float:
            return jnp.reciprocal(base)
    elif type(exponent) is float and exponent == 0.5 and is_float:
        return jnp.sqrt(base)
    elif isinstance(exponent, Tracer) and exponent.weak in (int, float):
        return _power_by_traced_python_scalar(base, exponent)
    return jnp.power(base, exponent)


def _power_by_traced_python_scalar(base: "Tracer", exponent: "Tracer") -> Any:
    """`array ** p` for a Python scalar argument `p`: NumPy picks square / reciprocal / sqrt by
    p's value on every call, so the program selects on it."""
    select_by_exponent = NUMPY.select_by_exponent
    jnp = _jnp()
    if base.dtype.kind == "b" and exponent.weak is int:
        raise UnsupportedOperationError(
            "bool_array ** n with a Python int argument n: NumPy's result dtype depends on n's value "
            "(int8 for n == 2, int64 otherwise); mark n static (static_argnames) or call np.power / np.square")
    if base.dtype.kind not in "fc":
        return jnp.power(base, exponent)  # int ** 2 is square in NumPy: the same values and dtype
    if exponent.weak is int:
        cases = [(2, jnp.square), (-1, jnp.reciprocal)]
    else:
        cases = [(0.5, jnp.sqrt)]
    return select_by_exponent(exponent, base, cases, lambda b, e: jnp.power(b, e))


def _inplace(stem: str):
    def method(self: Tracer, other: Any) -> Any:
        return augmented_assign(self, other, stem)
    method.__name__ = f"__i{stem}__"
    return method


def _unary(name: str):
    def method(self: Tracer) -> Any:
        if self.weak is not None:
            x = _python_int(self)
            result = _weak_result(getattr(_jnp(), name)(x))
            if result.weak is int and name in ("negative", "absolute"):  # -(-2**63) leaves int64
                return checked_python_int_op(name, x, None, result)
            return result
        return getattr(_jnp(), name)(self)
    return method


for _op, _fn in {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
                 "floordiv": "floor_divide", "mod": "remainder", "pow": "power",
                 "matmul": "matmul", "and": "bitwise_and", "or": "bitwise_or",
                 "xor": "bitwise_xor", "lshift": "left_shift", "rshift": "right_shift"}.items():
    setattr(Tracer, f"__{_op}__", _binary(_fn))
    setattr(Tracer, f"__r{_op}__", _binary(_fn, reflected=True))
for _op in INPLACE_OPERATORS:
    setattr(Tracer, f"__i{_op}__", _inplace(_op))
for _op, _fn in {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                 "gt": "greater", "ge": "greater_equal"}.items():
    setattr(Tracer, f"__{_op}__", _binary(_fn))
Tracer.__neg__ = _unary("negative")
Tracer.__pos__ = _unary("positive")
Tracer.__abs__ = _unary("absolute")
Tracer.__invert__ = _unary("invert")
Tracer.__divmod__ = lambda self, o: (self // o, self % o)
Tracer.__rdivmod__ = lambda self, o: (o // self, o % self)


def _integral(what: str):
    """`round(v)`, `math.floor(v)`, `math.ceil(v)`, `math.trunc(v)` of a traced Python int (or
    bool) is that int, still a Python int whose arithmetic is checked for overflow
    (trace/python_int.py). Anything else needs the concrete value, as `int()` does."""
    def method(self: Tracer, *ndigits: Any) -> Any:
        if self.weak in (int, bool) and self.ndim == 0 and all(d is None or (type(d) is int and d >= 0) for d in ndigits):
            return self if self.weak is int else _weak_result(_jnp().astype(self, np.int64))
        return self._no_scalar(what)
    method.__name__ = f"__{what}__"
    return method


Tracer.__round__ = _integral("round")
Tracer.__floor__ = _integral("floor")
Tracer.__ceil__ = _integral("ceil")
Tracer.__trunc__ = _integral("trunc")
