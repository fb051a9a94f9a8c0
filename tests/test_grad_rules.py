"""Differentiation rules of the core primitives (transforms/ad_elementwise.py, ad_structural.py):
every rule against central finite differences (`check_grads`, order 2, forward and reverse),
over dtypes and shapes (0-d and empty included), JAX's values at ties and singular points
(measured with JAX 0.10.2, recorded as numbers), compiled against interpreted gradients, and
functions that write into their arguments.

The broad sweeps run on the `interpret` backend (no LLVM compile per check)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel.transforms import ad

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)
SHAPES = [(), (0,), (3,), (2, 3)]


@pytest.fixture(autouse=True)
def interpret_backend():
    jk.config.update("default_backend", "interpret")
    yield
    jk.config.update("default_backend", "cpu")


def _uniform(rng, shape, dtype, lo, hi, sign=False):
    x = rng.uniform(lo, hi, shape)
    if sign:
        x = x * rng.choice([-1.0, 1.0], shape)
    return np.asarray(x, dtype)


def _complex(rng, shape, dtype):
    """Values away from every branch cut of the tested functions: |Im| in [0.3, 0.9]."""
    re = rng.uniform(-1, 1, shape)
    im = rng.uniform(0.3, 0.9, shape) * rng.choice([-1.0, 1.0], shape)
    return np.asarray(re + 1j * im, dtype)


# name -> (function, real domain (lo, hi, random sign), complex allowed)
UNARY = {
    "negative": (np.negative, (0.1, 2, True), True),
    "absolute": (np.abs, (0.1, 2, True), True),
    "sqrt": (np.sqrt, (0.2, 2, False), True),
    "cbrt": (np.cbrt, (0.2, 2, True), False),
    "exp": (np.exp, (0, 1.5, True), True),
    "exp2": (np.exp2, (0, 1.5, True), True),
    "expm1": (np.expm1, (0, 1.5, True), True),
    "log": (np.log, (0.2, 2, False), True),
    "log1p": (np.log1p, (-0.5, 2, False), True),
    "log2": (np.log2, (0.2, 2, False), True),
    "log10": (np.log10, (0.2, 2, False), True),
    "sin": (np.sin, (0, 3, True), True),
    "cos": (np.cos, (0, 3, True), True),
    "tan": (np.tan, (0, 1.2, True), True),
    "arcsin": (np.arcsin, (0, 0.9, True), True),
    "arccos": (np.arccos, (0, 0.9, True), True),
    "arctan": (np.arctan, (0, 3, True), True),
    "sinh": (np.sinh, (0, 2, True), True),
    "cosh": (np.cosh, (0, 2, True), True),
    "tanh": (np.tanh, (0, 2, True), True),
    "arcsinh": (np.arcsinh, (0, 2, True), True),
    "arccosh": (np.arccosh, (1.2, 3, False), True),
    "arctanh": (np.arctanh, (0, 0.9, True), True),
    "square": (np.square, (0, 2, True), True),
    "reciprocal": (np.reciprocal, (0.3, 2, True), True),
}
ZERO = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "sign": np.sign}


def _frac_away(rng, shape, dtype):
    """Values whose fractional part is in [0.2, 0.4] (no step of floor/rint/sign nearby)."""
    return np.asarray(rng.integers(-3, 3, shape) + rng.uniform(0.2, 0.4, shape), dtype)


def _distinct_pair(rng, shape, dtype):
    a = rng.uniform(-2, 2, shape)
    b = a + rng.choice([-1.0, 1.0], shape) * rng.uniform(0.2, 1, shape)
    return np.asarray(a, dtype), np.asarray(b, dtype)


def _nonzero(rng, shape, dtype):
    return _uniform(rng, shape, dtype, 0.3, 2, sign=True)


def _away_from_multiples(rng, shape, dtype):
    b = _uniform(rng, shape, dtype, 0.5, 2, sign=True)
    q = rng.integers(-3, 4, shape) + rng.uniform(0.2, 0.8, shape)
    return np.asarray(q * b, dtype), b


# name -> (function, pair generator, complex allowed)
BINARY = {
    "add": (np.add, _distinct_pair, True),
    "subtract": (np.subtract, _distinct_pair, True),
    "multiply": (np.multiply, _distinct_pair, True),
    "divide": (np.divide, lambda r, s, d: (_uniform(r, s, d, 0, 2, True), _nonzero(r, s, d)), True),
    "power": (np.power, lambda r, s, d: (_uniform(r, s, d, 0.3, 2), _uniform(r, s, d, 0, 2.5, True)), True),
    "maximum": (np.maximum, _distinct_pair, False),
    "minimum": (np.minimum, _distinct_pair, False),
    "fmax": (np.fmax, _distinct_pair, False),
    "fmin": (np.fmin, _distinct_pair, False),
    "arctan2": (np.arctan2, lambda r, s, d: (_nonzero(r, s, d), _nonzero(r, s, d)), False),
    "hypot": (np.hypot, lambda r, s, d: (_nonzero(r, s, d), _nonzero(r, s, d)), False),
    "copysign": (np.copysign, lambda r, s, d: (_nonzero(r, s, d), _nonzero(r, s, d)), False),
    "fmod": (np.fmod, _away_from_multiples, False),
    "remainder": (np.remainder, _away_from_multiples, False),
    "floor_divide": (np.floor_divide, _away_from_multiples, False),
}


def _complex_pair(name, rng, shape, dtype):
    if name == "power":  # base away from the negative real axis (the log's cut)
        return np.asarray(_complex(rng, shape, dtype) + 1.5, dtype), _complex(rng, shape, dtype)
    if name == "divide":
        return _complex(rng, shape, dtype), _complex(rng, shape, dtype)
    return _complex(rng, shape, dtype), _complex(rng, shape, dtype)


def _unary_args(name, rng, shape, dtype):
    if np.dtype(dtype).kind == "c":
        z = _complex(rng, shape, dtype)
        return np.asarray(z + 1.5, dtype) if name == "arccosh" and rng.random() < 0.3 else z
    lo, hi, sign = UNARY[name][1]
    return _uniform(rng, shape, dtype, lo, hi, sign)


# ----------------------------------------------------------------------------- every rule, once

@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_unary_rule(name, dtype):
    fun, _, complex_ok = UNARY[name]
    if np.dtype(dtype).kind == "c" and not complex_ok:
        pytest.skip("no complex loop")
    x = _unary_args(name, np.random.default_rng(0), (2, 3), dtype)
    jk.check_grads(fun, (x,), order=2)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_binary_rule(name, dtype):
    fun, pair, complex_ok = BINARY[name]
    if np.dtype(dtype).kind == "c" and not complex_ok:
        pytest.skip("not holomorphic / no complex loop")
    rng = np.random.default_rng(1)
    a, b = _complex_pair(name, rng, (2, 3), dtype) if np.dtype(dtype).kind == "c" else pair(rng, (2, 3), dtype)
    jk.check_grads(fun, (a, b), order=2)


@pytest.mark.parametrize("name", sorted(ZERO))
def test_zero_derivative(name):
    x = _frac_away(np.random.default_rng(2), (2, 3), np.float64)
    jk.check_grads(lambda x: ZERO[name](x) * x, (x,), order=2)
    assert np.all(np.asarray(jk.grad(lambda x: np.sum(ZERO[name](x)))(x)) == 0)
    assert "floor_divide" in ad.ZERO_DERIVATIVE and name in ad.ZERO_DERIVATIVE


# ----------------------------------------------------------------------------- hypothesis sweeps

@SETTINGS
@given(name=st.sampled_from(sorted(UNARY)), shape=st.sampled_from(SHAPES),
       dtype=st.sampled_from([np.float32, np.float64, np.complex64, np.complex128]), seed=st.integers(0, 2**16))
def test_unary_sweep(name, shape, dtype, seed):
    if np.dtype(dtype).kind == "c" and not UNARY[name][2]:
        dtype = np.float64
    x = _unary_args(name, np.random.default_rng(seed), shape, dtype)
    jk.check_grads(UNARY[name][0], (x,), order=2)


@SETTINGS
@given(name=st.sampled_from(sorted(BINARY)), shape=st.sampled_from(SHAPES),
       dtype=st.sampled_from([np.float32, np.float64, np.complex128]), seed=st.integers(0, 2**16),
       broadcast=st.booleans())
def test_binary_sweep(name, shape, dtype, seed, broadcast):
    fun, pair, complex_ok = BINARY[name]
    if np.dtype(dtype).kind == "c" and not complex_ok:
        dtype = np.float32
    rng = np.random.default_rng(seed)
    a, b = _complex_pair(name, rng, shape, dtype) if np.dtype(dtype).kind == "c" else pair(rng, shape, dtype)
    if broadcast and a.ndim:  # a 0-d second operand: broadcast_in_dim's rule sums it back
        b = b.reshape(-1)[:1].reshape(()) if b.size else b
        if b.ndim == 0 and name in ("fmod", "remainder", "floor_divide"):
            a = np.asarray((np.floor(a / b) + 0.5) * b, a.dtype)
    jk.check_grads(fun, (a, b), order=2)


REDUCTIONS = {
    "sum": lambda x, ax: np.sum(x, axis=ax),
    "prod": lambda x, ax: np.prod(x, axis=ax),
    "max": lambda x, ax: np.max(x, axis=ax),
    "min": lambda x, ax: np.min(x, axis=ax),
    "mean": lambda x, ax: np.mean(x, axis=ax),
}


@SETTINGS
@given(name=st.sampled_from(sorted(REDUCTIONS)), shape=st.sampled_from([(4,), (2, 3), (3, 1, 4), (0, 3), (2, 0)]),
       axis=st.sampled_from([None, 0, -1, (0, 1)]), dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 2**16), zeros=st.integers(0, 2))
def test_reduction_sweep(name, shape, axis, dtype, seed, zeros):
    if isinstance(axis, tuple) and len(shape) < 2:
        axis = 0
    if name in ("max", "min") and 0 in shape:
        return  # no identity: NumPy raises
    rng = np.random.default_rng(seed)
    x = rng.permutation(np.linspace(0.5, 2.0, int(np.prod(shape)))).reshape(shape)  # distinct: no ties
    if name == "prod" and x.size:
        x.reshape(-1)[rng.choice(x.size, min(zeros, x.size), replace=False)] = 0.0  # exact zeros
    jk.check_grads(lambda x: REDUCTIONS[name](x, axis), (x.astype(dtype),), order=2)


def test_reduce_prod_complex():
    z = _complex(np.random.default_rng(3), (2, 3), np.complex128)
    z[0, 1] = 0
    jk.check_grads(lambda z: np.prod(z, axis=1), (z,), order=2)


MOVEMENT = {
    "broadcast": lambda x: x[:, None, :] * np.ones((1, 2, 1)),
    "reshape": lambda x: x.reshape(-1, 1),
    "transpose": lambda x: x.T * 1.5,
    "slice_negative_steps": lambda x: x[::-1, ::-2] ** 2,
    "slice_empty": lambda x: x[1:1] * 2,
    "concatenate": lambda x: np.concatenate([x, 2 * x[:, :1], x[:, ::-1] ** 2], axis=1),
    "pad_constant": lambda x: np.pad(x, 2) ** 2,
    "pad_edge": lambda x: np.pad(x, ((1, 0), (2, 1)), mode="edge") ** 2,
    "pad_reflect": lambda x: np.pad(x, 1, mode="reflect") ** 2,
    "iota": lambda x: x * np.arange(x.shape[-1]),
    "where": lambda x: np.where(x > 1.0, x ** 2, -x),
    "argmax_mixed": lambda x: x * np.argmax(x, axis=-1)[..., None],
    "int_convert": lambda x: x * np.arange(x.shape[-1]).astype(x.dtype),
    "dtype_convert": lambda x: (x.astype(np.float64) ** 2).astype(x.dtype),
}


def _update_slice_fn(x):
    y = np.zeros((3, 4)) + x.sum()
    y[1:, ::-2] = x[:, 1:3] * 3
    return y ** 2


def _inplace_index(x):
    y = x.copy()
    y[0] *= 2
    y[:, 1] = np.sin(y[:, 2])
    return y


MOVEMENT["update_slice"] = _update_slice_fn
MOVEMENT["inplace_index"] = _inplace_index


@pytest.mark.parametrize("name", sorted(MOVEMENT))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_movement_rule(name, dtype):
    x = np.random.default_rng(4).uniform(0.5, 2, (2, 3)).astype(dtype)
    jk.check_grads(MOVEMENT[name], (x,), order=2)


def test_update_slice_in_ir():
    prog = jk.make_ir(_update_slice_fn)(np.ones((2, 3)))
    assert "update_slice" in str(prog)


# ----------------------------------------------------------------------------- complex primitives

COMPLEX_FUNS = {
    "real": lambda z: np.real(z) * 2,
    "imag": lambda z: np.imag(z) ** 2,
    "conjugate": lambda z: np.conj(z) * (2 + 3j),
    "absolute": lambda z: np.abs(z) ** 3,
    "make_complex": lambda z: np.abs(np.real(z) + 1j * np.imag(z) ** 2),
    "real_to_complex": lambda z: np.real(z).astype(np.complex128) * (1 + 2j),
    "complex_to_real": lambda z: np.real(z * (1 - 1j)) ** 2,
}


@pytest.mark.parametrize("name", sorted(COMPLEX_FUNS))
@pytest.mark.parametrize("shape", [(), (0,), (2, 3)])
def test_complex_rule(name, shape):
    z = _complex(np.random.default_rng(5), shape, np.complex128)
    jk.check_grads(COMPLEX_FUNS[name], (z,), order=2)


def test_make_complex_primitive():
    from jitkernel.transforms import ops

    def f(re, im):
        return jk.jit(lambda a, b: ops.bind1("make_complex", a, b) * (1 + 2j), backend="interpret")(re, im)
    re, im = np.array([0.5, -1.0]), np.array([2.0, 0.25])
    jk.check_grads(f, (re, im), order=2)
    assert "make_complex" in str(jk.make_ir(f)(re, im))


@pytest.mark.parametrize("prim", ["fma", "dot_sum", "pad_fill", "where_valid"])
def test_lowering_only_primitives(prim):
    """Primitives that only passes create (complex lowering, symbolic lengths): their rules are
    still checked, through a jitted function that binds them."""
    from jitkernel.transforms import ops

    def body(a, b, c):
        mask = ops.bind1("greater", a, b)
        if prim == "fma":
            return ops.bind1("fma", a, b, c)
        if prim == "dot_sum":
            return ops.bind1("dot_sum", ops.mul(a, b), axes=(1,))
        if prim == "pad_fill":
            return ops.bind1("pad_fill", mask, ops.mul(a, c), ops.mul(b, b))
        valid = ops.bind1("greater", c, ops.scalar_like(c, 1.0))  # where_valid's padding is read by nobody
        value = ops.bind1("where_valid", valid, ops.mul(a, b))
        return ops.select(valid, value, ops.zeros_like(value))
    f = jk.jit(body, backend="interpret")
    rng = np.random.default_rng(6)
    a, b, c = (rng.uniform(0.5, 2, (2, 3)) for _ in range(3))
    jk.check_grads(f, (a, b, np.abs(c)), order=2)


# ----------------------------------------------------------------------------- dot_general

EINSUMS = ["ij,jk->ik", "ij,kj->ik", "ji,jk->ik", "ji,kj->ki", "bij,bjk->bik", "ibj,kjb->bik", "i,i->",
           "ij,j->i", "ijk,jkl->il", "bi,bi->b", "ij,kl->ijkl", "bij,bkj->bki"]
_DIMS = dict(i=2, j=3, k=4, l=2, b=3)


@pytest.mark.parametrize("spec", EINSUMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_dot_general_rule(spec, dtype):
    rng = np.random.default_rng(7)
    ins = spec.split("->")[0].split(",")
    ops_ = []
    for s in ins:
        x = rng.standard_normal([_DIMS[c] for c in s])
        if np.dtype(dtype).kind == "c":
            x = x + 1j * rng.standard_normal(x.shape)
        ops_.append(x.astype(dtype))
    jk.check_grads(lambda a, b: np.einsum(spec, a, b), tuple(ops_), order=2)


def test_dot_general_cotangents_are_dot_generals():
    """The backward pass of a matmul is two dot_generals, with no transposes (the natural
    layout of each cotangent is the operand's)."""
    a, b = np.ones((2, 3)), np.ones((3, 4))
    prog = jk.make_ir(jk.grad(lambda a, b: np.sum(np.tanh(a @ b)), (0, 1)))(a, b)
    prims = [e.prim for e in prog.eqns]
    assert prims.count("dot_general") == 3 and "transpose" not in prims


@settings(max_examples=15, deadline=None, derandomize=True)
@given(m=st.integers(0, 3), k=st.integers(1, 3), n=st.integers(0, 3), batch=st.integers(0, 2),
       seed=st.integers(0, 2**16))
def test_matmul_sweep(m, k, n, batch, seed):
    rng = np.random.default_rng(seed)
    lead = (2,) * batch
    a, b = rng.standard_normal(lead + (m, k)), rng.standard_normal(lead + (k, n))
    jk.check_grads(lambda a, b: np.tanh(a @ b), (a, b), order=2)


# ----------------------------------------------------------------------------- JAX's known values
# Measured with JAX 0.10.2 (x64): jax.grad of the same expressions.

def _pow_g(x, y):
    """d/dx, d/dy of x ** y on arrays (an array exponent: one `power` equation)."""
    gx, gy = jk.grad(lambda a, b: np.sum(a ** b), (0, 1))(np.full(2, x), np.full(2, y))
    assert gx[0] == gx[1] or np.isnan(gx).all()
    return float(gx[0]), float(gy[0])


def _g(f, *args, argnums=0):
    out = jk.grad(f, argnums=argnums)(*args)
    return tuple(float(o) for o in out) if isinstance(out, tuple) else complex(out) if np.iscomplexobj(out) else float(out)


KNOWN = [
    ("maximum tie", lambda: _g(np.maximum, 1.0, 1.0, argnums=(0, 1)), (0.5, 0.5)),
    ("minimum tie", lambda: _g(np.minimum, 1.0, 1.0, argnums=(0, 1)), (0.5, 0.5)),
    ("maximum nan", lambda: _g(np.maximum, np.nan, 1.0, argnums=(0, 1)), (0.0, 0.0)),
    ("maximum(x, x)", lambda: _g(lambda x: np.maximum(x, x), 2.0), 1.0),
    ("fmax tie", lambda: _g(np.fmax, 1.0, 1.0, argnums=(0, 1)), (0.0, 1.0)),
    ("fmin tie", lambda: _g(np.fmin, 1.0, 1.0, argnums=(0, 1)), (0.0, 1.0)),
    ("fmax nan x", lambda: _g(np.fmax, np.nan, 1.0, argnums=(0, 1)), (0.0, 1.0)),
    ("fmax nan y", lambda: _g(np.fmax, 1.0, np.nan, argnums=(0, 1)), (1.0, 0.0)),
    ("abs 0", lambda: _g(np.abs, 0.0), 1.0),
    ("abs -0", lambda: _g(np.abs, -0.0), 1.0),
    ("abs complex 0", lambda: _g(np.abs, 0j), 0j),
    ("abs 3+4j", lambda: _g(np.abs, 3 + 4j), 0.6 - 0.8j),
    ("sqrt 0", lambda: _g(np.sqrt, 0.0), np.inf),
    ("cbrt 0", lambda: _g(np.cbrt, 0.0), np.inf),
    ("cbrt -8", lambda: _g(np.cbrt, -8.0), 1 / 12),
    ("log 0", lambda: _g(np.log, 0.0), np.inf),
    ("arcsin 1", lambda: _g(np.arcsin, 1.0), np.inf),
    ("arccos 1", lambda: _g(np.arccos, 1.0), -np.inf),
    ("arctanh 1", lambda: _g(np.arctanh, 1.0), np.inf),
    ("reciprocal 0", lambda: _g(np.reciprocal, 0.0), -np.inf),
    ("sqrt -1", lambda: _g(np.sqrt, -1.0), np.nan),
    ("power 0**2", lambda: _pow_g(0.0, 2.0), (0.0, 0.0)),
    # JAX 0.10.2: (nan, 0) (0 * inf); x ** 0 is the constant 1, so d/dx is 0 (tests/test_derivatives_at_special_points.py)
    ("power 0**0", lambda: _pow_g(0.0, 0.0), (0.0, 0.0)),
    ("power 0**1", lambda: _pow_g(0.0, 1.0), (1.0, 0.0)),
    ("power 0**0.5", lambda: _pow_g(0.0, 0.5), (np.inf, 0.0)),
    ("power 0**-1", lambda: _pow_g(0.0, -1.0), (-np.inf, np.nan)),
    ("power -2**3", lambda: _pow_g(-2.0, 3.0), (12.0, np.nan)),
    ("power 2**3", lambda: _pow_g(2.0, 3.0), (12.0, 5.545177444479562)),
    ("arctan2 0,0", lambda: _g(np.arctan2, 0.0, 0.0, argnums=(0, 1)), (np.nan, np.nan)),
    ("hypot 0,0", lambda: _g(np.hypot, 0.0, 0.0, argnums=(0, 1)), (0.5, 0.5)),
    ("hypot -0,0", lambda: _g(np.hypot, -0.0, 0.0, argnums=(0, 1)), (0.5, 0.5)),
    ("hypot 0,3", lambda: _g(np.hypot, 0.0, 3.0, argnums=(0, 1)), (0.0, 1.0)),
    ("hypot -3,0", lambda: _g(np.hypot, -3.0, 0.0, argnums=(0, 1)), (-1.0, 0.0)),
    ("copysign 0,-1", lambda: _g(np.copysign, 0.0, -1.0, argnums=(0, 1)), (-1.0, 0.0)),
    ("copysign -2,1", lambda: _g(np.copysign, -2.0, 1.0, argnums=(0, 1)), (-1.0, 0.0)),
    ("copysign -0,1", lambda: _g(np.copysign, -0.0, 1.0, argnums=(0, 1)), (1.0, 0.0)),
    ("fmod 7,2", lambda: _g(np.fmod, 7.0, 2.0, argnums=(0, 1)), (1.0, -3.0)),
    ("fmod -7,2", lambda: _g(np.fmod, -7.0, 2.0, argnums=(0, 1)), (1.0, 3.0)),
    ("remainder -7,2", lambda: _g(np.remainder, -7.0, 2.0, argnums=(0, 1)), (1.0, 4.0)),
    ("remainder 7,-2", lambda: _g(np.remainder, 7.0, -2.0, argnums=(0, 1)), (1.0, 4.0)),
    ("floor_divide", lambda: _g(np.floor_divide, 7.0, 2.0, argnums=(0, 1)), (0.0, 0.0)),
    ("divide 0/0", lambda: _g(np.divide, 0.0, 0.0, argnums=(0, 1)), (np.inf, np.nan)),
    ("divide 1/0", lambda: _g(np.divide, 1.0, 0.0, argnums=(0, 1)), (np.inf, -np.inf)),
    ("imag", lambda: _g(np.imag, 1 + 1j), -1j),
    ("real", lambda: _g(np.real, 1 + 1j), 1 + 0j),
    ("conj", lambda: _g(lambda z: np.real(np.conj(z) * (2 + 3j)), 1 + 1j), 2 - 3j),
    ("sqrt complex", lambda: _g(lambda z: np.real(np.sqrt(z)), 1 + 2j), 0.28443224050289156 - 0.17578879212707146j),
    ("convert r->c", lambda: _g(lambda x: np.imag(np.asarray(x).astype(np.complex128) * (2 + 3j)), 1.0), 3.0),
    ("tanh", lambda: _g(np.tanh, 0.5), 0.7864477329659274),
    ("expm1", lambda: _g(np.expm1, 1.0), 2.7182818284590455),
    ("log10", lambda: _g(np.log10, 2.0), 0.2171472409516259),
    ("log2", lambda: _g(np.log2, 2.0), 0.7213475204444817),
    ("exp2", lambda: _g(np.exp2, 1.0), 1.3862943611198906),
]


@pytest.mark.parametrize("case", KNOWN, ids=[k[0] for k in KNOWN])
def test_jax_known_value(case):
    _, compute, expected = case
    np.testing.assert_allclose(np.asarray(compute()), np.asarray(expected), rtol=1e-12, atol=1e-15)


def test_known_arrays():
    close = np.testing.assert_allclose
    close(jk.grad(np.max)(np.array([1.0, 3.0, 3.0, 3.0])), [0, 1 / 3, 1 / 3, 1 / 3])
    close(jk.grad(np.min)(np.array([1.0, 1.0, 3.0])), [0.5, 0.5, 0])
    close(jk.grad(np.max)(np.array([1.0, np.nan, 3.0])), [np.nan] * 3)
    close(jk.grad(np.prod)(np.array([2.0, 0.0, 3.0])), [0, 6, 0])
    close(jk.grad(np.prod)(np.array([2.0, 0.0, 0.0])), [0, 0, 0])
    close(jk.grad(lambda x: np.prod(x, axis=1).sum())(np.array([[2.0, 0.0, 3.0], [1.0, 2.0, 4.0]])),
          [[0, 6, 0], [8, 4, 2]])
    close(jk.grad(lambda z: np.sum(z.astype(np.float64)))(np.array([1 + 2j])), [1 + 0j])
    # the gradient of a product whose value underflows: no division by x (out / x would give 0)
    close(jk.grad(np.prod)(np.array([1e-200, 1e-200, 1e-100])), [1e-300, 1e-300, 0.0], rtol=1e-12)


def test_power_python_scalar_exponent():
    """`x ** p` with p a Python-scalar argument traces to NumPy's fast paths selected on p's value
    (numpy/_ufuncs.select_by_exponent); its derivative is power's (a custom_jvp), so the fast
    paths (p in -1, 0, 0.5, 1, 2) give the same derivatives as any other exponent."""
    for x, p, expected in [(0.0, 2.0, (0.0, 0.0)), (0.0, 1.0, (1.0, 0.0)), (0.0, 0.5, (np.inf, 0.0)),
                           (-2.0, 3.0, (12.0, np.nan)), (2.0, 3.0, (12.0, 5.545177444479562))]:
        np.testing.assert_allclose(_g(np.power, x, p, argnums=(0, 1)), expected, rtol=1e-12)
    x = np.array([1.5, 2.0, -0.5])
    for p in (-1.0, 0.0, 0.5, 1.0, 2.0, 3.0):
        gp = jk.grad(lambda p: np.sum(np.abs(x) ** p))(p)
        np.testing.assert_allclose(gp, np.sum(np.log(np.abs(x)) * np.abs(x) ** p), rtol=1e-12)
        jk.check_grads(lambda x, p: x ** p, (np.abs(x) + 0.1, p), order=2)
    for n in (-1, 2, 3):  # a Python int exponent (trace/tracer.py): square / reciprocal by value
        jk.check_grads(lambda x, n: x ** n, (np.array([0.5, -1.5]), n), order=2)
    jk.check_grads(lambda x, p: np.sum(x ** p), (np.array([0.5, 1.5], np.float32), 2.0), order=2)
    xs = np.array([[1.0, 2.0], [0.5, 3.0]])  # vmap of the custom call (a batched base, a shared p)
    np.testing.assert_allclose(jk.vmap(jk.grad(lambda x, p: np.sum(x ** p), 1), in_axes=(0, None))(xs, 2.0),
                               np.sum(np.log(xs) * xs ** 2, axis=1), rtol=1e-12)


def test_max_ties_second_order_and_axes():
    x = np.array([[1.0, 2.0, 2.0], [5.0, 5.0, 5.0]])
    np.testing.assert_allclose(jk.grad(lambda x: np.sum(np.max(x, axis=1)))(x), [[0, 0.5, 0.5], [1 / 3] * 3])
    np.testing.assert_allclose(jk.jvp(lambda x: np.max(x, axis=1), (x,), (np.ones_like(x),))[1], [1.0, 1.0])


# ----------------------------------------------------------------------------- compiled == interpreted

COMPILED = {
    "tanh_mlp": (lambda w, x: np.sum(np.tanh(x @ w) ** 2), lambda r: (r.standard_normal((3, 2)), r.standard_normal((4, 3)))),
    "softmax_ce": (lambda z, y: -np.sum(y * (z - np.log(np.sum(np.exp(z), axis=1, keepdims=True)))),
                   lambda r: (r.standard_normal((4, 3)), np.eye(3)[[0, 2, 1, 0]])),
    "maximum_power": (lambda a, b: np.sum(np.maximum(a, b) ** 1.5 + np.abs(a - b)), lambda r: (r.uniform(0.5, 2, 5), r.uniform(0.5, 2, 5))),
    "prod_max": (lambda a, b: np.sum(np.prod(a, axis=0)) + np.max(a * b), lambda r: (r.uniform(-2, 2, (3, 2)), r.uniform(-2, 2, (3, 2)))),
    "slices_pad": (lambda a, b: np.sum(np.pad(a, 1)[::-1, 1:] ** 2) + np.sum(np.concatenate([a, b]) ** 3),
                   lambda r: (r.standard_normal((2, 3)), r.standard_normal((1, 3)))),
    "complex_abs": (lambda a, b: np.sum(np.abs(a + 1j * b) ** 2 + np.real(np.exp(1j * a))), lambda r: (r.standard_normal(4), r.standard_normal(4))),
}


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_jit_grad_cpu_matches_interpret(name):
    f, make = COMPILED[name]
    args = make(np.random.default_rng(8))
    g = jk.grad(f, argnums=(0, 1))
    compiled = jk.jit(g, backend="cpu")(*args)
    interpreted = jk.jit(g, backend="interpret")(*args)
    for c, i in zip(compiled, interpreted):
        np.testing.assert_allclose(c, i, rtol=1e-12, atol=1e-12)
    hvp = jk.jit(jk.grad(lambda a, b: np.sum(jk.grad(f)(a, b) ** 2)), backend="cpu")(*args)
    np.testing.assert_allclose(hvp, jk.jit(jk.grad(lambda a, b: np.sum(jk.grad(f)(a, b) ** 2)), backend="interpret")(*args),
                               rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- writes into arguments

def test_grad_of_copy_then_write():
    def f(x):
        x = x.copy()
        x[0] *= 2
        return np.sum(x ** 2)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(jk.grad(f)(x), [8.0, 4.0, 6.0])
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


@pytest.mark.filterwarnings("ignore:.*writes input")
def test_grad_of_function_writing_its_argument_leaves_caller_array():
    """Decision (docs/transformations.md): under grad/vjp/jvp the function is differentiated as
    the pure function it becomes, and the caller's array is not updated (jk.jit of the same
    function does update it)."""
    def f(x):
        x *= 2
        x[1] += 1
        return np.sum(x ** 2)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(jk.grad(f)(x), [8.0, 20.0, 24.0])
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(jk.jit(jk.grad(f), backend="cpu")(x), [8.0, 20.0, 24.0])
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    v, t = jk.jvp(f, (x,), (np.ones(3),))
    assert float(v) == 4 + 25 + 36 and float(t) == 2 * (2 * 2 + 5 * 2 + 6 * 2)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    jk.jit(f)(x)  # the jitted function itself writes the caller's array, as NumPy
    np.testing.assert_array_equal(x, [2.0, 5.0, 6.0])


# ----------------------------------------------------------------------------- the tests can fail

def test_a_wrong_rule_is_caught(monkeypatch):
    """A deliberately broken derivative (tanh' = 1 - y instead of 1 - y**2) fails check_grads."""
    from jitkernel.transforms import ad_elementwise, ops

    def broken(x, y):
        return ops.sub(ops.scalar_like(x, 1), y)
    saved = (ad.JVP_RULES.pop("tanh"), ad.VJP_RULES.pop("tanh"))
    try:
        ad_elementwise._register_unary("tanh", broken)
        x = np.array([0.3, -0.8])
        for mode in ("fwd", "rev"):
            with pytest.raises(jk.GradientCheckError):
                jk.check_grads(np.tanh, (x,), order=1, modes=(mode,))
    finally:
        ad.JVP_RULES["tanh"], ad.VJP_RULES["tanh"] = saved
    jk.check_grads(np.tanh, (np.array([0.3, -0.8]),), order=2)


def test_every_differentiable_core_primitive_has_both_rules():
    from jitkernel.ir.primitives import BINARY_UFUNCS, UNARY_UFUNCS
    float_valued = [p for p in UNARY_UFUNCS + BINARY_UFUNCS
                    if p not in ("logical_not", "invert", "isnan", "isinf", "isfinite", "signbit", "equal",
                                 "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
                                 "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
                                 "left_shift", "right_shift")]
    others = ["convert", "select", "fma", "real", "imag", "make_complex", "conjugate", "reduce_sum", "reduce_prod",
              "reduce_max", "reduce_min", "dot_sum", "broadcast_in_dim", "reshape", "transpose", "slice",
              "concatenate", "update_slice", "dot_general", "pad_fill", "where_valid"]
    missing = [p for p in float_valued + others
               if p not in ad.ZERO_DERIVATIVE and (p not in ad.JVP_RULES or p not in ad.VJP_RULES)]
    assert missing == []
