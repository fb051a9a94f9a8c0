"""Differentiation rules of the elementwise primitives: ufuncs, convert, select, fma, the complex
parts, plus the seed movement rules (broadcast_in_dim, reduce_sum, reshape, transpose).

Each primitive has a forward rule (tangents) and a reverse rule (cotangents); see ad.py for the
signatures and the complex convention (holomorphic rules multiply by f'(x), never conjugated).
Most ufuncs are described once, by their derivative, in `UNARY_DERIVATIVES` (f'(x) from the
input x and the output y) and `BINARY_PARTIALS` (the (co)tangent g scaled by each partial
derivative): a forward rule computes `t * f'(x)`, a reverse rule `ct * f'(x)`, which is the
transpose under the pairing Re(sum(a * b)) for real and holomorphic functions alike. The values
at singular points follow JAX 0.10.2 as measured (docs/transformations.md, "Differentiation
rules"); the derivatives are built from primitives that have rules themselves, so every order
can be taken.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..ir.primitives import BINARY_UFUNCS, UNARY_UFUNCS
from ..trace.tracer import Tracer
from . import ops
from .ad import REFUSED, ZERO_DERIVATIVE, register_jvp, register_vjp


def _primal(prim: str, primals: list[Tracer], params: dict) -> list[Tracer]:
    return ops.bind(prim, *primals, **params)


def _c(x: Tracer, value: float) -> Tracer:
    """`value` as an array of x's shape and dtype."""
    return ops.scalar_like(x, value)


def _f(prim: str, *xs: Tracer) -> Tracer:
    return ops.bind1(prim, *xs)


def _sel(pred: Tracer, like: Tracer, if_true: float, if_false: float) -> Tracer:
    """`if_true` where `pred` holds, else `if_false`, of like's shape and dtype."""
    return ops.select(pred, _c(like, if_true), _c(like, if_false))


def _zeros_if_none(t: Tracer | None, like: Tracer) -> Tracer:
    return ops.zeros_like(like) if t is None else t


# --- primitives without a tangent: piecewise constant, or integer/bool results ------------------

ZERO_DERIVATIVE.update(dict.fromkeys(("sign", "floor", "ceil", "trunc", "rint", "floor_divide"),
                                     "zero tangent: piecewise constant"))


def _inexact_results(ufunc: np.ufunc) -> bool:
    """Whether some loop of the NumPy ufunc returns floats or complex numbers."""
    return any(np.dtype(out).kind in "fc" for t in ufunc.types if "O" not in t for out in t.split("->")[1])


# Comparisons, isnan, bitwise and logical ufuncs: every loop NumPy has returns integers or bools.
ZERO_DERIVATIVE.update({name: "no tangent: integer or bool results" for name in UNARY_UFUNCS + BINARY_UFUNCS
                        if not _inexact_results(getattr(np, name))})
ZERO_DERIVATIVE.update(dict.fromkeys(("argmax", "argmin", "argsort", "argpartition", "searchsorted", "digitize"),
                                     "no tangent: integer index results"))
ZERO_DERIVATIVE.update(dict.fromkeys(("reduce_and", "reduce_or"), "no tangent: bool results"))
ZERO_DERIVATIVE["iota"] = "no tangent: no operands (a constant of the derivative)"
REFUSED["complex_library"] = ("made after differentiation by the complex lowering pass "
                              "(passes/complex_lower.py): a traced program never holds it")


# --- add / subtract / negative / multiply (linear or bilinear: no derivative tables) ------------

@register_jvp("add")
def _add_jvp(primals, tangents):
    return _primal("add", primals, {}), [ops.add_any(*tangents)]


@register_vjp("add")
def _add_vjp(cts, primals, outs):
    return [cts[0], cts[0]]


@register_jvp("subtract")
def _sub_jvp(primals, tangents):
    ta, tb = tangents
    return _primal("subtract", primals, {}), [ops.add_any(ta, None if tb is None else ops.neg(tb))]


@register_vjp("subtract")
def _sub_vjp(cts, primals, outs):
    return [cts[0], ops.neg(cts[0])]


@register_jvp("negative")
def _neg_jvp(primals, tangents):
    return _primal("negative", primals, {}), [ops.neg(tangents[0])]


@register_vjp("negative")
def _neg_vjp(cts, primals, outs):
    return [ops.neg(cts[0])]


@register_jvp("multiply")
def _mul_jvp(primals, tangents):
    a, b = primals
    ta, tb = tangents
    return _primal("multiply", primals, {}), [ops.add_any(None if ta is None else ops.mul(ta, b),
                                                          None if tb is None else ops.mul(a, tb))]


@register_vjp("multiply")
def _mul_vjp(cts, primals, outs):
    a, b = primals
    return [ops.mul(cts[0], b), ops.mul(a, cts[0])]


# --- unary ufuncs: f'(x) from the input x and the output y --------------------------------------

def _one_over(d: Callable[[Tracer, Tracer], Tracer]) -> Callable[[Tracer, Tracer], Tracer]:
    """The derivative 1 / d(x, y)."""
    return lambda x, y: ops.div(_c(x, 1), d(x, y))


def _abs_real(x: Tracer, y: Tracer) -> Tracer:
    # JAX: select(x >= 0, g, -g), so abs'(0) = abs'(-0.0) = 1 (measured, JAX 0.10.2)
    return _sel(_f("greater_equal", x, _c(x, 0)), x, 1, -1)


UNARY_DERIVATIVES: dict[str, Callable[[Tracer, Tracer], Tracer]] = {
    "sqrt": lambda x, y: ops.div(_c(x, 0.5), y),  # sqrt'(0) = inf, as JAX
    "cbrt": lambda x, y: ops.div(_c(x, 1 / 3), ops.mul(y, y)),
    "exp": lambda x, y: y,
    "exp2": lambda x, y: ops.mul(y, _c(x, math.log(2))),
    "expm1": lambda x, y: ops.add(y, _c(x, 1)),
    "log": _one_over(lambda x, y: x),
    "log1p": _one_over(lambda x, y: ops.add(x, _c(x, 1))),
    "log2": _one_over(lambda x, y: ops.mul(x, _c(x, math.log(2)))),
    "log10": _one_over(lambda x, y: ops.mul(x, _c(x, math.log(10)))),
    "sin": lambda x, y: _f("cos", x),
    "cos": lambda x, y: ops.neg(_f("sin", x)),
    "tan": lambda x, y: ops.add(_c(x, 1), ops.mul(y, y)),
    "arcsin": _one_over(lambda x, y: _f("sqrt", ops.sub(_c(x, 1), ops.mul(x, x)))),
    "arccos": lambda x, y: ops.div(_c(x, -1), _f("sqrt", ops.sub(_c(x, 1), ops.mul(x, x)))),
    "arctan": _one_over(lambda x, y: ops.add(_c(x, 1), ops.mul(x, x))),
    "sinh": lambda x, y: _f("cosh", x),
    "cosh": lambda x, y: _f("sinh", x),
    "tanh": lambda x, y: ops.sub(_c(x, 1), ops.mul(y, y)),
    "arcsinh": _one_over(lambda x, y: _f("sqrt", ops.add(ops.mul(x, x), _c(x, 1)))),
    # sqrt(x - 1) * sqrt(x + 1), not JAX's rsqrt((x - 1) * (x + 1)): the two differ in sign for
    # complex x with a negative real part, where only this one is the derivative of NumPy's
    # principal branch (checked by finite differences in the tests)
    "arccosh": _one_over(lambda x, y: ops.mul(_f("sqrt", ops.sub(x, _c(x, 1))), _f("sqrt", ops.add(x, _c(x, 1))))),
    "arctanh": _one_over(lambda x, y: ops.sub(_c(x, 1), ops.mul(x, x))),
    "square": lambda x, y: ops.mul(_c(x, 2), x),
    "reciprocal": lambda x, y: ops.neg(ops.mul(y, y)),
}


def _register_unary(prim: str, derivative: Callable[[Tracer, Tracer], Tracer]) -> None:
    @register_jvp(prim)
    def jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        (y,) = _primal(prim, primals, {})
        return [y], [ops.mul(t, derivative(x, y))]

    @register_vjp(prim)
    def vjp(cts, primals, outs):
        return [ops.mul(cts[0], derivative(primals[0], outs[0]))]


for _prim, _d in UNARY_DERIVATIVES.items():
    _register_unary(_prim, _d)


# --- absolute: real (select of the sign) and complex (|z|' is not holomorphic) ------------------

def _abs_complex_factor(x: Tracer, y: Tracer) -> Tracer:
    """conj(x) / |x| as a complex value, 0 at x == 0 (JAX: |x| replaced by 1 where it is 0)."""
    safe = ops.select(_f("equal", y, _c(y, 0)), _c(y, 1), y)
    return ops.div(_f("conjugate", x), ops.convert(safe, x.dtype))


@register_jvp("absolute")
def _abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    (y,) = _primal("absolute", primals, {})
    if x.dtype.kind == "c":  # d|z| = Re(conj(z) dz / |z|)
        return [y], [_f("real", ops.mul(t, _abs_complex_factor(x, y)))]
    return [y], [ops.mul(t, _abs_real(x, y))]


@register_vjp("absolute")
def _abs_vjp(cts, primals, outs):
    (x,), (y,), (ct,) = primals, outs, cts
    if x.dtype.kind == "c":  # the transpose of t -> Re(t c) is ct -> ct c
        return [ops.mul(ops.convert(ct, x.dtype), _abs_complex_factor(x, y))]
    return [ops.mul(ct, _abs_real(x, y))]


# --- binary ufuncs: the (co)tangent g scaled by each partial derivative -------------------------
# partial(g, a, b, out) -> g * d out / d a (or None: a zero derivative)

Partial = Callable[[Tracer, Tracer, Tracer, Tracer], "Tracer | None"]


# A partial derivative that is exactly 0 somewhere (the operand maximum did not choose, the base
# of x ** 0) selects the (co)tangent away there, never multiplies it by 0: an infinite cotangent
# (from 1 / x at x = 0 downstream) times 0 is NaN, where the derivative is 0 (finite differences,
# and JAX's own select-based rules for where, fmin and power).

def _only_where(mask: Tracer, g: Tracer) -> Tracer:
    """`g` where `mask` holds, exactly 0 elsewhere (even where g is infinite or NaN)."""
    return ops.select(mask, g, ops.zeros_like(g))


def _balanced(g: Tracer, which: Tracer, other: Tracer, out: Tracer) -> Tracer:
    """JAX's `_balanced_eq` for maximum/minimum: g where `which` was chosen, halved where the
    other operand was chosen too (a tie splits the gradient evenly), 0 elsewhere (NaN too)."""
    halved = ops.div(g, _sel(_f("equal", other, out), out, 2, 1))
    return _only_where(_f("equal", which, out), halved)


def _picked(g: Tracer, first_wins: Tracer, first: bool) -> Tracer:
    return _only_where(first_wins if first else _f("logical_not", first_wins), g)


def _fmax_first(a: Tracer, b: Tracer, prim: str) -> Tracer:
    """Where jnp.fmax/fmin picks the first operand: `(a > b) | isnan(b)` (ties go to b)."""
    return _f("logical_or", _f(prim, a, b), _f("isnan", b))


def _hypot_partial(g: Tracer, x: Tracer, h: Tracer) -> Tracer:
    # x / h, and 0.5 at the origin as JAX's jnp.hypot gives (measured: grad at (0, 0) = (0.5, 0.5))
    return ops.mul(g, ops.select(_f("equal", h, _c(h, 0)), _c(h, 0.5), ops.div(x, h)))


def _copysign_a(g, a, b, out):
    # JAX: where(signbit(b), -abs(a), abs(a)), with abs'(a) = select(a >= 0, 1, -1)
    return ops.mul(g, ops.mul(_sel(_f("signbit", b), b, -1, 1), _abs_real(a, out)))


def _pow_a(g, a, b, out):
    # y * x ** (y - 1), exactly 0 where y == 0 (x ** 0 is the constant 1; at x = 0 the product
    # would be 0 * inf = nan): at x = 0, y = 0 -> 0, 1 -> 1, 2 -> 0, 0.5 -> inf, as JAX. The 0 at
    # y == 0 stays the product y * x ** -1 where that is finite, so its derivative in y (the
    # mixed second derivative, 1/x) is the math's; JAX selects a constant 0 there and gets 0.
    # Only where x ** -1 or the (co)tangent is infinite or NaN is the 0 selected outright.
    zero_exponent = _f("equal", b, _c(b, 0))
    pw = _f("power", a, ops.sub(b, _c(b, 1)))
    pw = ops.select(_f("logical_and", zero_exponent, _f("logical_not", _f("isfinite", pw))), ops.zeros_like(pw), pw)
    finite_g = _f("logical_or", _f("logical_not", zero_exponent), _f("isfinite", g))
    return _only_where(finite_g, ops.mul(g, ops.mul(b, pw)))


def _pow_b(g, a, b, out):
    # log(x) * x ** y with log(0) replaced by log(1), as JAX (d/dy at x = 0 is 0 unless x**y = inf)
    safe = ops.select(_f("equal", a, _c(a, 0)), _c(a, 1), a)
    return ops.mul(g, ops.mul(_f("log", safe), out))


BINARY_PARTIALS: dict[str, tuple[Partial, Partial]] = {
    "divide": (lambda g, a, b, out: ops.div(g, b),
               lambda g, a, b, out: ops.neg(ops.div(ops.mul(g, a), ops.mul(b, b)))),
    "power": (_pow_a, _pow_b),
    "maximum": (lambda g, a, b, out: _balanced(g, a, b, out),
                lambda g, a, b, out: _balanced(g, b, a, out)),
    "minimum": (lambda g, a, b, out: _balanced(g, a, b, out),
                lambda g, a, b, out: _balanced(g, b, a, out)),
    "fmax": (lambda g, a, b, out: _picked(g, _fmax_first(a, b, "greater"), True),
             lambda g, a, b, out: _picked(g, _fmax_first(a, b, "greater"), False)),
    "fmin": (lambda g, a, b, out: _picked(g, _fmax_first(a, b, "less"), True),
             lambda g, a, b, out: _picked(g, _fmax_first(a, b, "less"), False)),
    "arctan2": (lambda g, a, b, out: ops.mul(g, ops.div(b, ops.add(ops.mul(a, a), ops.mul(b, b)))),
                lambda g, a, b, out: ops.mul(g, ops.div(ops.neg(a), ops.add(ops.mul(a, a), ops.mul(b, b))))),
    "hypot": (lambda g, a, b, out: _hypot_partial(g, a, out),
              lambda g, a, b, out: _hypot_partial(g, b, out)),
    "copysign": (_copysign_a, lambda g, a, b, out: None),
    # x - trunc(x / y) * y and x - floor(x / y) * y: d/dy is minus the quotient (JAX's values)
    "fmod": (lambda g, a, b, out: g,
             lambda g, a, b, out: ops.mul(g, ops.neg(_f("trunc", ops.div(a, b))))),
    "remainder": (lambda g, a, b, out: g,
                  lambda g, a, b, out: ops.mul(g, ops.neg(_f("floor", ops.div(a, b))))),
}


def _register_binary(prim: str, partials: tuple[Partial, Partial]) -> None:
    @register_jvp(prim)
    def jvp(primals, tangents):
        a, b = primals
        (out,) = _primal(prim, primals, {})
        terms = [None if t is None else d(t, a, b, out) for t, d in zip(tangents, partials)]
        return [out], [ops.add_any(*terms)]

    @register_vjp(prim)
    def vjp(cts, primals, outs):
        a, b = primals
        return [d(cts[0], a, b, outs[0]) for d in partials]


for _prim, _ps in BINARY_PARTIALS.items():
    _register_binary(_prim, _ps)


# --- fma (only after complex lowering, but differentiable like a * b + c) ------------------------

@register_jvp("fma")
def _fma_jvp(primals, tangents):
    a, b, c = primals
    ta, tb, tc = tangents
    out = _primal("fma", primals, {})
    return out, [ops.add_any(ops.add_any(None if ta is None else ops.mul(ta, b), None if tb is None else ops.mul(a, tb)), tc)]


@register_vjp("fma")
def _fma_vjp(cts, primals, outs):
    a, b, _ = primals
    return [ops.mul(cts[0], b), ops.mul(a, cts[0]), cts[0]]


# --- select / pad_fill / where_valid --------------------------------------------------------------

def _register_select(prim: str) -> None:
    @register_jvp(prim)
    def jvp(primals, tangents):
        pred, a, b = primals
        _, ta, tb = tangents
        return _primal(prim, primals, {}), [ops.bind1(prim, pred, _zeros_if_none(ta, a), _zeros_if_none(tb, b))]

    @register_vjp(prim)
    def vjp(cts, primals, outs):
        pred, a, _ = primals
        (ct,) = cts
        zero = ops.zeros_like(a)
        return [None, ops.bind1(prim, pred, ct, zero), ops.bind1(prim, pred, zero, ct)]


_register_select("select")
_register_select("pad_fill")  # select(mask, x, fill) over a symbolic length's padding


@register_jvp("where_valid")
def _where_valid_jvp(primals, tangents):
    mask, _ = primals
    return _primal("where_valid", primals, {}), [ops.bind1("where_valid", mask, tangents[1])]


@register_vjp("where_valid")
def _where_valid_vjp(cts, primals, outs):
    mask, x = primals  # the padding is read by nobody: no cotangent comes back from it
    return [None, ops.select(mask, cts[0], ops.zeros_like(x))]


# --- convert ----------------------------------------------------------------------------------
# real -> complex: the tangent becomes complex; the cotangent keeps the real part (JAX).
# complex -> real (NumPy keeps the real part): the tangent's real part; the cotangent c becomes
# c + 0j. `convert` of a complex value to a float dtype takes the real part, so one rule does all.

@register_jvp("convert")
def _convert_jvp(primals, tangents, *, dtype):
    out = ops.bind("convert", *primals, dtype=dtype)
    return out, [ops.convert(tangents[0], dtype) if out[0].dtype.kind in "fc" else None]


@register_vjp("convert")
def _convert_vjp(cts, primals, outs, *, dtype):
    (x,) = primals
    return [ops.convert(cts[0], x.dtype) if x.dtype.kind in "fc" else None]


# --- complex parts ------------------------------------------------------------------------------

@register_jvp("conjugate")
def _conj_jvp(primals, tangents):
    return _primal("conjugate", primals, {}), [_f("conjugate", tangents[0])]


@register_vjp("conjugate")
def _conj_vjp(cts, primals, outs):
    return [_f("conjugate", cts[0])]


@register_jvp("real")
def _real_jvp(primals, tangents):
    return _primal("real", primals, {}), [_f("real", tangents[0])]


@register_vjp("real")
def _real_vjp(cts, primals, outs):
    return [ops.convert(cts[0], primals[0].dtype)]  # Re(c Re(t)) = Re((c + 0j) t)


@register_jvp("imag")
def _imag_jvp(primals, tangents):
    return _primal("imag", primals, {}), [_f("imag", tangents[0])]


@register_vjp("imag")
def _imag_vjp(cts, primals, outs):
    ct = cts[0]  # Re(c Im(t)) = Re(-i c t): grad(imag)(z) = -1j, as JAX
    return [_f("make_complex", ops.zeros_like(ct), ops.neg(ct))]


@register_jvp("make_complex")
def _make_complex_jvp(primals, tangents):
    re, im = primals
    tr, ti = tangents
    return _primal("make_complex", primals, {}), [_f("make_complex", _zeros_if_none(tr, re), _zeros_if_none(ti, im))]


@register_vjp("make_complex")
def _make_complex_vjp(cts, primals, outs):
    ct = cts[0]  # Re(c (tr + i ti)) = Re(c) tr - Im(c) ti
    return [_f("real", ct), ops.neg(_f("imag", ct))]


# --- broadcast_in_dim / reduce_sum / dot_sum --------------------------------------------------------

@register_jvp("broadcast_in_dim")
def _bcast_jvp(primals, tangents, *, shape, broadcast_dimensions):
    p = dict(shape=shape, broadcast_dimensions=broadcast_dimensions)
    return _primal("broadcast_in_dim", primals, p), [ops.bind1("broadcast_in_dim", tangents[0], **p)]


@register_vjp("broadcast_in_dim")
def _bcast_vjp(cts, primals, outs, *, shape, broadcast_dimensions):
    return [ops.sum_to_aval(cts[0], primals[0].aval, broadcast_dimensions)]


def _register_sum(prim: str) -> None:
    @register_jvp(prim)
    def jvp(primals, tangents, *, axes):
        return _primal(prim, primals, dict(axes=axes)), [ops.bind1(prim, tangents[0], axes=axes)]

    @register_vjp(prim)
    def vjp(cts, primals, outs, *, axes):
        x = primals[0]
        kept = tuple(d for d in range(x.ndim) if d not in axes)
        return [ops.broadcast_in_dim(cts[0], x.shape, kept)]


_register_sum("reduce_sum")
_register_sum("dot_sum")  # a dot product's contraction over a symbolic length (ir/symdim_prims.py)


# --- reshape / transpose --------------------------------------------------------------------

@register_jvp("reshape")
def _reshape_jvp(primals, tangents, *, new_shape):
    return _primal("reshape", primals, dict(new_shape=new_shape)), [ops.bind1("reshape", tangents[0], new_shape=new_shape)]


@register_vjp("reshape")
def _reshape_vjp(cts, primals, outs, *, new_shape):
    return [ops.reshape(cts[0], primals[0].shape)]


@register_jvp("transpose")
def _transpose_jvp(primals, tangents, *, permutation):
    return (_primal("transpose", primals, dict(permutation=permutation)),
            [ops.bind1("transpose", tangents[0], permutation=permutation)])


@register_vjp("transpose")
def _transpose_vjp(cts, primals, outs, *, permutation):
    inverse = [0] * len(permutation)
    for i, p in enumerate(permutation):
        inverse[p] = i
    return [ops.transpose(cts[0], inverse)]
