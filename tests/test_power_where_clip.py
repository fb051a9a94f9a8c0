"""NumPy's `**` operator and power fast paths, np.where with Python ints of 64 bits, np.clip's
three-operand dtype resolution, *_like fills. NumPy (the installed NumPy 2) is the reference
everywhere, bit for bit where NumPy's result is exact (sqrt, x * x, 1 / x)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import emulator_suite
import jitkernel as jk
from helpers import HOST_BACKENDS, outcome


SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


BACKENDS = HOST_BACKENDS + emulator_suite.emulator_backends()  # cuda-emulator where g++ is


DRAWN_BACKENDS = emulator_suite.DRAWN_BACKENDS


SPECIAL = [-np.inf, -0.0, -4.0, 0.0, 4.0, np.nan, 3.7, -2.5, 1e300, 1e-300, np.inf, 0.3]


def assert_same(got, want, exact: bool = True, zero_signs: bool = True) -> None:
    """Same dtype and shape; same values, NaN places, infinities and signs (of zero too unless
    `zero_signs` is False); floats exact unless `exact` is False (then within a few ulp: C pow
    against NumPy's SVML pow)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    signed = ~nan if zero_signs else ~nan & (want != 0)
    np.testing.assert_array_equal(np.signbit(got)[signed], np.signbit(want)[signed])
    if exact:
        np.testing.assert_array_equal(got[~nan], want[~nan])
    else:
        np.testing.assert_allclose(got[~nan], want[~nan], rtol=8 * np.finfo(want.dtype).eps, atol=0)


def check(fn, *args, backend: str = "cpu", exact: bool = True, zero_signs: bool = True) -> None:
    want = outcome(fn, *args)
    got = outcome(jk.jit(fn, backend=backend), *args)
    if want[0] == "raise":
        assert got[0] == "raise" and issubclass(got[1], want[1]), (want, got)
        return
    assert got[0] == "ok", (want, got)
    assert_same(got[1], want[1], exact, zero_signs)


def base_array(dtype: str) -> np.ndarray:
    if dtype.startswith("float"):
        with np.errstate(over="ignore"):
            return np.array(SPECIAL, dtype)
    return np.array([0, 1, 2, 3, 5], dtype)


# Exponents whose NumPy result is exact (a fast path or an integer power) for every base.
FAST_EXPONENTS = [2, -1, 0.5, 0, 1, 2.0, -1.0, 0.0, 1.0, True, False, np.float32(2), np.float64(0.5),
                  np.float16(0.5), np.int64(2), np.int8(-1), np.array(0.5), np.array([0.5]), np.array([[2.0]])]


POWER_FORMS = {
    "operator": lambda x, e: x ** e,
    "np.power": lambda x, e: np.power(x, e),
    "in-place": None,  # below: a fresh array updated with **=
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", sorted(POWER_FORMS))
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "uint8", "int64", "bool"])
def test_power_matches_numpy_dispatch_bit_for_bit(backend, form, dtype):
    """ndarray ** scalar is NumPy's fast_scalar_power (square / reciprocal / sqrt) and np.power
    has its float loop's stride-0 fast paths: x ** 0.5 of [-inf, -0.0] is [nan, -0.0]."""
    x = base_array(dtype)
    for e in FAST_EXPONENTS + ([] if dtype.startswith("float") else [3]):
        fn = lambda x, e=e, f=POWER_FORMS[form]: f(x, e)  # noqa: E731
        check(fn, x, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_half_power_has_sqrt_semantics(backend):
    x = np.array([-np.inf, -0.0])
    got = jk.jit(lambda a: a ** 0.5, backend=backend)(x)
    assert np.isnan(got[0]) and got[1] == 0 and np.signbit(got[1])
    got16 = jk.jit(lambda a: a ** 0.5, backend=backend)(x.astype(np.float16))
    assert got16.dtype == np.float16 and np.isnan(got16[0]) and np.signbit(got16[1])
    # float16's power loop has no fast path: np.power(x_f16, 0.5) is powf (-inf -> inf, -0 -> 0).
    check(lambda a: np.power(a, 0.5), x.astype(np.float16), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [lambda x: x ** 2.0, lambda x: x ** 0.5, lambda x: np.power(x, 2.0),
                                lambda x: x ** -1, lambda x: np.power(x, np.float32(0.5))])
def test_interpret_power_is_exact(backend, fn):
    """The interpreter broadcast the exponent into a contiguous array, so NumPy took SVML's pow
    (an ulp off x * x and sqrt) instead of its stride-0 fast path."""
    x = np.abs(np.random.default_rng(0).uniform(-10, 10, 1000))
    assert_same(jk.jit(fn, backend=backend)(x), fn(x))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8"])
def test_power_by_a_python_scalar_argument_selects_on_its_value(backend, dtype):
    x = base_array(dtype)
    op = jk.jit(lambda x, p: x ** p, backend=backend)
    fn = jk.jit(lambda x, p: np.power(x, p), backend=backend)
    for p in [0.5, 2.0, 2, -1, 0, 1, -1.0, 0.0, 1.0] + ([] if dtype.startswith("float") else [3]):
        if dtype == "int8" and p == -1:
            continue
        assert_same(op(x, p), x ** p)
        assert_same(fn(x, p), np.power(x, p))


def test_numpy_scalar_base_uses_scalar_pow():
    """np.float64(-inf) ** 0.5 is NumPy's scalar math (C pow): inf, not sqrt's nan."""
    x = np.array([-np.inf, -0.0])
    for fn in [lambda a: a[0] ** 0.5, lambda a: a.max() ** np.float32(0.5), lambda a: a.sum() ** 0.5,
               lambda a: a[1] ** np.array(0.5), lambda a: np.power(a[0], 0.5)]:
        want, got = fn(x), jk.jit(fn)(x)
        assert type(got) is type(want)
        assert_same(got, want)


def _scalar_inplace_power(a):
    s = a[1]
    s **= 0.5  # a NumPy scalar is immutable: rebinds to scalar math's pow, -0.0 -> 0.0
    return s


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [
    _scalar_inplace_power,
    lambda a: 2.0 ** a, lambda a: 2.0 ** a[1:].reshape(()), lambda a: (-0.0) ** np.float64(0.5) + a[0] * 0,
    lambda a: np.power(a[1:], np.array([0.5])),  # same shape (1,): a real stride, pow: 0.0
    lambda a: np.power(a[1:].reshape(1, 1), np.array([0.5])),  # broadcast: stride 0, sqrt: -0.0
    lambda a: np.power(a, a[1:] * 0 + 0.5),  # a traced one-element exponent, broadcast
    lambda a: np.power(a.reshape(2, 1), np.array([0.5, 3.0])),  # an exponent per element: pow
])
def test_power_of_scalars_and_one_element_exponents(backend, fn):
    check(fn, np.array([-np.inf, -0.0]), backend=backend)


@pytest.mark.usefixtures("no_static_int_fallback")
def test_bool_array_to_a_traced_int_power_raises_naming_the_cause():
    f = jk.jit(lambda b, n: b ** n)
    with pytest.raises(jk.UnsupportedOperationError, match="depends on n's value"):
        f(np.array([True, False]), 2)
    assert_same(jk.jit(lambda b, n: b ** n, static_argnames=("n",))(np.array([True, False]), 2),
                np.array([True, False]) ** 2)


_EXPONENTS = st.one_of(
    st.sampled_from([2, -1, 0, 1, 3, -2, 2**63, 2**64]),
    st.sampled_from([0.5, 2.0, -1.0, 0.0, 1.0, 0.25, -0.5, 1.5, np.nan, np.inf]),
    st.builds(lambda t, v: t(v), st.sampled_from([np.float16, np.float32, np.float64, np.int8, np.int64, np.uint8]),
              st.sampled_from([0, 1, 2])),
    st.builds(lambda v: np.float32(v), st.sampled_from([0.5, -1.0])),
    st.builds(lambda v, shape: np.full(shape, v), st.sampled_from([0.5, 2.0, -1.0]),
              st.sampled_from([(), (1,), (1, 1), (5,)])),
)


@SETTINGS
@given(dtype=st.sampled_from(["float16", "float32", "float64", "int8", "uint8", "int64", "bool"]),
       exponent=_EXPONENTS, form=st.sampled_from(sorted(POWER_FORMS) + ["argument"]),
       backend=st.sampled_from(DRAWN_BACKENDS))
def test_generated_power_matches_numpy(dtype, exponent, form, backend):
    """The class: every spelling of a power with a scalar or small exponent, every dtype."""
    x = base_array(dtype)
    if form == "argument":
        if type(exponent) not in (int, float) or not -2**63 <= exponent < 2**63:
            return  # Python ints of 2**63 or more are rejected as arguments (documented)
        if dtype == "bool" and type(exponent) is int:
            return  # raises UnsupportedOperationError (the test above)
        want = outcome(lambda x, p: x ** p, x, exponent)
        got = outcome(jk.jit(lambda x, p: x ** p, backend=backend), x, exponent)
        if want[0] == "raise":
            assert got[0] == "raise" and issubclass(got[1], want[1])
        else:
            assert_same(got[1], want[1], exact=_exact(exponent))
        return
    fn = lambda x, e=exponent, f=POWER_FORMS[form]: f(x, e)  # noqa: E731
    check(fn, x, backend=backend, exact=_exact(exponent))


def _exact(exponent) -> bool:
    """NumPy's result is exact (a fast path, or an integer power) for these exponents; others
    are C pow here and SVML's pow in NumPy, a few ulp apart."""
    return bool(np.all(np.isin(np.asarray(exponent, np.float64), [-1.0, 0.0, 0.5, 1.0, 2.0])))


BIG_INTS = [2**64 - 1, 2**63, 2**63 + 5, 2**64 - 256, -2**63, -5, 2**64, -2**63 - 1]
WHERE_OTHERS = [7, True, 2.5, np.arange(3, dtype=np.uint8), np.arange(3, dtype=np.int8),
                np.arange(3, dtype=np.uint64), np.arange(3, dtype=np.int32), np.arange(3, dtype=np.float32),
                np.arange(3) > 0]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("value", BIG_INTS)
def test_where_converts_python_ints_as_numpy(backend, value):
    """NumPy's where converts a Python int in [-2**63, 2**64) as its 64-bit two's complement
    (where(c, 2**64 - 1, 7) is int64 -1) and raises OverflowError beyond; never int64's
    'Python int too large' for a value NumPy accepts."""
    a = np.arange(3, dtype=np.uint8)
    for other in WHERE_OTHERS:
        check(lambda a, v=value, o=other: np.where(a > 0, v, o), a, backend=backend)
        check(lambda a, v=value, o=other: np.where(a > 0, o, v), a, backend=backend)


def test_where_uint64_max():
    a = np.arange(3, dtype=np.uint8)
    got = jk.jit(lambda a: np.where(a > 0, 2**64 - 1, 7))(a)
    assert got.dtype == np.int64 and got.tolist() == [7, -1, -1]


@pytest.mark.parametrize("fn", [
    lambda a: np.full(3, 2**64 - 1) + a, lambda a: np.asarray(2**63) + a, lambda a: np.array([2**64 - 1]) + a,
    lambda a: a.astype(np.uint64) + (2**64 - 1), lambda a: np.maximum(a.astype(np.uint64), 2**64 - 1),
    lambda a: np.clip(a.astype(np.uint64), 0, 2**64 - 1), lambda a: np.clip(a, 0, 2**64 - 1),
    lambda a: a.astype(np.float64) + 2**64, lambda a: a < 2**64, lambda a: a + 2**64,
])
def test_big_python_int_constants_match_numpy(fn):
    check(fn, np.arange(3, dtype=np.uint8))


@SETTINGS
@given(value=st.one_of(st.integers(-2**64, 2**65), st.sampled_from(BIG_INTS)),
       other=st.sampled_from(range(len(WHERE_OTHERS))), first=st.booleans())
def test_generated_where_with_python_ints(value, other, first):
    o = WHERE_OTHERS[other]
    fn = (lambda a: np.where(a > 0, value, o)) if first else (lambda a: np.where(a > 0, o, value))
    check(fn, np.arange(3, dtype=np.uint8))


CLIP_ARRAYS = {"bool": np.array([True, False, True]), "int8": np.array([-3, 0, 5], np.int8),
               "uint8": np.array([0, 3, 250], np.uint8), "int64": np.array([-3, 0, 5]),
               "uint64": np.array([0, 3, 2**63], np.uint64), "float16": np.array([-1.5, np.nan, 3], np.float16),
               "float32": np.array([0.0, -1.5, 3e38], np.float32), "float64": np.array([-0.0, 2.5, np.nan])}
CLIP_BOUNDS = [None, 0, 2, -1, 300, -128, 255, 0.5, 5e-324, True, np.float32(2), np.uint32(2**32 - 1),
               np.int8(-2), np.float16(1), np.int64(1), np.array([0, 1, 2], np.int16)]


@pytest.mark.parametrize("array", sorted(CLIP_ARRAYS))
def test_clip_resolves_dtype_over_three_operands(array):
    """NumPy's clip is one 3-operand ufunc: clip(bool, 0, float32(2)) is float32 (maximum then
    minimum would give float64); a float32 array clipped at 5e-324 and a uint32 is float64
    keeping 5e-324."""
    a = CLIP_ARRAYS[array]
    for lo, hi in itertools.product(CLIP_BOUNDS, CLIP_BOUNDS):
        # NumPy's sign of a zero from max/min depends on the memory layout: not compared.
        check(lambda x, lo=lo, hi=hi: np.clip(x, lo, hi), a, zero_signs=False)


@pytest.mark.parametrize("backend", BACKENDS)
def test_clip_dtype_examples(backend):
    f = jk.jit(lambda a: np.clip(a, 0, np.float32(2)), backend=backend)
    assert f(np.array([True, False])).dtype == np.float32
    g = jk.jit(lambda a, b: np.clip(a < b, -5, b), backend=backend)
    assert g(np.array([1.0, 3.0], np.float32), np.array([2.0, 2.0], np.float32)).dtype == np.float32
    h = jk.jit(lambda x: np.clip(x, 5e-324, np.uint32(2**32 - 1)), backend=backend)
    got = h(np.zeros(2, np.float32))
    assert got.dtype == np.float64 and got[0] == 5e-324


def test_clip_without_bounds_is_positive():
    check(lambda x: np.clip(x), np.array([True, False]))  # NumPy: UFuncTypeError (positive of bool)
    check(lambda x: np.clip(x, None, None), np.array([1.5, -0.0]))  # a copy: -0.0 kept


_CLIP_OPERAND = st.one_of(
    st.none(), st.sampled_from([0, 1, -1, 300, -129, 2.5, -0.0, 1e300, True, False]),
    st.builds(lambda t, v: t(v), st.sampled_from([np.int8, np.uint8, np.int32, np.uint32, np.int64, np.float16,
                                                  np.float32, np.float64, np.bool_]), st.sampled_from([0, 1, 2])),
    st.builds(lambda t: np.array([0, 1, 2]).astype(t), st.sampled_from(["int8", "uint16", "float32", "bool"])),
)


@SETTINGS
@given(array=st.sampled_from(sorted(CLIP_ARRAYS)), lo=_CLIP_OPERAND, hi=_CLIP_OPERAND,
       backend=st.sampled_from(DRAWN_BACKENDS), traced_bounds=st.booleans())
def test_generated_clip_matches_numpy(array, lo, hi, backend, traced_bounds):
    """The class: clip of every dtype with bounds of every kind (None, Python scalars, NumPy
    scalars, arrays), as literals or as arguments (Python scalars and arrays; a NumPy scalar
    argument is a 0-d array, documented)."""
    a = CLIP_ARRAYS[array]
    if traced_bounds:
        passed = [b for b in (lo, hi) if type(b) in (bool, int, float) or isinstance(b, np.ndarray)]
        if passed:
            def fn(x, *args, lo=lo, hi=hi):
                it = iter(args)
                bounds = [next(it) if (type(b) in (bool, int, float) or isinstance(b, np.ndarray)) else b for b in (lo, hi)]
                return np.clip(x, *bounds)
            want = outcome(fn, a, *passed)
            got = outcome(jk.jit(fn, backend=backend), a, *passed)
            if want[0] == "raise":
                assert got[0] == "raise" and issubclass(got[1], want[1]), (want, got)
            else:
                assert got[0] == "ok", (want, got)
                assert_same(got[1], want[1], zero_signs=False)
            return
    check(lambda x: np.clip(x, lo, hi), a, backend=backend, zero_signs=False)


# ------------------------------------------------------- *_like fills: NumPy's unsafe copyto

@pytest.mark.parametrize("dtype", ["uint64", "int64", "uint8", "int8", "bool", "float16", "float32"])
def test_full_like_converts_its_fill_as_numpy(dtype):
    """numpy.full_like copies the fill with casting="unsafe": NaN into uint64 is a value (with
    NumPy's warning), not asarray's "cannot convert float NaN to integer" (soak seed 1, 1348)."""
    a = np.zeros(2, dtype)
    for v in [np.nan, np.inf, 1e300, -0.0, 2.7, 2**63, 2**64 - 1, 2**64, -1, 300, np.float64(np.nan),
              np.uint64(2**64 - 1), True, [1, 2]]:
        check(lambda a, v=v: np.full_like(a, v), a)


CLIP_OTHER_BOUNDS = [None, 5, np.uint64(7), np.float32(2.5), np.array([3], np.uint64), np.int16(-3)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("s", [65535, -1, 300, 3, -129, 2**40])
def test_clip_with_a_python_int_argument_bound(backend, s):
    """A traced Python int bound is converted to the loop dtype of all three operands, as NumPy
    does: clip(u8, 65535, u64) is fine (uint64 loop), clip(u8, 65535, 5) raises OverflowError
    (soak seed 2, program 1091)."""
    for a in [CLIP_ARRAYS[k] for k in ("uint8", "int8", "float32", "bool")]:
        for o in CLIP_OTHER_BOUNDS:
            for fn in [lambda a, s, o=o: np.clip(a, s, o), lambda a, s, o=o: np.clip(a, o, s)]:
                want = outcome(fn, a, s)
                got = outcome(jk.jit(fn, backend=backend), a, s)
                if want[0] == "raise":
                    assert got[0] == "raise" and issubclass(got[1], want[1]), (a.dtype, s, o, want, got)
                else:
                    assert got[0] == "ok", (a.dtype, s, o, want, got)
                    assert_same(got[1], want[1], zero_signs=False)
