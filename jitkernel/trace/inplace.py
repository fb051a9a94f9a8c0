"""Augmented assignment (`x += y`, every in-place operator) on traced arrays.

NumPy updates `x` in place: the caller's array when `x` is an argument, every other name bound
to the same array (`b = a; a += 1` changes `b`), and every view sharing its memory. A traced
program cannot write back into its inputs yet, so an in-place update is only compiled when
nothing else can observe it; then it is computed as NumPy computes it (the target keeps its
dtype under `same_kind` casting and its shape) and the name is rebound to the result.

"Nothing else can observe it" is decided here, at trace time, from three facts:
- the target's memory token (`Tracer._mem`) is not an argument's (inputs and views of them);
- no other live Tracer shares that token (views are made by the movement primitives,
  `TraceContext.bind`), counted with `sys.getrefcount` on the token;
- no other reference holds the target itself (`b = a`), `sys.getrefcount` on the target
  against the count measured for a plain local at import (so it follows the interpreter).
A NumPy scalar (a 0-d result of a ufunc, reduction or integer index) and a Python scalar are
immutable: `s += y` rebinds `s`, exactly as in NumPy. Anything else raises InPlaceUpdateError,
never a silent difference.
"""
from __future__ import annotations

import operator
import sys
from typing import Any

import numpy as np

from ..errors import InPlaceUpdateError
from .context import user_frame_location, user_instruction, user_statement_target

# operator-method stem -> (symbol, NumPy ufunc name or "matmul")
INPLACE_OPERATORS = {
    "add": ("+=", "add"), "sub": ("-=", "subtract"), "mul": ("*=", "multiply"),
    "truediv": ("/=", "divide"), "floordiv": ("//=", "floor_divide"), "mod": ("%=", "remainder"),
    "pow": ("**=", "power"), "matmul": ("@=", "matmul"), "and": ("&=", "bitwise_and"),
    "or": ("|=", "bitwise_or"), "xor": ("^=", "bitwise_xor"), "lshift": ("<<=", "left_shift"),
    "rshift": (">>=", "right_shift"),
}
_UFUNC_TO_STEM = {ufunc: stem for stem, (_, ufunc) in INPLACE_OPERATORS.items()}
_DUMMY_WEAK = {bool: True, int: 1, float: 1.0}


class _Holder:
    __slots__ = ("_mem",)


def _refs_in_method(target: Any) -> int:
    return sys.getrefcount(target)


def _refs_of_token(holder: Any) -> int:
    return sys.getrefcount(holder._mem)


def _refs_of_out(inputs: tuple, kwargs: dict) -> int:
    return sys.getrefcount(kwargs["out"][0])


def _probe_update(target: Any, other: Any, stem: str) -> int:
    return _refs_in_method(target)  # the same call depth as augmented_assign


class _Probe:
    """Stands in for a Tracer while the reference counts of unshared targets are measured."""

    def __iadd__(self, other: Any) -> int:
        return _probe_update(self, other, "add")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> int:
        return _refs_of_out(inputs, kwargs)


def _calibrate() -> tuple[int, int, int]:
    """Reference counts of an unshared target, measured on this interpreter: a local updated by
    `x += y` (as Tracer.__iadd__ sees it), a memory token held by one Tracer, and a local
    ndarray updated by `a += tracer` (as __array_ufunc__ sees it)."""
    def local_update() -> int:
        p = _Probe()
        p += 1
        return p

    def local_array_update() -> int:
        a = np.zeros(1)
        a += _Probe()
        return a

    holder = _Holder()
    holder._mem = object()
    return local_update(), _refs_of_token(holder), local_array_update()


_LOCAL_REFS, _TOKEN_REFS, _ARRAY_REFS = _calibrate()


def _error(ctx_name: str, symbol: str, why: str) -> InPlaceUpdateError:
    target = user_statement_target() or "the target"
    return InPlaceUpdateError(
        f"in jitted function {ctx_name!r} at {user_frame_location()}: `{target} {symbol} ...` would update "
        f"`{target}` in place, but {why}. jitkernel cannot update arrays in place yet (writing back "
        f"is a later feature), and rebinding the name instead would silently differ from NumPy. "
        f"Write `{target} = {target} {symbol[:-1]} ...` and use (or return) the new value, or build the "
        "array with np.where / np.concatenate.")


def _why_shared(target: Any, refs: int) -> str | None:
    """Why an in-place update of Tracer `target` could be observed elsewhere; None if it cannot.
    `refs` is target's reference count measured at the same depth as the calibration."""
    if target._mem is not None and target._mem.argument:
        return "it is an argument of the jitted function (or a view of one), and NumPy would change the caller's array"
    if refs > _LOCAL_REFS:
        return "another variable or container refers to the same array, and NumPy would change it too"
    if target._mem is not None and _refs_of_token(target) > _TOKEN_REFS:
        return ("it shares memory with another array still in use (a view made by slicing, reshape, "
                "transpose, broadcast_to, ...), and NumPy would change both")
    return None


def _dummy(x: Any, ndim_limit: int | None = None) -> Any:
    """A one-element stand-in with x's dtype (or x itself for Python scalars), for asking NumPy
    which error an in-place operation raises."""
    from .tracer import Tracer
    if isinstance(x, Tracer):
        if x.weak is not None:
            return _DUMMY_WEAK[x.weak]
        return np.zeros((1,) * x.ndim, x.dtype)
    if isinstance(x, (np.ndarray, np.generic)):
        return np.zeros((1,) * x.ndim, x.dtype)
    if isinstance(x, (list, tuple)):
        a = np.asarray(x)
        return np.zeros((1,) * a.ndim, a.dtype)
    return x


def _numpy_verdict(stem: str, dtype: np.dtype, ndim: int, other: Any) -> None:
    """Raise what NumPy raises for `target OP= other` on these dtypes (casting errors such as
    `int_array /= 2`, OverflowError for a Python int that does not fit), if anything."""
    target = np.zeros((1,) * ndim, dtype)
    try:
        with np.errstate(all="ignore"):
            getattr(operator, f"i{stem}")(target, _dummy(other))
    except (TypeError, OverflowError):
        raise
    except (ValueError, ArithmeticError):
        pass  # shape errors are checked on the real shapes; values are not known here


def _numpy_shape(shape: tuple) -> str:
    """A shape as NumPy's messages print it: (2,3), (3,)."""
    return "(" + ",".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def _finish(result: Any, dtype: np.dtype, shape: tuple, stem: str) -> Any:
    """The in-place result: NumPy's shape rule (the output keeps the target's shape) and cast
    (the target keeps its dtype)."""
    from .tracer import Tracer
    if tuple(result.shape) != tuple(shape):
        if stem == "matmul" and len(result.shape) == len(shape):
            d = next(i for i, (a, b) in enumerate(zip(shape, result.shape)) if a != b)
            raise ValueError(f"matmul: Output operand 0 has a mismatch in its core dimension {d}, with gufunc "
                             f"signature (n?,k),(k,m?)->(n?,m?) (size {shape[d]} is different from {result.shape[d]})")
        raise ValueError(f"non-broadcastable output operand with shape {_numpy_shape(shape)} doesn't match the "
                         f"broadcast shape {_numpy_shape(result.shape)}")
    if result.dtype != dtype or result.weak is not None:
        from ..numpy._core import lift
        result = lift(result._ctx, result, dtype)
    if result.ndim == 0 and isinstance(result, Tracer):
        result = Tracer(result._ctx, result.ir_var)
        result.scalar = False  # still the 0-d array it updated
    return result


def augmented_assign(target: Any, other: Any, stem: str) -> Any:
    """`target OP= other` for a Tracer target (Tracer.__iadd__ and friends)."""
    from .tracer import Tracer
    binary = getattr(Tracer, f"__{stem}__")
    if target.weak is not None or (target.ndim == 0 and target.scalar):
        return binary(target, other)  # Python and NumPy scalars are immutable: NumPy rebinds too
    refs = _refs_in_method(target)  # first, alone: an argument being pushed would count too
    symbol = INPLACE_OPERATORS[stem][0]
    why = _why_shared(target, refs)
    if why is not None:
        raise _error(target._ctx.name, symbol, why)
    _numpy_verdict(stem, target.dtype, target.ndim, other)
    result = binary(target, other)
    if result is NotImplemented:
        return result
    return _finish(result, target.dtype, target.shape, stem)


def concrete_inplace_stem(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> str | None:
    """The operator stem if this __array_ufunc__ call is NumPy's own `a OP= tracer` on a concrete
    ndarray `a` (ndarray.__iadd__ calls the ufunc with out=(a,)), else None."""
    out = kwargs.get("out")
    stem = _UFUNC_TO_STEM.get(ufunc.__name__)
    if stem is None or not isinstance(out, tuple) or len(out) != 1 or not inputs or out[0] is not inputs[0]:
        return None
    if not isinstance(out[0], np.ndarray):
        return None
    opname, argrepr = user_instruction()
    return stem if opname == "BINARY_OP" and argrepr == INPLACE_OPERATORS[stem][0] else None


def concrete_augmented_assign(ctx: Any, stem: str, inputs: tuple, refs: int) -> Any:
    """`a OP= tracer` where `a` is a NumPy array made inside the function (a constant of the
    program): the name is rebound to the traced result when nothing else can see `a`."""
    array, other = inputs[0], inputs[1]
    symbol = INPLACE_OPERATORS[stem][0]
    if id(array) in ctx._const_ids:
        refs -= 1  # the trace's own keep-alive reference to a constant it captured earlier
    if user_instruction(following=True)[0] != "STORE_FAST":
        # `self.w += x`, `G += x` (global), `d[k] += x`: NumPy would change an array that lives
        # on after the call; rebinding would leave a traced value there instead.
        raise _error(ctx.name, symbol, "it is not a local variable of the function (an attribute, a container "
                                       "element or a global), and NumPy would change that array outside the call")
    if array.base is not None:
        raise _error(ctx.name, symbol, "it is a view of another NumPy array, which NumPy would change too")
    if not array.flags.writeable:
        raise ValueError("output array is read-only")
    if refs > _ARRAY_REFS:
        raise _error(ctx.name, symbol, "another variable or container refers to the same NumPy array, and NumPy "
                                       "would change it too")
    _numpy_verdict(stem, array.dtype, array.ndim, other)
    from .. import numpy as jnp
    fn = jnp.matmul if stem == "matmul" else getattr(jnp, INPLACE_OPERATORS[stem][1])
    result = fn(array, other)
    return _finish(result, array.dtype, array.shape, stem)
