"""`int(x)` and `float(x)` of a traced scalar inside a compiled loop body or branch.

Python's `int()` must return a Python int, which a traced value cannot be, so outside converted
code it raises TracerIntegerConversionError (and a jitted function may then retrace with its
integer arguments static). Inside the body of a loop or `if` that autograph compiles, that error
would unroll the loop (or refuse it): `k = int((x - lo) / width)` in a histogram loop. There the
converted `int(x)` is a traced int64 that computes like a Python int (weak type), with Python's
rules at run time: a float is truncated toward zero, NaN raises ValueError and an infinity
OverflowError, as `int()` does; a value outside int64 raises OverflowError (Python's int has no
bound; jitkernel computes Python ints as int64). `float(x)` is the float64 value.

>>> import numpy as np, jitkernel as jk
>>> def histogram(a):
...     counts = np.zeros(4, dtype=np.int64)
...     for x in a:
...         counts[int(x * 4)] += 1
...     return counts
>>> jk.jit(histogram)(np.linspace(0, 0.99, 8)).tolist()
[2, 2, 2, 2]
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import numpy as jnp
from ..trace.context import current_context, user_frame_location
from ..trace.pending_checks import check
from ..trace.subtrace import SubTraceContext
from ..trace.tracer import Tracer

_INT64_LIMIT = float(2 ** 63)


def converts(fn: Any, args: tuple) -> bool:
    """Whether `fn(*args)` is an `int()` or `float()` of one traced real scalar inside a
    compiled loop body or branch, or of a traced Python scalar anywhere (`int(v)` of a Python
    int argument is that int: it stays a Python int, whose arithmetic is checked for overflow).
    Elsewhere Python's own call runs."""
    if fn is not builtins.int and fn is not builtins.float or len(args) != 1:
        return False
    x = args[0]
    return (isinstance(x, Tracer) and x.ndim == 0 and x.dtype.kind in "biuf"
            and (isinstance(current_context(), SubTraceContext) or x.weak is not None))


def convert(fn: Any, x: Tracer) -> Tracer:
    """The traced `fn(x)` (`converts(fn, (x,))` holds)."""
    if fn is builtins.float:
        return _weak(jnp.astype(x, np.float64), float)
    if x.dtype.kind == "f":
        where = user_frame_location()
        # (checks in a loop body or branch go into its error code: the loop stays native)
        x = check(x, jnp.isnan(x), "ValueError", f"cannot convert float NaN to integer (int() at {where})")
        x = check(x, jnp.isinf(x), "OverflowError", f"cannot convert float infinity to integer (int() at {where})")
        x = check(x, jnp.abs(jnp.trunc(x)) >= _INT64_LIMIT, "OverflowError",
                  f"int() of a value outside the int64 range at {where} (jitkernel computes Python ints as int64)")
        return _weak(jnp.astype(jnp.trunc(x), np.int64), int)
    if x.dtype == np.uint64:
        x = check(x, x > np.uint64(2 ** 63 - 1), "OverflowError",
                  f"int() of a value outside the int64 range at {user_frame_location()} (jitkernel computes "
                  "Python ints as int64)")
    return _weak(jnp.astype(x, np.int64), int)


def _weak(t: Tracer, kind: type) -> Tracer:
    """A traced value that computes like a Python `kind` (weak type)."""
    return Tracer(t._ctx, t.ir_var, kind)
