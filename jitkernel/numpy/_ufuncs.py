"""Elementwise functions: NumPy's ufuncs with NEP 50 promotion, broadcasting and casts made
explicit in the IR, plus where / clip / round / positive built from them."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ir.primitives import BINARY_UFUNCS, UNARY_UFUNCS, ufunc_loop
from ..trace.tracer import Tracer
from ..trace.operands import (WEAK_DEFAULT, broadcast_shapes, broadcast_to_shape, context_of, dtype_key,
                    lift, result_type, shape_of, weak_type)
from ..errors import UnsupportedOperationError
from ..trace.operands import unsupported_kwargs
from ..transforms.custom import power_with_fast_paths



def _loop_keys(args: tuple) -> list:
    """The operands' dtypes as NumPy's loop resolution takes them: Python scalars stay weak
    types (NEP 50) unless every operand is one (np.add(1, 2.0) is a float64 loop)."""
    keys = [dtype_key(a) for a in args]
    if all(isinstance(k, type) for k in keys):
        keys = [WEAK_DEFAULT[k] for k in keys]
    return keys


def ufunc_operands(ufunc: np.ufunc, *args: Any) -> tuple[list[Tracer], tuple[np.dtype, ...]]:
    """NumPy's inner loop for `ufunc(*args)`: the operands cast to the loop's input dtypes and
    broadcast to one shape, and the loop's output dtypes (NumPy's TypeError when it has none).
    A ufunc written over other operations (`composed_ufunc`) starts here, so its dtypes are
    NumPy's: `np.ldexp(float32, int64)` is a float32 loop, `np.gcd(int8, uint8)` an int16 one.

    (`np.heaviside(int8_array, 1)` is NumPy's float16 loop: both operands become float16.)
    """
    ctx = context_of(*args)
    in_dts, out_dts = ufunc_loop(ufunc, _loop_keys(args))
    shape = broadcast_shapes(*[shape_of(a) for a in args])
    return [broadcast_to_shape(ctx, lift(ctx, a, dt), shape) for a, dt in zip(args, in_dts)], out_dts


# Ufuncs written over other primitives (jitkernel/numpy/_ufuncs_*.py): name -> traced function.
# Their reduce / accumulate / reduceat / outer / at methods work as a primitive ufunc's do
# (numpy/_dispatch.py).
COMPOSED_UFUNCS: dict[str, Callable[..., Any]] = {}


def composed_ufunc(impl: Callable[..., Any]) -> Callable[..., Any]:
    """Register `impl` as numpy.<impl.__name__> inside a trace: the ufunc's keyword arguments
    are checked as a primitive ufunc's are (out= and where= go through the in-place machinery
    before this is called), NumPy itself runs when no operand is traced, and `impl` gets the
    operands as given (it calls `ufunc_operands` for NumPy's loop dtypes)."""
    name = impl.__name__
    uf = getattr(np, name)

    def fn(*args: Any, **kwargs: Any) -> Any:
        unsupported_kwargs(name, kwargs, out=None, where=True, casting="same_kind", order="K", dtype=None, subok=True)
        if len(args) != uf.nin:
            raise TypeError(f"{name}() takes from {uf.nin} to {uf.nin + uf.nout} positional arguments but {len(args)} were given")
        if context_of(*args) is None:
            return uf(*args)
        return impl(*args)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = impl.__doc__
    fn.__wrapped__ = impl
    COMPOSED_UFUNCS[name] = fn
    return fn


def apply_ufunc(ufunc: np.ufunc, *args: Any) -> Any:
    """Trace `ufunc(*args)`: resolve NumPy's loop for the operand dtypes (weak Python scalars
    included), cast and broadcast operands explicitly, and bind the ufunc's primitive."""
    ctx = context_of(*args)
    if ctx is None:
        return ufunc(*args)
    keys = _loop_keys(args)
    in_dts, out_dts = ufunc_loop(ufunc, keys)
    shape = broadcast_shapes(*[shape_of(a) for a in args])
    if ufunc.__name__ in _COMPARE_OUT_OF_RANGE:
        _check_bool_compare(args, keys)
        const = _compare_out_of_range(ufunc.__name__, args, in_dts)
        if const is not None:
            return broadcast_to_shape(ctx, ctx.const(np.asarray(const)), shape)
        by_value = _compare_integers_by_value(ctx, ufunc.__name__, args, in_dts, shape)
        if by_value is not None:
            return by_value
    ins = [broadcast_to_shape(ctx, lift(ctx, a, dt), shape) for a, dt in zip(args, in_dts)]
    # The result of a NumPy function is a strong array even when every operand was a Python
    # scalar (NEP 50): np.add(1, 2) is an int64. Tracer operators on Python scalars mark their
    # results weak themselves (trace/operators.py).
    outs = ctx.bind(ufunc.__name__, ins)
    return outs[0] if len(outs) == 1 else tuple(outs)


# "x OP v" is True for every integer x when v > the dtype's max (first) or v < its min (second).
_COMPARE_OUT_OF_RANGE = {"equal": (False, False), "not_equal": (True, True), "less": (True, False),
                         "less_equal": (True, False), "greater": (False, True), "greater_equal": (False, True)}
_SWAPPED = {"equal": "equal", "not_equal": "not_equal", "less": "greater", "less_equal": "greater_equal",
            "greater": "less", "greater_equal": "less_equal"}


def _check_bool_compare(args: tuple, keys: list) -> None:
    """A bool array compared with a Python int: NumPy compares by value only for integer arrays;
    with a bool array it converts the int to a C long, and one outside int64 raises."""
    if not any(isinstance(k, np.dtype) and k == np.bool_ for k in keys):
        return
    if any(isinstance(k, np.dtype) and k.kind in "iuf" for k in keys):
        return
    for a in args:
        if weak_type(a) is int and not isinstance(a, Tracer) and not -2**63 <= a < 2**63:
            raise OverflowError("Python int too large to convert to C long")


def _compare_out_of_range(name: str, args: tuple, in_dts: tuple) -> bool | None:
    """NumPy 2 compares an integer array with a Python int outside its dtype's range by value
    (uint8 array < 300 is all True, == -1 all False) instead of raising OverflowError: the
    result is a constant. None when no operand is such a Python int."""
    for i, (a, dt) in enumerate(zip(args, in_dts)):
        if weak_type(a) is int and not isinstance(a, Tracer) and dt.kind in "iu":
            info = np.iinfo(dt)
            if info.min <= a <= info.max:
                continue
            op = name if i == 1 else _SWAPPED[name]  # v OP x  ==  x SWAPPED(OP) v
            above, below = _COMPARE_OUT_OF_RANGE[op]
            return above if a > info.max else below
    return None


# "s OP u" for a negative signed s and any unsigned u (s is smaller than every u).
_NEGATIVE_LEFT = {"equal": False, "not_equal": True, "less": True, "less_equal": True,
                  "greater": False, "greater_equal": False}
_INT64, _UINT64 = np.dtype(np.int64), np.dtype(np.uint64)


def _compare_integers_by_value(ctx: Any, name: str, args: tuple, in_dts: tuple,
                               shape: tuple[int, ...]) -> Tracer | None:
    """NumPy compares integers by value, whatever their signedness: uint64 against a signed
    type has its own loop (no common dtype holds both ranges), and a Python int compares by
    value even outside the array's range (`int8_array < 1000` is all True). Casting both to
    one type would wrap, so such comparisons are traced as a sign test plus a comparison of
    the same width; every backend inherits it. None: the ordinary loop is exact."""
    if not all(dt.kind in "iu" for dt in in_dts):
        return None
    # A traced Python int is an int64 at run time (arguments of 2**63 or more are rejected):
    # compare its value, never a cast of it to the other operand's dtype.
    dts = [_INT64 if weak_type(a) is int and isinstance(a, Tracer) else dt for a, dt in zip(args, in_dts)]
    if dts == list(in_dts) and in_dts[0] == in_dts[1]:
        return None
    unsigned64 = [dt == _UINT64 for dt in dts]
    if not any(unsigned64) or all(unsigned64):
        # Both ranges fit in int64 (or both are uint64): compare there.
        common = _UINT64 if all(unsigned64) else _INT64
        ins = [broadcast_to_shape(ctx, lift(ctx, a, common), shape) for a in args]
        return ctx.bind1(name, *ins)
    u = 0 if unsigned64[0] else 1
    s = 1 - u
    signed = broadcast_to_shape(ctx, lift(ctx, args[s], _INT64), shape)
    unsigned = broadcast_to_shape(ctx, lift(ctx, args[u], _UINT64), shape)
    pair = [None, None]
    pair[u], pair[s] = unsigned, ctx.bind1("convert", signed, dtype=_UINT64)
    same_width = ctx.bind1(name, *pair)
    negative = ctx.bind1("less", signed, broadcast_to_shape(ctx, ctx.const(np.asarray(0, _INT64)), shape))
    # With the signed operand negative the answer is known: it is smaller than any uint64.
    when_negative = _NEGATIVE_LEFT[name if s == 0 else _SWAPPED[name]]
    if when_negative:
        return ctx.bind1("logical_or", negative, same_width)
    return ctx.bind1("logical_and", ctx.bind1("logical_not", negative), same_width)


def _make(name: str):
    uf = getattr(np, name)

    def fn(*args: Any, **kwargs: Any) -> Any:
        unsupported_kwargs(name, kwargs, out=None, where=True, casting="same_kind", order="K", dtype=None, subok=True)
        return apply_ufunc(uf, *args)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Traced numpy.{name}: same dtype rules (NEP 50), broadcasting and values as NumPy."
    return fn


UFUNC_FUNCTIONS = {name: _make(name) for name in UNARY_UFUNCS + BINARY_UFUNCS}


# NumPy's float32/float64 power loop (loops_umath_fp.dispatch.c.src, NumPy 2.4) computes an
# exponent that is one value for the whole inner loop (stride 0) with these instead of pow:
# `x ** 0.5` is sqrt (-inf -> nan, -0.0 -> -0.0), `x ** 2.0` is x * x (exact). float16 has no
# such path (HALF_power is powf). The value is compared in the loop dtype.
_POWER_FAST_PATHS = ((-1.0, "reciprocal"), (0.0, "ones"), (0.5, "sqrt"), (1.0, "copy"), (2.0, "square"))


def _stride_zero_exponent(x2: Any, out_shape: tuple) -> bool:
    """Whether NumPy's inner loop sees x2 with stride 0: a 0-d exponent, or a one-element one
    broadcast to a different shape. (A one-element array of the output's own shape has a real
    stride; a broadcast (n, 1) column varies per row and is computed with pow here, see
    docs/numpy-support.md.)"""
    shape = tuple(shape_of(x2))
    return int(np.prod(shape)) == 1 and (shape == () or shape != tuple(out_shape))


def _power_fast_op(name: str, base: Tracer) -> Tracer:
    if name == "ones":
        return broadcast_to_shape(base._ctx, base._ctx.const(np.ones((), base.dtype)), base.shape)
    if name == "copy":
        return _fresh(base)
    return apply_ufunc(getattr(np, name), base)


def _float_power_scalar_exponent(ctx: Any, x1: Any, x2: Any, dt: np.dtype, shape: tuple) -> Tracer:
    """numpy.power in a float32/float64 loop with a stride-0 exponent: NumPy's fast paths for
    exponents -1, 0, 0.5, 1, 2, decided at trace time for a known exponent and by selects on
    the exponent's value for a traced one (a Python scalar argument)."""
    base = broadcast_to_shape(ctx, lift(ctx, x1, dt), shape)
    if not isinstance(x2, Tracer):
        value = np.asarray(x2).astype(dt).reshape(())  # the value the loop compares
        for fast, name in _POWER_FAST_PATHS:
            if value == fast:
                return _power_fast_op(name, base)
        return apply_ufunc(np.power, base, broadcast_to_shape(ctx, lift(ctx, x2, dt), shape))
    exponent = broadcast_to_shape(ctx, lift(ctx, x2, dt), shape)
    return select_by_exponent(exponent, base, [(v, lambda b, n=n: _power_fast_op(n, b)) for v, n in _POWER_FAST_PATHS],
                              lambda b, e: apply_ufunc(np.power, b, e))


def select_by_exponent(exponent: Tracer, base: Tracer, cases: list, otherwise: Any) -> Tracer:
    """`cases` is [(value, fn)]: fn(base) where `exponent == value`, otherwise(base, exponent)
    elsewhere (value-dependent dispatch on a traced exponent, as NumPy decides per call).

    Differentiated, the selects would be wrong: a fast branch does not depend on the exponent
    (d/dp of x ** p would be 0 at p == 2) and the unselected branches' derivatives meet a zero
    cotangent (0 * inf: nan at x == 0, and for x < 0 through sqrt). So the dispatch is a
    custom_jvp function whose rule is power's own (transforms/custom.py, docs/transformations.md)."""
    if base.aval.is_symbolic or exponent.aval.is_symbolic or base.dtype.kind not in "fc":
        return _select_by_exponent(exponent, base, cases, otherwise)
    return power_with_fast_paths(lambda b, e: _select_by_exponent(e, b, cases, otherwise), base, exponent)


def _select_by_exponent(exponent: Tracer, base: Tracer, cases: list, otherwise: Any) -> Tracer:
    ctx = base._ctx
    result = otherwise(base, exponent)
    exponent = broadcast_to_shape(ctx, lift(ctx, exponent, exponent.dtype), result.shape)
    for value, fn in reversed(cases):
        target = broadcast_to_shape(ctx, ctx.const(np.asarray(value, exponent.dtype)), exponent.shape)
        hit = ctx.bind1("equal", exponent, target)
        result = ctx.bind1("select", hit, lift(ctx, fn(base), result.dtype), result)
    return result


def power(x1: Any, x2: Any, **kwargs: Any) -> Any:
    """numpy.power, with NumPy's float loop fast paths for a stride-0 exponent (see above)."""
    unsupported_kwargs("power", kwargs, out=None, where=True, casting="same_kind", order="K", dtype=None, subok=True)
    ctx = context_of(x1, x2)
    if ctx is None:
        return np.power(x1, x2)
    dt = ufunc_loop(np.power, _loop_keys((x1, x2)))[0][0]
    shape = broadcast_shapes(shape_of(x1), shape_of(x2))
    if dt in (np.float32, np.float64) and _stride_zero_exponent(x2, shape):
        return _float_power_scalar_exponent(ctx, x1, x2, dt, shape)
    return apply_ufunc(np.power, x1, x2)


UFUNC_FUNCTIONS["power"] = power


def isnat(x: Any, **kwargs: Any) -> Any:
    """numpy.isnat is defined for datetime64 and timedelta64 only, and a traced array is never
    one (jitkernel traces numbers and bools): NumPy's own TypeError, saying so."""
    if context_of(x) is None:
        return np.isnat(x, **kwargs)
    raise TypeError("ufunc 'isnat' is only defined for np.datetime64 and np.timedelta64 (jitkernel traces no "
                    "datetime arrays: compute with them outside the jitted function)")


def positive(x: Any) -> Any:
    """numpy.positive: a copy with the same dtype (bool is rejected, as NumPy does)."""
    ctx = context_of(x)
    if ctx is None:
        return np.positive(x)
    in_dts, _ = ufunc_loop(np.positive, [dtype_key(x) if not isinstance(dtype_key(x), type) else WEAK_DEFAULT[dtype_key(x)]])
    t = lift(ctx, x, in_dts[0])
    return _fresh(t) if isinstance(x, Tracer) and t.ir_var is x.ir_var else t


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """numpy.where(condition, x, y) (the one-argument form needs a dynamic shape: unsupported)."""
    if x is None or y is None:
        raise UnsupportedOperationError("numpy.where with one argument (nonzero) has a data-dependent shape; "
                                        "use where(condition, x, y)")
    ctx = context_of(condition, x, y)
    if ctx is None:
        return np.where(condition, x, y)
    dt = result_type(x, y)
    shape = broadcast_shapes(shape_of(condition), shape_of(x), shape_of(y))
    c = broadcast_to_shape(ctx, lift(ctx, condition, np.dtype(np.bool_)), shape)
    a = broadcast_to_shape(ctx, lift(ctx, _where_operand(x, dt), dt), shape)
    b = broadcast_to_shape(ctx, lift(ctx, _where_operand(y, dt), dt), shape)
    out = ctx.bind1("select", c, a, b)
    out.scalar = False  # numpy.where returns an ndarray, 0-d included; never weak (NEP 50)
    return out


def _where_operand(x: Any, dt: np.dtype) -> Any:
    """numpy.where converts a Python int operand to the result dtype unsafely (where(c, u8, -1)
    holds 255), where a ufunc would raise OverflowError: cast it here as NumPy does (a traced
    Python int argument too: a wrapping convert, no range check). NumPy takes any int in
    [-2**63, 2**64) as its 64-bit two's complement (where(c, 2**64 - 1, 7) is int64 -1) and
    raises OverflowError for the rest."""
    if weak_type(x) is int and dt.kind in "iu":
        if isinstance(x, Tracer):
            return x if x.dtype == dt else x._ctx.bind1("convert", x, dtype=dt)
        if not -2**63 <= x < 2**64:
            raise OverflowError("Python int too large to convert to C long")  # NumPy's own error
        return np.asarray(x % 2**64, dtype=np.uint64).astype(dt)
    return x


def _clip_bound(a: Any, bound: Any, is_min: bool, loop: np.dtype) -> Any:
    """NumPy 2's clip (_methods._clip) drops a Python int bound at or beyond an integer array's
    range (a min <= the dtype's min, a max >= its max): it cannot clip anything. A bound kept
    meets the loop dtype `loop` (the array's, or a wider one the other bound brings in)."""
    if bound is None or weak_type(bound) is not int:
        return bound
    dt = dtype_key(a)
    if isinstance(dt, type) or dt.kind not in "iu":
        return bound
    info = np.iinfo(dt)
    if isinstance(bound, Tracer):
        # A traced Python int argument: the same rule at run time. Clamp it to the dtype's
        # range on the side where it cannot clip, and range-check only the other side.
        if loop.kind in "iu":  # NumPy converts the kept bound to the loop dtype (OverflowError)
            bound._ctx.weak_int_cast(bound.ir_var, loop, check_below=not is_min, check_above=is_min)
        limit = int(info.min if is_min else info.max)
        if not -(1 << 63) <= limit < (1 << 63):
            return bound  # an int64 value never passes uint64's maximum
        clamped = apply_ufunc(np.maximum if is_min else np.minimum, bound, limit)
        # Still the user's Python int as far as promotion goes (NEP 50): clip(int8, s) is int8.
        return Tracer(clamped._ctx, clamped.ir_var, int)
    return None if (bound <= info.min if is_min else bound >= info.max) else bound


def clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, **kwargs: Any) -> Any:
    """numpy.clip as NumPy 2's _clip: positive(a) without bounds, minimum / maximum with one,
    and the 3-operand clip ufunc with both, whose dtype is resolved over all three operands at
    once (clip(bool, 0, float32) is float32, where maximum then minimum would give float64)."""
    ctx = context_of(a, a_min, a_max)
    if ctx is None:
        return np.clip(a, a_min, a_max, **kwargs)
    if out is not None:
        raise UnsupportedOperationError("numpy.clip: out= is not supported inside jit")
    lo = kwargs.pop("min", a_min)
    hi = kwargs.pop("max", a_max)
    t = lift(ctx, a)
    t = lift(ctx, t, t.dtype)  # numpy.clip takes asanyarray(a): `a` is never a weak scalar
    loop = _clip_loop_dtype(t, lo, hi)
    lo, hi = _clip_bound(t, lo, True, loop), _clip_bound(t, hi, False, loop)
    if lo is None and hi is None:
        # NumPy 2.1+ returns positive(a) (a copy; bool raises) when neither bound is given.
        return positive(t)
    if lo is None:
        return apply_ufunc(np.minimum, t, hi)
    if hi is None:
        return apply_ufunc(np.maximum, t, lo)
    dt = _clip_loop_dtype(t, lo, hi)
    shape = broadcast_shapes(shape_of(t), shape_of(lo), shape_of(hi))
    t, lo, hi = (broadcast_to_shape(ctx, lift(ctx, x, dt), shape) for x in (t, lo, hi))
    # NumPy's clip loop is min(max(x, lo), hi) with NaN propagating, in the resolved dtype.
    return apply_ufunc(np.minimum, apply_ufunc(np.maximum, t, lo), hi)


def _clip_loop_dtype(t: Tracer, lo: Any, hi: Any) -> np.dtype:
    """The loop dtype of clip's ufunc call: NumPy's clip ufunc over all three operands, or
    minimum / maximum when one bound is None (neither: t's own)."""
    if lo is None and hi is None:
        return t.dtype
    if lo is None or hi is None:
        ufunc, bound = (np.minimum, hi) if lo is None else (np.maximum, lo)
        return ufunc_loop(ufunc, [t.dtype, dtype_key(bound)])[0][0]
    return ufunc_loop(_CLIP_UFUNC, [dtype_key(x) for x in (t, lo, hi)])[0][0]


from numpy._core.umath import clip as _CLIP_UFUNC  # noqa: E402 - NumPy's 3-operand clip ufunc


def _fresh(t: Tracer) -> Tracer:
    """A new array computed from t (what a ufunc returns: native byte order, no shared memory,
    strong): an identity convert, which simplify removes after the byte-order analysis."""
    return t._ctx.bind1("convert", t, dtype=t.dtype)


def round(a: Any, decimals: int = 0, out: Any = None) -> Any:  # noqa: A001 - mirrors numpy.round
    """numpy.round: round half to even; `decimals` scales as NumPy does (x * 10**d, rint, / 10**d)."""
    ctx = context_of(a)
    if ctx is None:
        return np.round(a, decimals)
    t = lift(ctx, a)
    if t.dtype == np.bool_ and decimals != 0:
        # NumPy computes bool * 10**decimals into a bool output, which it refuses to cast: its own
        # error (a UFuncTypeError subclass) from a one-element stand-in.
        np.round(np.zeros(1, np.bool_), decimals)
        raise TypeError(f"numpy.round of a bool array with decimals={decimals}")  # if NumPy ever accepts it
    if t.dtype.kind in "iu":
        if decimals >= 0:
            return t
        raise UnsupportedOperationError("numpy.round of an integer array with negative decimals is not supported inside jit")
    if decimals == 0:
        return apply_ufunc(np.rint, t)
    if t.dtype.kind == "c":
        # NumPy rounds the real and imaginary parts as float arrays (`part * 10**d`, rint,
        # `/ 10**d`), not by complex arithmetic (a complex division by 100 would multiply by a
        # rounded 0.01).
        parts = (ctx.bind1("real", t), ctx.bind1("imag", t))
        return ctx.bind1("make_complex", *(round(p, decimals) for p in parts))
    if decimals > 0:
        f = 10.0 ** decimals
        return apply_ufunc(np.divide, apply_ufunc(np.rint, apply_ufunc(np.multiply, t, f)), f)
    f = 10.0 ** (-decimals)
    return apply_ufunc(np.multiply, apply_ufunc(np.rint, apply_ufunc(np.divide, t, f)), f)


around = round
