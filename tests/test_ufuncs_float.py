"""fabs, modf, frexp, ldexp, nextafter, spacing, deg2rad / radians / rad2deg / degrees,
heaviside, float_power, logaddexp and logaddexp2 inside jk.jit: NumPy 2's dtypes and values,
bit for bit where IEEE makes them exact (every one but float_power and logaddexp(2), whose libm
calls may differ by an ulp or a few), their derivatives (docs/ufuncs.md) and batching."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import emulator_suite
import jitkernel as jk
from helpers import FLOAT_DTYPES, HOST_BACKENDS, assert_matches_numpy, numpy_result

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

EMULATOR_BACKENDS = emulator_suite.emulator_backends()  # cuda-emulator where g++ is

EXACT_UNARY = ["fabs", "modf", "frexp", "spacing", "deg2rad", "radians", "rad2deg", "degrees"]
EXACT_BINARY = ["nextafter", "heaviside"]
BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def special_values(dtype) -> np.ndarray:
    """Zeros, infinities, nan, the largest finite, the normal/subnormal boundary, subnormals,
    powers of two and their neighbours, integers and halves, of both signs."""
    dt = np.dtype(dtype)
    info = np.finfo(dt)
    tiny, sub = info.smallest_normal, info.smallest_subnormal
    pos = [0.0, np.inf, info.max, np.nextafter(info.max, dt.type(0)), tiny, np.nextafter(tiny, dt.type(0)),
           np.nextafter(tiny, dt.type(1)), sub, sub * 2, sub * 3, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 0.1, 7.0,
           np.nextafter(dt.type(1), dt.type(2)), np.nextafter(dt.type(1), dt.type(0)), 1024.0, 1e4]
    pos = np.array(pos, dt)
    return np.concatenate([pos, -pos, np.array([np.nan], dt)])


def random_bits(dtype, values: list[int]) -> np.ndarray:
    """Floats with the given bit patterns: every class (subnormals, NaNs, infinities) appears."""
    dt = np.dtype(dtype)
    return np.array(values, dtype=BITS[dt.itemsize]).view(dt)


def assert_bits(got, expected) -> None:
    """Same result kind, dtype and shape (assert_matches_numpy), equal values with nan in the
    same places, and the same sign on every zero and infinity."""
    assert_matches_numpy(got, expected, rtol=0, atol=0)
    for g, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
        g, e = np.asarray(g), np.asarray(e)
        np.testing.assert_array_equal(g, e)
        if e.dtype.kind == "f":
            known = ~np.isnan(e)
            np.testing.assert_array_equal(np.signbit(g[known]), np.signbit(e[known]))


def assert_logaddexp_close(x, y, got, want) -> None:
    """Same dtype, nan and infinities; finite values within 4 eps of the operands' scale
    (libm's log1p / exp differ by an ulp or a few; near a zero result, cancellation in
    max + log1p(...) makes a bound relative to the result meaningless)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    scale = np.maximum(np.maximum(np.abs(x), np.abs(y)), np.abs(want))[finite].astype(np.float64)
    err = np.abs(got[finite].astype(np.float64) - want[finite].astype(np.float64))
    bound = 4 * np.finfo(want.dtype).eps * np.maximum(scale, 1.0)
    assert np.all(err <= bound), (x[finite][err > bound], y[finite][err > bound], got[finite][err > bound])


def unary(name: str):
    uf = getattr(np, name)
    return lambda x: uf(x)


def binary(name: str):
    uf = getattr(np, name)
    return lambda x, y: uf(x, y)


# ----------------------------------------------------------------------------- special values

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", EXACT_UNARY)
def test_unary_special_values_bit_for_bit(name, dtype, backend):
    x = special_values(dtype)
    assert_bits(jk.jit(unary(name), backend=backend)(x), numpy_result(unary(name), x))


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", EXACT_BINARY)
def test_binary_special_values_bit_for_bit(name, dtype, backend):
    s = special_values(dtype)
    x, y = (a.ravel() for a in np.meshgrid(s, s))
    assert_bits(jk.jit(binary(name), backend=backend)(x, y), numpy_result(binary(name), x, y))


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("exp_dtype", [np.int32, np.int64], ids=["int32", "int64"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_ldexp_special_values_bit_for_bit(dtype, exp_dtype, backend):
    """Into the subnormal range (rounded once), to 0 and inf for huge exponents, back up from
    subnormals; int64 exponents beyond int32's range too."""
    s = special_values(dtype)
    n = np.array([0, 1, -1, 3, -3, 10, -10, 24, -24, 25, -25, 53, -53, 60, -60, 127, -127, 149, -150,
                  1000, -1000, 1023, -1074, -1075, 2000, -2000, 5000, -5000], exp_dtype)
    if exp_dtype == np.int64:
        n = np.concatenate([n, np.array([2**40, -2**40, 2**63 - 1, -2**63], np.int64)])
    x, k = (a.ravel() for a in np.meshgrid(s, n))
    assert_bits(jk.jit(binary("ldexp"), backend=backend)(x, k), numpy_result(np.ldexp, x, k))


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_ldexp_rounds_once_into_the_subnormal_range(backend):
    """Mantissas with bits below the subnormal spacing, ties included: one rounding (a
    two-step scaling would round the tie 0.75 * 2**-1073 differently)."""
    m = np.array([0.75, 0.625, 0.875, 1.5, 1 + 2.0**-52, 1 - 2.0**-53, 0.5 + 2.0**-30, 0.999], np.float64)
    m = np.concatenate([m, -m])
    x, k = (a.ravel() for a in np.meshgrid(m, np.arange(-1080, -1015)))
    assert_bits(jk.jit(binary("ldexp"), backend=backend)(x, k), np.ldexp(x, k))
    m32 = m.astype(np.float32)
    x, k = (a.ravel() for a in np.meshgrid(m32, np.arange(-155, -120, dtype=np.int32)))
    assert_bits(jk.jit(binary("ldexp"), backend=backend)(x, k), np.ldexp(x, k))


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_special_values(name, dtype, backend):
    """Exact at infinities, nan and ties; within a few ulp of NumPy elsewhere (libm's log1p /
    exp)."""
    s = special_values(dtype)
    x, y = (a.ravel() for a in np.meshgrid(s, s))
    got, want = jk.jit(binary(name), backend=backend)(x, y), numpy_result(binary(name), x, y)
    exact = ~np.isfinite(x) | ~np.isfinite(y) | (x == y) | ~np.isfinite(want)
    assert_bits(got[exact], want[exact])
    assert_logaddexp_close(x, y, got, want)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_float_power_is_pow_without_fast_paths(backend):
    """float64 and complex128 loops only; exponents 2 and 0.5 are pow's, not x * x / sqrt (the
    fast paths numpy.power takes): pow(-inf, 0.5) is inf where sqrt(-inf) is nan."""
    x = np.array([-np.inf, -0.0, 0.0, 2.0, 3.0, -2.0, 1e30, np.nan, 0.1], np.float32)
    for p in (2, 0.5, -1, 1.5, 0.0, 3):
        f = lambda a, p=p: np.float_power(a, p)  # noqa: E731
        assert_matches_numpy(jk.jit(f, backend=backend)(x), numpy_result(f, x), rtol=1e-15, atol=0)
    assert np.float_power(-np.inf, 0.5) == np.inf and jk.jit(lambda a: np.float_power(a, 0.5), backend=backend)(
        np.array([-np.inf]))[0] == np.inf
    z = np.array([1 + 2j, -3 + 0.5j, 0j, 2], np.complex64)
    for p in (1.5 - 1j, 2, 0.5):
        f = lambda a, p=p: np.float_power(a, p)  # noqa: E731
        got, want = jk.jit(f, backend=backend)(z), numpy_result(f, z)
        assert got.dtype == want.dtype == np.complex128
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)


# ----------------------------------------------------------------------------- random bit patterns

_JITTED: dict = {}


def jitted(kind: str, name: str, backend: str):
    """One jitted function per ufunc and backend (hypothesis draws fixed-size arrays, so each
    dtype compiles once)."""
    key = (kind, name, backend)
    if key not in _JITTED:
        _JITTED[key] = jk.jit(unary(name) if kind == "unary" else binary(name), backend=backend)
    return _JITTED[key]


def bit_patterns(dtype, n: int = 24):
    bits = 8 * np.dtype(dtype).itemsize
    return st.lists(st.integers(0, 2**bits - 1), min_size=n, max_size=n).map(lambda v: random_bits(dtype, v))


@pytest.mark.parametrize("backend", emulator_suite.DRAWN_BACKENDS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", EXACT_UNARY)
@SETTINGS
@given(data=st.data())
def test_unary_random_bits(name, dtype, backend, data):
    x = data.draw(bit_patterns(dtype))
    assert_bits(jitted("unary", name, backend)(x), numpy_result(unary(name), x))


@pytest.mark.parametrize("backend", emulator_suite.DRAWN_BACKENDS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", EXACT_BINARY)
@SETTINGS
@given(data=st.data())
def test_binary_random_bits(name, dtype, backend, data):
    x, y = data.draw(bit_patterns(dtype)), data.draw(bit_patterns(dtype))
    # nextafter toward a neighbour-scale target, not only toward far-away random floats
    y[::3] = np.where(np.isfinite(x[::3]), -x[::3], y[::3])
    assert_bits(jitted("binary", name, backend)(x, y), numpy_result(binary(name), x, y))


@pytest.mark.parametrize("backend", emulator_suite.DRAWN_BACKENDS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@SETTINGS
@given(data=st.data())
def test_ldexp_random_bits(dtype, backend, data):
    x = data.draw(bit_patterns(dtype))
    n = np.array(data.draw(st.lists(st.integers(-1200, 1200), min_size=x.size, max_size=x.size)), np.int32)
    assert_bits(jitted("binary", "ldexp", backend)(x, n), numpy_result(np.ldexp, x, n))


@pytest.mark.parametrize("backend", emulator_suite.DRAWN_BACKENDS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
@SETTINGS
@given(data=st.data())
def test_logaddexp_random_bits(name, dtype, backend, data):
    """Within a few ulp of NumPy at the operands' scale (assert_logaddexp_close)."""
    x, y = data.draw(bit_patterns(dtype)), data.draw(bit_patterns(dtype))
    got, want = jitted("binary", name, backend)(x, y), numpy_result(binary(name), x, y)
    assert_logaddexp_close(x, y, got, want)


# ----------------------------------------------------------------------------- dtypes

DTYPE_CASES = [
    ("fabs int8 is float16", lambda x: np.fabs(x), np.int8([1, -2])),
    ("fabs int32 is float64", lambda x: np.fabs(x), np.int32([1, -2])),
    ("fabs bool", lambda x: np.fabs(x), np.array([True, False])),
    ("frexp int16", lambda x: np.frexp(x), np.int16([3, -4, 0])),
    ("modf uint8", lambda x: np.modf(x), np.uint8([3, 0])),
    ("ldexp python int exponent", lambda x: np.ldexp(x, 2), np.float32([3, -0.5])),
    ("ldexp int64 scalar exponent", lambda x: np.ldexp(x, np.int64(-3)), np.float32([3])),
    ("ldexp int8 mantissa", lambda x: np.ldexp(x, 2), np.int8([3])),
    ("ldexp python float mantissa", lambda n: np.ldexp(2.5, n), np.int32([3, -2000])),
    ("ldexp float16 with int64", lambda n: np.ldexp(np.float16(2.5), n), np.int64([3, 20, -30])),
    ("float_power int8", lambda x: np.float_power(x, 2), np.int8([3, -2])),
    ("float_power float32", lambda x: np.float_power(x, 0.5), np.float32([3, 0.25])),
    ("heaviside int8 with python int", lambda x: np.heaviside(x, 1), np.int8([-1, 0, 2])),
    ("heaviside float32", lambda x: np.heaviside(x, 0.5), np.float32([-1, 0, -0.0, 2, np.nan])),
    ("logaddexp float16 with python int", lambda x: np.logaddexp(x, 1), np.float16([-1, 0, 2])),
    ("deg2rad int64", lambda x: np.deg2rad(x), np.int64([180, -90])),
    ("rad2deg uint8", lambda x: np.rad2deg(x), np.uint8([3])),
    ("nextafter float16 toward python int", lambda x: np.nextafter(x, 1), np.float16([0, 1, 2])),
    ("spacing uint16", lambda x: np.spacing(x), np.uint16([7, 0])),
    ("0-d operands give scalars", lambda x: np.logaddexp(x[0], np.float32(2)), np.float32([1])),
]


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn, arg", [c[1:] for c in DTYPE_CASES], ids=[c[0] for c in DTYPE_CASES])
def test_loop_dtypes_follow_numpy(fn, arg, backend):
    assert_matches_numpy(jk.jit(fn, backend=backend)(arg), numpy_result(fn, arg), rtol=1e-6, atol=0)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_float_power_complex_loop(backend):
    f = lambda x: np.float_power(x, 2j)  # noqa: E731
    got, want = jk.jit(f, backend=backend)(np.float32([3, 0.5])), f(np.float32([3, 0.5]))
    assert got.dtype == want.dtype == np.complex128
    np.testing.assert_allclose(got, want, rtol=1e-14)


@pytest.mark.parametrize("fn", [lambda x: np.ldexp(x, np.uint64(3)), lambda x: np.ldexp(x, 2.0),
                                lambda x: np.nextafter(x, 1j), lambda x: np.heaviside(x, 1j)],
                         ids=["ldexp uint64", "ldexp float exponent", "nextafter complex", "heaviside complex"])
def test_no_loop_raises_numpys_type_error(fn):
    x = np.float32([1.0])
    with pytest.raises(TypeError) as numpy_error:
        fn(x)
    with pytest.raises(TypeError) as ours:
        jk.jit(fn)(x)
    assert str(ours.value) == str(numpy_error.value)


# ----------------------------------------------------------------------------- out=, where=, fusion

@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_out_and_where(backend):
    def f(x):
        out = np.zeros(3)
        np.logaddexp(x, 1.0, out=out)
        m, e = np.zeros(3), np.zeros(3, np.int32)
        np.frexp(x, out=(m, e))
        masked = np.ldexp(x, 3, out=np.full(3, -1.0), where=x > 1)
        return out, m, e, masked
    x = np.array([0.5, 2.0, 3.0])
    assert_matches_numpy(jk.jit(f, backend=backend)(x), f(x), rtol=1e-15, atol=0)


@pytest.mark.parametrize("backend", HOST_BACKENDS + EMULATOR_BACKENDS)
def test_mixed_with_arithmetic(backend):
    """The ufuncs inside one jitted expression with ordinary arithmetic, on every backend
    (the emulator included): one kernel's worth of elementwise work."""
    def f(x, y, n):
        m, e = np.frexp(x * 2 + 1)
        frac, whole = np.modf(np.deg2rad(x) * 3)
        return (np.ldexp(m, e + n) - 1, np.nextafter(x, y) * 2, np.spacing(x) + np.fabs(y),
                frac + whole, np.heaviside(x - y, 0.5) * np.logaddexp(x, y), np.float_power(np.fabs(x), 1.5))
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float64):
        x = np.concatenate([special_values(dt), rng.standard_normal(8).astype(dt)])
        y = x[::-1].copy()
        n = np.arange(x.size, dtype=np.int32) - 10
        got, want = jk.jit(f, backend=backend)(x, y, n), numpy_result(f, x, y, n)
        assert_bits(got[:4], want[:4])
        assert_matches_numpy(got[4:], want[4:], rtol=1e-6 if dt == np.float32 else 1e-14, atol=0)


def test_mixed_fuses_into_one_kernel():
    """Composed of elementwise primitives, the ufuncs fuse with the arithmetic around them."""
    def f(x, n):
        m, e = np.frexp(x * 2 + 1)
        return np.ldexp(m, e + n) - np.spacing(x) * np.logaddexp(x, 1.0) + np.modf(np.deg2rad(x))[0]
    x, n = np.linspace(-5, 5, 64), np.arange(64, dtype=np.int32)
    assert len(jk.jit(f, disk_cache=False).lower(x, n).compiled.executable.kp.steps) == 1


@pytest.mark.parametrize("backend", EMULATOR_BACKENDS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_exact_ufuncs_on_the_emulator(dtype, backend):
    def f(x, y, n):
        return (np.frexp(x), np.modf(x), np.ldexp(x, n), np.nextafter(x, y), np.spacing(x), np.fabs(x),
                np.deg2rad(x), np.heaviside(x, y))
    s = special_values(dtype)
    x, y = (a.ravel() for a in np.meshgrid(s, s))
    n = (np.arange(x.size, dtype=np.int32) * 37) % 400 - 200
    got, want = jk.jit(f, backend=backend)(x, y, n), numpy_result(f, x, y, n)
    for g, w in zip(got, want):
        assert_bits(g, w)


# ----------------------------------------------------------------------------- derivatives

def grad2(f, a, b):
    return [float(v) for v in jk.grad(f, argnums=(0, 1))(np.float64(a), np.float64(b))]


def sigmoid(d: float) -> float:
    return 1.0 / (1.0 + np.exp(-d))


INF = np.inf
LOGADDEXP_GRADS = [  # (x, y, d/dx, d/dy): the logistic function of x - y; 1/2 each at ties
    (1.0, 2.0, sigmoid(-1.0), sigmoid(1.0)), (2.0, 2.0, 0.5, 0.5), (800.0, 800.0, 0.5, 0.5),
    (INF, INF, 0.5, 0.5), (-INF, -INF, 0.5, 0.5), (INF, 0.0, 1.0, 0.0), (0.0, INF, 0.0, 1.0),
    (-INF, 0.0, 0.0, 1.0), (0.0, -INF, 1.0, 0.0), (-INF, INF, 0.0, 1.0), (-800.0, 800.0, 0.0, 1.0),
]


@pytest.mark.parametrize("x, y, dx, dy", LOGADDEXP_GRADS)
def test_logaddexp_grad(x, y, dx, dy):
    np.testing.assert_allclose(grad2(np.logaddexp, x, y), [dx, dy], rtol=1e-14)
    # base 2: the logistic function of (x - y) ln 2
    with np.errstate(over="ignore", invalid="ignore"):
        wx = 0.5 if x == y else 1.0 / (1.0 + np.exp2(y - x))
    np.testing.assert_allclose(grad2(np.logaddexp2, x, y), [wx, 1.0 - wx], rtol=1e-14)


def test_logaddexp_grad_nan_propagates():
    assert np.isnan(grad2(np.logaddexp, np.nan, 1.0)).all()


def test_forward_and_reverse_agree():
    x = np.array([1.0, 2.0, -0.0, 3.0, np.inf])
    y = np.array([2.0, 2.0, 0.0, -1.0, 0.0])
    for f in (lambda a: np.logaddexp(a, y), lambda a: np.logaddexp2(a, y), lambda a: np.ldexp(a, 5),
              lambda a: np.modf(a)[0], lambda a: np.frexp(a)[0], lambda a: np.deg2rad(a), lambda a: np.fabs(a)):
        _, forward = jk.jvp(f, (x,), (np.ones_like(x),))
        reverse = jk.grad(lambda a: f(a).sum())(x)
        np.testing.assert_array_equal(forward, reverse)


@pytest.mark.parametrize("x", [0.0, -0.0, 1.5, -2.0, 3.0, -3.0, 2.5, 1e-310, INF, -INF])
def test_unary_grads(x):
    """fabs: sign, 1 at both zeros (lax.abs's select(x >= 0)); modf: 1 for the fraction (also at
    integers), 0 for the whole part, 0 at +-inf (the fraction is a constant 0 there); frexp:
    2**-e (1 at 0 and +-inf, where the mantissa is x); ldexp: 2**n everywhere (linear in x);
    spacing: 0; deg2rad / rad2deg: their constants."""
    g = lambda f: float(jk.grad(f)(np.float64(x)))  # noqa: E731
    assert g(np.fabs) == (-1.0 if x < 0 else 1.0)
    assert g(lambda a: np.modf(a)[0]) == (0.0 if np.isinf(x) else 1.0)
    assert g(lambda a: np.modf(a)[1]) == 0.0
    with np.errstate(over="ignore"):  # 2**1029 for x = 1e-310: inf in float64, as the derivative
        mantissa_slope = 1.0 if x == 0 or np.isinf(x) else np.ldexp(1.0, -np.frexp(x)[1])
    assert g(lambda a: np.frexp(a)[0]) == mantissa_slope
    assert g(lambda a: np.ldexp(a, 3)) == 8.0 and g(lambda a: np.ldexp(a, -1080)) == np.ldexp(1.0, -1080)
    assert g(np.spacing) == 0.0
    assert g(np.deg2rad) == np.deg2rad(1.0) and g(np.radians) == np.radians(1.0)
    assert g(np.rad2deg) == np.rad2deg(1.0) and g(np.degrees) == np.degrees(1.0)


def test_float16_and_float32_grads_keep_the_loop_dtype():
    x16 = np.float16([1.0, 2.0, 0.0])
    got = jk.grad(lambda a: np.deg2rad(a).sum())(x16)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, np.float16(np.deg2rad(np.float32(1))))
    x32 = np.float32([1.0, 2.0, 0.0])
    np.testing.assert_array_equal(jk.grad(lambda a: np.ldexp(a, 3).sum())(x32), np.float32([8, 8, 8]))
    got = jk.grad(lambda a: np.logaddexp(a, np.float16(2)).sum())(np.float16([2.0, 0.0]))
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, [0.5, sigmoid(-2.0)], rtol=1e-3)


@pytest.mark.parametrize("x1, x2", [(0.0, 0.5), (-0.0, 2.0), (1.0, 0.5), (-1.0, 0.5)])
def test_heaviside_grad(x1, x2):
    """0 in x1 everywhere (a step); 1 in x2 where x1 == 0, else 0 (as JAX's heaviside)."""
    assert grad2(np.heaviside, x1, x2) == [0.0, 1.0 if x1 == 0 else 0.0]


@pytest.mark.parametrize("x1, x2", [(1.0, 1.0), (0.0, 2.0), (2.0, -np.inf), (np.inf, 0.0)])
def test_nextafter_grad(x1, x2):
    """nextafter(x1, x2) is x1 moved by one ulp: derivative 1 in x1, 0 in x2."""
    assert grad2(np.nextafter, x1, x2) == [1.0, 0.0]


@pytest.mark.parametrize("x, p", [(2.0, 3.0), (3.0, 0.5), (-2.0, 3.0), (2.0, 2.0), (2.0, 0.0)])
def test_float_power_grad(x, p):
    """pow's own derivative: p x**(p - 1) and log(x) x**p (no fast-path selects in the way)."""
    dx, dp = grad2(np.float_power, x, p)
    np.testing.assert_allclose(dx, p * x ** (p - 1), rtol=1e-14)
    if x > 0:
        np.testing.assert_allclose(dp, np.log(x) * x ** p, rtol=1e-14)
    else:
        assert np.isnan(dp)


def test_frexp_exponent_and_modf_whole_have_no_tangent():
    """The int32 exponent's tangent is a zero of its dtype (jitkernel's integer tangents), grad
    of it is refused as for any integer output; modf's whole part is piecewise constant."""
    _, (tm, te) = jk.jvp(lambda a: np.frexp(a), (np.float64(3.0),), (np.float64(1.0),))
    assert tm == 0.25 and te == 0 and te.dtype == np.int32
    with pytest.raises(jk.GradientError):
        jk.grad(lambda a: np.frexp(a)[1])(3.0)
    _, (tf, tw) = jk.jvp(lambda a: np.modf(a), (np.float64(2.5),), (np.float64(1.0),))
    assert tf == 1.0 and tw == 0.0


# ----------------------------------------------------------------------------- batching

@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_vmap(backend):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 5)) * 100
    y = rng.standard_normal((4, 5))
    n = rng.integers(-50, 50, (4, 5)).astype(np.int32)

    def f(a, b, k):
        return (np.frexp(a), np.modf(a), np.ldexp(a, k), np.nextafter(a, b), np.spacing(a),
                np.logaddexp(a, b), np.logaddexp2(a, b), np.heaviside(a, b), np.float_power(np.fabs(a), b),
                np.deg2rad(a))
    got = jk.jit(jk.vmap(f), backend=backend)(x, y, n)
    want = numpy_result(f, x, y, n)  # elementwise: the batch at once is row by row
    assert_matches_numpy(got, want, rtol=1e-14, atol=0)
    grads = jk.vmap(jk.grad(lambda a, b: np.logaddexp(a, b)))(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0]))
    np.testing.assert_allclose(grads, [sigmoid(-1.0), 0.5, sigmoid(1.0)], rtol=1e-14)

