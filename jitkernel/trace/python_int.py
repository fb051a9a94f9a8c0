"""Run-time checks that keep arithmetic between Python ints exact.

A Python int argument of a jitted function (and a `for i in range(...)` index) is traced as a
weak int64 (NEP 50). Between two Python ints, Python's arithmetic is unbounded: `v * 2` with
v = 2**62 is 2**63, which NumPy then refuses to store into an int64 array or returns as a
Python int. The compiled code computes in int64 and would wrap silently. So every operator
whose operands are both Python ints (the result is a Python int in plain Python) gets one
`raise_if` step that raises OverflowError where the exact result leaves int64, and Python's
ZeroDivisionError / ValueError where Python raises them (`v // 0`, `v << -1`) and int64
arithmetic would return a value. Arithmetic that involves an array or a NumPy scalar is
NumPy's and is not touched (it wraps or raises as NumPy does).

Inside a jk.lax loop body or branch (autograph's `for`, `while` and `if` on traced values) a
raise_if step would keep the loop Python-driven on the CPU backend, so there a check goes into
the body's error code, which the loop carries and raises after it (trace/pending_checks.py).

The checks are cheap: against a Python int constant (`i + 1`, `v * 2`, `v ** 3`) the traced
operand is compared with the bounds that keep the result in int64, computed at trace time;
between two traced values add/sub use the sign of the wrapped result and mul/pow a float64
estimate (no division)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .context import current_context
from .frames import user_frame_location
from .numpy_api import NUMPY
from .pending_checks import check, collects_checks
from .subtrace import in_loop
from .tracer import Tracer

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
_I64, _F64, _BOOL = np.dtype(np.int64), np.dtype(np.float64), np.dtype(np.bool_)

_SYMBOLS = {"add": "+", "subtract": "-", "multiply": "*", "floor_divide": "//", "remainder": "%",
            "power": "**", "left_shift": "<<", "right_shift": ">>", "negative": "-", "absolute": "abs"}
CHECKED_OPERATIONS = frozenset(_SYMBOLS)


def _jnp():
    return NUMPY.namespace  # registered by jitkernel.numpy (trace/numpy_api.py)


def _strong(x: Tracer) -> Tracer:
    """The same int64 value as an array scalar: NumPy's int64 arithmetic, no Python-int rules."""
    return Tracer(x._ctx, x.ir_var, None)


def _any(*conditions: Any) -> Any:
    jnp = _jnp()
    out = conditions[0]
    for c in conditions[1:]:
        out = jnp.logical_or(out, c)
    return out


def _outside(x: Tracer, lo: int, hi: int) -> Any:
    """Where traced int64 `x` is outside [lo, hi] (a side at or past int64's edge needs no
    test). None: never; True: always."""
    if lo > hi or lo > INT64_MAX or hi < INT64_MIN:
        return True
    jnp = _jnp()
    tests = []
    if lo > INT64_MIN:
        tests.append(jnp.less(x, np.int64(lo)))
    if hi < INT64_MAX:
        tests.append(jnp.greater(x, np.int64(hi)))
    return _any(*tests) if tests else None


def _fits(value: int) -> bool:
    return INT64_MIN <= value <= INT64_MAX


def _largest_exponent(base: int) -> int:
    """The largest e with base**e inside int64 (|base| >= 2; the e that fit are 0..e)."""
    e = 0
    while _fits(base ** (e + 1)):
        e += 1
    return e


def _root_bounds(k: int) -> tuple[int, int]:
    """[lo, hi]: the x with x**k inside int64 (k >= 2)."""
    hi = int(round(INT64_MAX ** (1.0 / k)))
    while hi ** k > INT64_MAX:
        hi -= 1
    while (hi + 1) ** k <= INT64_MAX:
        hi += 1
    lo = -hi
    if _fits((lo - 1) ** k):  # odd k: (-2)**63 == INT64_MIN fits
        lo -= 1
    return lo, hi


# ----------------------------------------------------------------------------- overflow
def _overflow_with_constant(name: str, x: Tracer, c: int, x_first: bool) -> Any:
    """Where `x OP c` (or `c OP x`) leaves int64, for a Python int constant c: a range test."""
    if name == "add":
        return _outside(x, INT64_MIN - c, INT64_MAX - c)
    if name == "subtract":
        return _outside(x, INT64_MIN + c, INT64_MAX + c) if x_first else _outside(x, c - INT64_MAX, c - INT64_MIN)
    if name == "multiply":
        if c == 0:
            return None
        return _outside(x, *_mul_bounds(c))
    if name == "floor_divide":
        if x_first:
            return _jnp().equal(x, np.int64(INT64_MIN)) if c == -1 else None
        return _jnp().equal(x, np.int64(-1)) if c == INT64_MIN else None
    if name == "power":
        if x_first:
            return _outside(x, *_root_bounds(c)) if c >= 2 else None
        return _outside(x, INT64_MIN, _largest_exponent(c)) if abs(c) >= 2 else None
    if name == "left_shift":
        if x_first:
            if c < 0:
                return None  # ValueError (below)
            return _outside(x, 0, 0) if c >= 64 else _outside(x, INT64_MIN >> c, INT64_MAX >> c)
        return _outside(x, INT64_MIN, _largest_shift(c)) if c != 0 else None
    return None


def _mul_bounds(c: int) -> tuple[int, int]:
    """[lo, hi]: the x with x * c inside int64 (c != 0)."""
    if c > 0:
        return -(-INT64_MIN // c), INT64_MAX // c  # ceil(MIN / c), floor(MAX / c)
    return -(INT64_MAX // -c), INT64_MIN // c  # ceil(MAX / c), floor(MIN / c)


def _largest_shift(c: int) -> int:
    e = 0
    while e < 64 and _fits(c << (e + 1)):
        e += 1
    return e


def _sign_differs(result: Tracer, estimate: Tracer) -> Any:
    jnp = _jnp()
    return jnp.not_equal(jnp.less(result, np.int64(0)), jnp.less(estimate, 0.0))


def _overflow_by_estimate(result: Tracer, estimate: Tracer) -> Any:
    """Overflow of an int64 product or power whose float64 value is `estimate` (a few ulps off):
    past 1.5 * 2**63 the exact value is past int64 too; below, it wraps at most once, which
    flips the sign of the wrapped result."""
    jnp = _jnp()
    return jnp.logical_or(jnp.greater_equal(jnp.absolute(estimate), 1.5 * 2.0**63), _sign_differs(result, estimate))


def _overflow_traced(name: str, a: Tracer, b: Tracer, r: Tracer) -> Any:
    """Where `a OP b` leaves int64, both operands traced; r is the wrapped int64 result."""
    jnp = _jnp()
    zero = np.int64(0)
    if name == "add":  # both operands' signs differ from the wrapped sum's
        return jnp.less(jnp.bitwise_and(jnp.bitwise_xor(a, r), jnp.bitwise_xor(b, r)), zero)
    if name == "subtract":
        return jnp.less(jnp.bitwise_and(jnp.bitwise_xor(a, b), jnp.bitwise_xor(a, r)), zero)
    if name == "multiply":
        return _overflow_by_estimate(r, jnp.multiply(jnp.astype(a, _F64), jnp.astype(b, _F64)))
    if name == "floor_divide":
        return jnp.logical_and(jnp.equal(a, np.int64(INT64_MIN)), jnp.equal(b, np.int64(-1)))
    if name == "power":
        # |a| <= 1 never overflows (and float pow loses the parity of huge odd exponents); a
        # negative exponent raises NumPy's ValueError instead.
        big_base = jnp.logical_or(jnp.greater(a, np.int64(1)), jnp.less(a, np.int64(-1)))
        checked = jnp.logical_and(big_base, jnp.greater_equal(b, zero))
        estimate = jnp.power(jnp.astype(a, _F64), jnp.astype(b, _F64))
        return jnp.logical_and(checked, _overflow_by_estimate(r, estimate))
    if name == "left_shift":
        wide = jnp.greater_equal(b, np.int64(64))
        shift = jnp.where(wide, np.int64(0), jnp.where(jnp.less(b, zero), zero, b))
        lost = jnp.not_equal(jnp.right_shift(r, shift), a)
        return jnp.logical_and(jnp.not_equal(a, zero), jnp.logical_or(wide, lost))
    return None


# ----------------------------------------------------------------------------- Python's own errors
def _python_errors(name: str, divisor: Any) -> tuple[str, str, Any] | None:
    """(exception, message, bad) of what Python raises for this operation's second operand:
    ZeroDivisionError for // and % by 0, ValueError for a negative shift count."""
    jnp = _jnp()
    if name in ("floor_divide", "remainder"):
        bad = jnp.equal(divisor, np.int64(0)) if isinstance(divisor, Tracer) else divisor == 0
        return "ZeroDivisionError", "integer division or modulo by zero", bad
    if name in ("left_shift", "right_shift"):
        bad = jnp.less(divisor, np.int64(0)) if isinstance(divisor, Tracer) else divisor < 0
        return "ValueError", "negative shift count", bad
    return None


def _raise_where(value: Tracer, bad: Any, exception: str, message: str) -> Tracer:
    """`value`, raising exception(message) where `bad`: a raise_if step, or in a loop body or
    branch a check of its error code (trace/pending_checks.py)."""
    if bad is None or bad is False:
        return value
    if bad is True or isinstance(bad, (bool, np.bool_)):
        bad = value._ctx.const(np.asarray(bool(bad)))
    out = check(value, bad, exception, message)
    return Tracer(out._ctx, out.ir_var, value.weak)


def _known_range(x: Any) -> tuple[int, int] | None:
    if not isinstance(x, Tracer):
        return int(x), int(x)
    return NUMPY.value_range(x)  # (numpy/_dynamic.py, registered by jitkernel.numpy: trace/numpy_api.py)


def _proved_to_fit(name: str, a: Any, b: Any) -> bool:
    """Whether the value ranges the trace knows (loop indices of static bounds and affine forms
    of them, numpy/_dynamic.py) keep `a OP b` inside int64: `i + 1`, `i * n` in a loop over
    range(n) need no check (a check in a loop body costs a carried error code)."""
    if name not in ("add", "subtract", "multiply", "negative", "absolute"):
        return False
    ra = _known_range(a)
    rb = (0, 0) if b is None else _known_range(b)
    if ra is None or rb is None:
        return False
    apply = {"add": lambda x, y: x + y, "subtract": lambda x, y: x - y, "multiply": lambda x, y: x * y,
             "negative": lambda x, y: -x, "absolute": lambda x, y: abs(x)}[name]
    return all(_fits(apply(x, y)) for x in ra for y in rb)  # the extremes are at the corners


def checked_python_int_op(name: str, a: Any, b: Any, result: Tracer) -> Tracer:
    """`result` (= `a OP b`, both Python ints, one traced, computed in int64), raising what
    Python would where int64 cannot hold its exact value. `b` is None for unary operators."""
    if _proved_to_fit(name, a, b):
        return result
    ctx = current_context()
    if in_loop(ctx) and not collects_checks(ctx):
        # A loop body nobody carries an error code through (a while loop's condition): a raise_if
        # step would keep the loop Python-driven (~500x slower), so it is not checked.
        return result
    where = user_frame_location()
    symbol = _SYMBOLS[name]
    sa = _strong(a) if isinstance(a, Tracer) else int(a)
    sb = _strong(b) if isinstance(b, Tracer) else (None if b is None else int(b))
    out = result
    if b is not None:
        errors = _python_errors(name, sb)
        if errors is not None:
            exc, message, bad = errors
            out = _raise_where(out, bad, exc, f"{message} (Python int `{symbol}` at {where})")
    if b is None:
        overflow = _jnp().equal(sa, np.int64(INT64_MIN))
    elif not isinstance(sb, Tracer):
        overflow = _overflow_with_constant(name, sa, sb, True)
    elif not isinstance(sa, Tracer):
        overflow = _overflow_with_constant(name, sb, sa, False) if name not in ("add", "multiply") \
            else _overflow_with_constant(name, sb, sa, True)
    else:
        overflow = _overflow_traced(name, sa, sb, _strong(result))
    if overflow is None:
        return out
    operation = f"`{symbol}`" if b is not None else f"`{symbol}(...)`" if name == "absolute" else "unary `-`"
    message = (f"Python int arithmetic ({operation}) went past int64 (-2**63 .. 2**63 - 1), which compiled "
               f"code cannot hold (Python's ints are unbounded), at {where}. Pass a NumPy integer "
               "(np.int64(v)) or an array to get NumPy's wrapping arithmetic")
    return _raise_where(out, overflow, "OverflowError", message)


def unchecked_index(start: Any, j: Any, step: Any) -> Any:
    """`start + j * step` for the loop machinery's own index arithmetic, which stays inside the
    range's int64 bounds by construction: int64 arithmetic without the checks, a Python int."""
    if not any(isinstance(x, Tracer) for x in (start, j, step)):
        return start + j * step
    jnp = _jnp()
    if isinstance(j, Tracer) or isinstance(step, Tracer):
        product = jnp.multiply(*(_strong(x) if isinstance(x, Tracer) else np.int64(x) for x in (j, step)))
    else:  # both known: wrapped here (NumPy scalars would warn about the overflow)
        product = np.int64(_wrapped(j * step))
    out = jnp.add(_strong(start) if isinstance(start, Tracer) else np.int64(start), product)
    return Tracer(out._ctx, out.ir_var, int)


def _wrapped(value: int) -> int:
    """`value` modulo 2**64, as an int64 holds it."""
    return (value - INT64_MIN) % 2**64 + INT64_MIN
