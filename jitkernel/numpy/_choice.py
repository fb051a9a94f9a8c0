"""select, choose and piecewise: NumPy's ways of picking each element from one of several
arrays, written over the traced `where` (a `select` primitive per case), so derivatives flow
into the chosen case and batching comes with it.

- select(condlist, choicelist, default): NumPy's algorithm (numpy/lib/_function_base_impl.py):
  the result starts as `default` in result_type(*choices, default) (NEP 50 weak Python
  scalars) and each choice is written where its condition holds, the last first, so the first
  true condition wins. NumPy's ValueErrors (lengths, empty lists) and TypeErrors (a non-bool
  condition, no common dtype).
- choose(a, choices, mode): element i takes choices[a[i]][i] (everything broadcast); the
  choices' common dtype (a Python int cast into it unsafely, as NumPy); `a` cast to intp by
  NumPy's 'safe' rule (its TypeError). mode='raise' checks the indices at run time (NumPy's
  ValueError "invalid entry in choice array" from the call), 'wrap' takes them modulo
  len(choices), 'clip' clips them.
- piecewise(x, condlist, funclist): NumPy applies each function to x[cond], a data-dependent
  selection; inside jit each function is traced once on the whole of x (with the elements
  outside its condition replaced by one inside it, so a function undefined there, sqrt or
  log, gives neither NaN values nor NaN derivatives) and its results are kept where the
  condition holds. The functions must therefore work elementwise, as NumPy's examples do;
  n conditions take n or n + 1 functions (the last one "otherwise"), a constant instead of a
  function is stored as is, results are cast to x's dtype as `y[cond] = ...` casts them.

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda x: np.select([x < 0, x > 1], [-x, x * 10], default=0.5))(np.array([-2.0, 0.3, 4.0]))
array([ 2. ,  0.5, 40. ])
"""
from __future__ import annotations

import collections.abc
from typing import Any

import numpy as np

from ..trace.operands import broadcast_shapes, broadcast_to_shape, context_of, lift, result_type, shape_of
from ..trace.tracer import Tracer
from ._ufuncs import _where_operand, apply_ufunc, where
from ._reductions import argmax, any as _any
from ._shape import stack, ravel
from ._statistics import raise_if

__all__ = ["select", "choose", "piecewise"]


# ----------------------------------------------------------------------------- select

def _weak_or_array(ctx: Any, x: Any) -> Any:
    """NumPy's `x if type(x) in (int, float, complex) else np.asarray(x)`."""
    if type(x) in (int, float, complex) or (isinstance(x, Tracer) and x.weak in (int, float, complex)):
        return x
    t = lift(ctx, x)
    return lift(ctx, t, t.dtype) if t.weak is not None else t


def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """numpy.select: the choice of the first true condition, `default` where none is."""
    ctx = context_of(*condlist, *choicelist, default) if isinstance(condlist, (list, tuple)) else context_of(condlist)
    if ctx is None:
        return np.select(condlist, choicelist, default)
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    choices = [_weak_or_array(ctx, c) for c in choicelist] + [_weak_or_array(ctx, default)]
    try:
        dtype = result_type(*choices)
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") from None
    conds = [lift(ctx, c) for c in condlist]
    cond_shape = broadcast_shapes(*(c.shape for c in conds))
    choice_shape = broadcast_shapes(*(shape_of(c) for c in choices))
    for i, cond in enumerate(conds):
        if cond.dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    shape = cond_shape if not choice_shape else broadcast_shapes(cond_shape, choice_shape)
    result = broadcast_to_shape(ctx, lift(ctx, _where_operand(choices[-1], dtype), dtype), shape)
    for choice, cond in zip(choices[-2::-1], conds[::-1]):
        value = broadcast_to_shape(ctx, lift(ctx, _where_operand(choice, dtype), dtype), shape)
        result = where(broadcast_to_shape(ctx, cond, shape), value, result)
    result = lift(ctx, result)
    result.scalar = False  # np.full/copyto: an ndarray, 0-d included
    return result


# ----------------------------------------------------------------------------- choose

def _indices(ctx: Any, a: Any) -> Tracer:
    """`a` as intp, by NumPy's 'safe' casting rule (its TypeError for floats, uint64)."""
    t = lift(ctx, a)
    t = lift(ctx, t, t.dtype) if t.weak is not None else t
    intp = np.dtype(np.intp)
    if not np.can_cast(t.dtype, intp, "safe"):
        raise TypeError(f"Cannot cast array data from {t.dtype!r} to {intp!r} according to the rule 'safe'")
    return lift(ctx, t, intp)


def choose(a: Any, choices: Any, out: Any = None, mode: str = "raise") -> Any:
    """numpy.choose: choices[a[i]][i], every operand broadcast together."""
    ctx = context_of(a, *choices) if isinstance(choices, (list, tuple)) else context_of(a, choices)
    if ctx is None:
        return np.choose(a, choices, out=out, mode=mode)
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    if isinstance(choices, Tracer):
        choices = [choices[i] for i in range(choices.shape[0])]  # a traced array: its rows
    choices = [_weak_or_array(ctx, c) for c in choices]
    n = len(choices)
    if n == 0:
        raise ValueError("0-length sequence.")  # NumPy's PyArray_ConvertToCommonType
    dtype = result_type(*choices)
    index = _indices(ctx, a)
    shape = broadcast_shapes(index.shape, *(shape_of(c) for c in choices))
    index = broadcast_to_shape(ctx, index, shape)
    if mode == "wrap":
        index = apply_ufunc(np.remainder, index, n)
    elif mode == "clip":
        index = apply_ufunc(np.minimum, apply_ufunc(np.maximum, index, 0), n - 1)
    else:
        bad = apply_ufunc(np.logical_or, apply_ufunc(np.less, index, 0), apply_ufunc(np.greater_equal, index, n))
        index = raise_if(index, bad, "ValueError", "invalid entry in choice array")
    operands = [broadcast_to_shape(ctx, lift(ctx, _where_operand(c, dtype), dtype), shape) for c in choices]
    result = operands[0]
    for k in range(1, n):
        result = where(apply_ufunc(np.equal, index, k), operands[k], result)
    result = lift(ctx, result)
    result.scalar = False
    return result


# ----------------------------------------------------------------------------- piecewise

def _is_array_like(c: Any) -> bool:
    """NumPy's `isinstance(condlist[0], (list, ndarray))`: a Tracer counts as an ndarray unless
    it stands for a NumPy scalar (an element of a 1-d condition)."""
    if isinstance(c, Tracer):
        return not (c.ndim == 0 and c.scalar)
    return isinstance(c, (list, np.ndarray))


def _conditions(ctx: Any, x: Tracer, condlist: Any) -> list[Tracer]:
    """NumPy's promotion of one condition to a list, then asarray(condlist, dtype=bool)."""
    if np.isscalar(condlist) or (isinstance(condlist, Tracer) and condlist.ndim == 0) or (
            not _is_array_like(condlist[0]) and x.ndim != 0):
        condlist = [condlist]
    if isinstance(condlist, Tracer):
        return [lift(ctx, condlist[i], np.dtype(np.bool_)) for i in range(condlist.shape[0])]
    conds = [lift(ctx, lift(ctx, c), np.dtype(np.bool_)) if isinstance(c, Tracer)
             else lift(ctx, np.asarray(c, dtype=bool)) for c in condlist]
    if len({c.shape for c in conds}) > 1:  # NumPy's asarray of a ragged list
        raise ValueError("setting an array element with a sequence. The requested array has an inhomogeneous shape "
                         f"after 1 dimensions. The detected shape was ({len(conds)},) + inhomogeneous part.")
    return conds


def _inside(ctx: Any, x: Tracer, cond: Tracer) -> Tracer:
    """x with every element outside `cond` replaced by the first element inside it, so that a
    function defined only on its piece sees no value outside it (values or derivatives)."""
    if x.ndim == 0:
        return x
    flat_cond = ravel(broadcast_to_shape(ctx, cond, x.shape))
    first = ravel(x)[argmax(flat_cond)]
    return where(cond, x, first)


def piecewise(x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Any:
    """numpy.piecewise with elementwise functions (each traced once on the whole array)."""
    ctx = context_of(x, condlist, *(condlist if isinstance(condlist, (list, tuple)) else ()))
    if ctx is None:
        return np.piecewise(x, condlist, funclist, *args, **kw)
    t = lift(ctx, x)
    t = lift(ctx, t, t.dtype) if t.weak is not None else t
    n2 = len(funclist)
    conds = _conditions(ctx, t, condlist)
    n = len(conds)
    if n == n2 - 1:
        conds.append(apply_ufunc(np.logical_not, _any(stack(conds), axis=0)) if conds else
                     lift(ctx, np.ones((1,) + t.shape, bool)))
        n += 1
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = broadcast_to_shape(ctx, ctx.const(np.zeros((), t.dtype)), t.shape)
    for cond, func in zip(conds, funclist):
        if cond.shape != t.shape and not (cond.shape == (1,) + t.shape):
            raise IndexError(f"boolean index did not match indexed array along axis 0; size of axis is "
                             f"{t.shape[0] if t.ndim else 0} but size of corresponding boolean axis is "
                             f"{cond.shape[0] if cond.ndim else 0}")
        cond = cond if cond.shape == t.shape else cond[0]
        value = func(_inside(ctx, t, cond), *args, **kw) if isinstance(func, collections.abc.Callable) else func
        value = lift(ctx, value)
        if value.dtype != t.dtype:
            value = ctx.bind1("convert", value, dtype=t.dtype)  # y[cond] = value casts unsafely
        y = where(cond, broadcast_to_shape(ctx, value, t.shape), y)
    y = lift(ctx, y)
    y.scalar = False
    return y


piecewise.__jk_support__ = "partly: each function is traced once on the whole array (must work elementwise)"
