"""Lowering of the elementwise primitives to `jax.lax` / `jax.numpy`.

The graph IR's elementwise inputs already have the dtypes of NumPy's inner loop (tracing
inserted the casts), so each ufunc is `jax.numpy`'s function of the same name on operands of
one dtype; where NumPy's answer differs from XLA's (integer division by zero, shifts by the bit
width, float maximum's signed zeros, integer power, sign, integer reciprocal) the rule is
backends/semantic_rules.py's, translated by `LaxOps`. Float-to-integer casts follow x86's C
casts as NumPy does (ir/semantics.float_to_int_plan), never XLA's saturation.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from ...ir import semantics
from ...ir.primitives import BINARY_UFUNCS, UNARY_UFUNCS
from ..semantic_rules import rule_for
from . import accurate_math
from .rules import lax_rule, out_dtype
from .semantic_lax import LaxOps

# ufuncs whose jax.numpy function has another name
_JNP_NAME = {"absolute": "abs", "conjugate": "conj"}


def _semantic(prim: str):
    def lower(ctx, eqn, *xs):
        dt = np.dtype(xs[0].dtype)
        rule = rule_for(prim, dt)
        if rule is None:
            return [getattr(jnp, _JNP_NAME.get(prim, prim))(*xs)]
        g = LaxOps(dt, ctx.checks)
        operands = [x.astype(g.compute) for x in xs] if g.compute != dt else xs
        return [jnp.asarray(rule(g, *operands)).astype(out_dtype(eqn))]
    return lower


_RULED = {"floor_divide", "remainder", "fmod", "left_shift", "right_shift", "power", "sign", "reciprocal",
          "maximum", "minimum", "fmax", "fmin"}

for _name in UNARY_UFUNCS + BINARY_UFUNCS:
    if _name in _RULED:
        lax_rule(_name)(_semantic(_name))
    elif _name not in ("add", "subtract", "multiply", "divide", "absolute", "invert", "isnan", "isinf", "isfinite", "signbit",
                       "square", *accurate_math.FUNCTIONS):
        lax_rule(_name)(lambda ctx, eqn, *xs, _f=getattr(jnp, _JNP_NAME.get(_name, _name)): [_f(*xs)])


def _accurate(name: str):
    """float32 (and float16, computed in float32 and rounded as NumPy's loop does) through
    accurate_math.py: on a TPU v5e XLA's float32 log, log1p, log2, log10, tanh and inverse
    hyperbolic functions were 1e-5 to 6e-5 relative off (hundreds of ulp; np.log10 of float32 100
    gave 1.9999847). On tpu-interpret too, so that CI runs the chip's path."""
    def lower(ctx, eqn, x):
        if x.dtype in (jnp.float32, jnp.float16):
            return [accurate_math.FUNCTIONS[name](x.astype(jnp.float32)).astype(x.dtype)]
        return [getattr(jnp, name)(x)]
    return lower


for _name in accurate_math.FUNCTIONS:
    lax_rule(_name)(_accurate(_name))


@lax_rule("add")
def _add(ctx, eqn, a, b):
    """x + 0.0 where 0.0 is a constant: XLA's CPU code generation folds it into x, which is
    wrong for x = -0.0 (NumPy: -0.0 + 0.0 == +0.0; measured: the sum of a 0-d -0.0 came back
    -0.0). Written as the select it means instead (NaN stays NaN)."""
    for x, v in ((a, eqn.inputs[1]), (b, eqn.inputs[0])):
        c = ctx.constants.get(v)
        if c is not None and np.asarray(c).dtype.kind == "f" and not np.any(c) and not np.any(np.signbit(c)):
            return [jnp.where(x == 0, jnp.zeros((), x.dtype), x)]  # (operands have one shape)
    a, b = _opaque_constants(ctx, eqn, a, b)
    return [jnp.add(a, b)]


@lax_rule("subtract")
def _subtract(ctx, eqn, a, b):
    return [jnp.subtract(*_opaque_constants(ctx, eqn, a, b))]


def _opaque_constants(ctx, eqn, a, b):
    """A float constant operand of + or - behind an optimisation barrier: XLA's simplifier
    reassociates sums with constants ((x + 1) - 1 became x, x + 1 + 1 became x + 2), which
    rounds differently from NumPy's one operation at a time (found: (x + 1) - 1 of float32 1e-8
    gave 1e-8, NumPy 0.0, on tpu-interpret; the chip's XLA shares the simplifier)."""
    if not ctx.opaque_constants or not jnp.issubdtype(a.dtype, jnp.inexact):
        return a, b  # integer sums are exact modulo 2**n in any order; a Pallas kernel is op by op
    return tuple(lax.optimization_barrier(x) if ctx.constants.get(v) is not None else x
                 for x, v in zip((a, b), eqn.inputs))


@lax_rule("multiply")
def _multiply(ctx, eqn, a, b):
    """A float product rounded as NumPy rounds it. XLA's CPU compiler contracts `a * b + c` into
    one fused multiply-add, which NumPy never does (measured: 23% of random float64 inputs
    differ; NPBench's mandelbrot1 drifted to 2.6e-5). Adding a run-time -0.0 (exact for every
    value, and unknown to the compiler) gives the product its own rounding: a contraction can
    only fuse it with that addition, which is the product rounded once."""
    product = jnp.multiply(a, b)
    if ctx.negative_zero is None or not jnp.issubdtype(product.dtype, jnp.floating):
        return [product]
    return [product + ctx.negative_zero.astype(product.dtype)]


@lax_rule("divide")
def _divide(ctx, eqn, a, b):
    """Division by a constant stays a division: XLA's simplifier rewrites x / c into
    x * (1 / c), up to an ulp from NumPy's correctly rounded quotient (measured: float32 9 / 7).
    An optimisation barrier hides the constant from it, except for powers of two (exact)."""
    c = ctx.constants.get(eqn.inputs[1])
    if c is not None and np.asarray(c).dtype.kind in "fc" and not _all_powers_of_two(np.asarray(c)):
        b = lax.optimization_barrier(b)
    return [jnp.divide(a, b)]


def _all_powers_of_two(c: np.ndarray) -> bool:
    if c.dtype.kind != "f":
        return False
    mantissa, _ = np.frexp(c)
    return bool(np.all(np.abs(mantissa) == 0.5))


@lax_rule("absolute")
def _absolute(ctx, eqn, x):
    """Integer absolute value as two's-complement bit arithmetic, wrapping as NumPy's does
    (abs(int8(-128)) == -128): XLA's simplifier takes squares to be non-negative and rewrote
    abs(x * x) into x * x, wrong once the square wraps around (found by the random-program
    suite: int8 abs(square(x)) gave -15 for 15)."""
    dt = np.dtype(x.dtype)
    if dt.kind == "u" or dt.kind == "b":
        return [x]
    if dt.kind != "i":
        return [jnp.abs(x)]
    sign = lax.shift_right_arithmetic(x, jnp.asarray(8 * dt.itemsize - 1, dt))  # 0 or -1
    return [lax.sub(lax.bitwise_xor(x, sign), sign)]


@lax_rule("invert")
def _invert(ctx, eqn, x):
    return [jnp.logical_not(x) if x.dtype == jnp.bool_ else lax.bitwise_not(x)]


@lax_rule("square")
def _square(ctx, eqn, x):
    return [x * x]


@lax_rule("isnan", "isinf", "isfinite", "signbit")
def _float_tests(ctx, eqn, x):
    name = eqn.prim
    if not jnp.issubdtype(x.dtype, jnp.inexact):  # integers and bools are never NaN or infinite
        value = {"isnan": False, "isinf": False, "isfinite": True}.get(name)
        return [jnp.full(x.shape, value, bool) if value is not None else x < 0]
    return [getattr(jnp, name)(x)]


@lax_rule("conjugate", "real", "imag")
def _complex_parts(ctx, eqn, x):
    return [getattr(jnp, _JNP_NAME.get(eqn.prim, eqn.prim))(x)]


@lax_rule("make_complex")
def _make_complex(ctx, eqn, re, im):
    return [lax.complex(re, im)]


@lax_rule("fma")
def _fma(ctx, eqn, a, b, c):
    """a * b + c rounded once (complex multiply after passes/complex_lower.py, as NumPy's
    AVX-512 loops compute it). lax has no fused multiply-add: float32 goes through float64,
    where the product is exact (one rounding there, then to float32: a tie can round twice);
    float64 rounds the product and the sum separately (within an ulp)."""
    if a.dtype == jnp.float32:
        wide = a.astype(jnp.float64) * b.astype(jnp.float64) + c.astype(jnp.float64)
        return [wide.astype(jnp.float32)]
    return [a * b + c]


@lax_rule("select")
def _select(ctx, eqn, pred, a, b):
    return [lax.select(pred, a, b)]


@lax_rule("pad_fill")
def _pad_fill(ctx, eqn, mask, x, fill):
    return [lax.select(*jnp.broadcast_arrays(mask, x, fill))]


@lax_rule("where_valid")
def _where_valid(ctx, eqn, mask, x):
    return [jnp.where(mask, x, jnp.zeros((), x.dtype))]


@lax_rule("stop_gradient")
def _identity(ctx, eqn, x):
    return [x]


@lax_rule("convert")
def _convert(ctx, eqn, x):
    return [convert(x, np.dtype(x.dtype), out_dtype(eqn))]


def convert(x, src: np.dtype, dst: np.dtype):
    """NumPy's astype: bool of a value is `value != 0` (NaN is True), complex to real drops the
    imaginary part, float to integer is x86's truncating conversion (semantics.float_to_int_plan)."""
    if src == dst:
        return x
    if dst.kind == "b":
        return x != jnp.zeros((), x.dtype)
    if src.kind == "b" and dst.kind in "fc":
        # select, not convert: XLA's algebraic simplifier rewrites convert(bool) * x into
        # select(bool, x, 0) and convert(bool) / x into select(bool, 1 / x, 0), which loses
        # NumPy's False * inf == nan and False / False == nan (measured, JAX 0.10.2).
        return jnp.where(x, jnp.ones((), dst), jnp.zeros((), dst))
    if src.kind == "c" and dst.kind != "c":
        x, src = jnp.real(x), np.dtype(np.float32 if src == np.complex64 else np.float64)
    if src.kind != "f" or dst.kind not in "iu":
        return lax.convert_element_type(x, dst)
    plan = semantics.float_to_int_plan(src, dst)
    if src.itemsize == 2:
        x, src = x.astype(jnp.float32), np.dtype(np.float32)
    if plan[0] == "u64":
        two63 = jnp.asarray(2.0 ** 63, src)
        high = _signed_conversion(x - two63, src, 64) ^ jnp.asarray(np.int64(-(1 << 63)))
        wide = jnp.where(x >= two63, high, _signed_conversion(x, src, 64))
    else:
        wide = _signed_conversion(x, src, plan[1])
    return lax.convert_element_type(wide, dst)  # integer narrowing keeps the low bits


def _signed_conversion(x, src: np.dtype, width: int):
    """x86's truncating conversion to a signed `width`-bit integer: NaN and values outside the
    range give its minimum (XLA would saturate and give 0 for NaN)."""
    low, strict, high = semantics.signed_conversion_bounds(width, src)
    ok = ((x > low) if strict else (x >= low)) & (x < high)
    ity = jnp.dtype(f"int{width}")
    safe = jnp.where(ok, x, jnp.zeros((), x.dtype))
    return jnp.where(ok, lax.convert_element_type(safe, ity), jnp.asarray(-(1 << (width - 1)), ity))
