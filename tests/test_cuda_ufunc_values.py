"""Every elementwise ufunc and every cast of the rendered CUDA C (run on cuda-emulator) against
NumPy at values hypothesis draws from the whole range of each dtype: the classes of renderer
bugs a fixed-seed sweep (tests/test_ufuncs.py) can miss (C's integer promotions and signed
overflow, float16 rounding after every operation, signed zeros, NaN and infinities through
C's comparisons and math calls, float -> integer conversions out of range, int -> float
rounding).

One program per (dtype, group of ufuncs) at a fixed length, so every program is built in one
host-compiler run for the module (`emulator.prebuild`) and hypothesis only draws values.

Exactness: integer and bool results are exact (helpers.assert_matches_numpy); float results of
the IEEE-exact operations (+ - * /, sqrt, rounding functions, fmod, copysign, abs, comparisons,
casts) are compared bit for bit with the sign of every zero; results of math-library functions
(exp, log, sin, ..., power, arctan2, hypot, cbrt) within the tolerances the NumPy-equivalence
suite uses on the CPU backend (helpers.FLOAT_TOL): the emulator calls the host's libm there and
a GPU calls libdevice, whose documented error bounds (CUDA C Programming Guide, "Mathematical
Functions": 1-4 ulp for float32, 1-3 ulp for float64) are far inside those tolerances. The
emulator's libm must not be what makes a test pass: the same tolerances hold for both.
"""
from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitkernel as jk
from cuda_corpus import assert_zero_signs
from helpers import ALL_DTYPES, FLOAT_DTYPES, assert_matches_numpy, numpy_result
from jitkernel.backends.cuda import emulator

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")

# float16 arrays of any value are drawn with some rejection; the programs are prebuilt, the draws are cheap
_SLOW_DRAWS = [HealthCheck.filter_too_much, HealthCheck.too_slow]
N = 32  # elements per argument: every program has this length, so all are prebuilt
INT_DTYPES = [d for d in ALL_DTYPES if d.kind in "biu"]

# IEEE-exact operations: NumPy's result is the correctly rounded one (float16: computed in
# float32 and rounded once, as NumPy's float16 loops do), so the CUDA C must give the same bits.
EXACT_UNARY = ("negative", "absolute", "sqrt", "floor", "ceil", "trunc", "rint", "square", "reciprocal",
               "isnan", "isinf", "isfinite", "signbit", "logical_not")
EXACT_BINARY = ("add", "subtract", "multiply", "divide", "fmod", "copysign", "fmax", "fmin", "equal",
                "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
                "logical_xor")
# math-library functions: within the CPU suite's tolerances
LIBM_UNARY = ("cbrt", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "arcsin",
              "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh")
LIBM_BINARY = ("power", "arctan2", "hypot")
INT_UNARY = ("negative", "absolute", "square", "invert", "logical_not", "isnan", "isinf", "isfinite", "signbit",
             "floor", "ceil", "trunc", "rint")
INT_BINARY = ("add", "subtract", "multiply", "bitwise_and", "bitwise_or", "bitwise_xor", "maximum", "minimum",
              "fmax", "fmin", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
              "logical_and", "logical_or", "logical_xor")


def _defined(names: tuple, *args: np.ndarray) -> tuple:
    """The ufuncs of `names` NumPy has a loop for at these dtypes (the others raise TypeError)."""
    out = []
    for name in names:
        try:
            numpy_result(getattr(np, name), *args)
            out.append(name)
        except TypeError:
            pass
    return tuple(out)


def _ufuncs_of(names: tuple):
    ufuncs = [getattr(np, n) for n in names]
    return lambda *xs: tuple(uf(*xs) for uf in ufuncs)


def _casts(x):
    return tuple(x.astype(d) for d in ALL_DTYPES)


def _programs() -> dict:
    """(group, dtype) -> (function, names): one jitted program per group of ufuncs and dtype."""
    out = {}
    for dt in ALL_DTYPES:
        x = np.zeros(N, dt)
        groups = {"exact_unary": EXACT_UNARY, "exact_binary": EXACT_BINARY, "libm_unary": LIBM_UNARY,
                  "libm_binary": LIBM_BINARY} if dt.kind == "f" else {"int_unary": INT_UNARY, "int_binary": INT_BINARY}
        for group, names in groups.items():
            names = _defined(names, *([x, x] if "binary" in group else [x]))
            if names:
                out[group, dt] = (jk.jit(_ufuncs_of(names), backend="cuda-emulator"), _ufuncs_of(names), names)
        out["casts", dt] = (jk.jit(_casts, backend="cuda-emulator"), _casts, ())
        lits = _literals_of(dt)
        out["literals", dt] = (jk.jit(lits, backend="cuda-emulator"), lits, lits.names)
    for pair in MIXED_PAIRS:
        out["mixed", pair] = (jk.jit(_mixed, backend="cuda-emulator"), _mixed, MIXED_NAMES)
    return out


# dtype pairs whose promotion or comparison NumPy 2 decides specially: int64 with uint64 compares
# exactly (no float64 round trip) but adds in float64, narrow types widen, float16 with int16 is float32
MIXED_PAIRS = [(np.dtype(a), np.dtype(b)) for a, b in [("int64", "uint64"), ("uint64", "int8"), ("int8", "uint8"),
                                                         ("uint32", "int32"), ("float16", "int16"),
                                                         ("float32", "int64"), ("float64", "uint64"), ("bool", "int8")]]
MIXED_NAMES = ("==", "<", ">=", "+", "maximum")


def _mixed(x, y):
    return x == y, x < y, x >= y, x + y, np.maximum(x, y)


def _both_bool(x, c) -> bool:
    return isinstance(c, bool) and x.dtype == np.bool_


def _literals_of(dt: np.dtype):
    """x + c, x * c and c - x for Python scalars c at the edges of `dt` (weak, NEP 50: they take
    x's dtype, or float64 for a float with an integer array): each c is a literal of the
    rendered C (ctype.literal: hex floats, -0.0, NaN and infinities, INT64_MIN, unsigned suffixes)."""
    if dt.kind == "f":
        info = np.finfo(dt)
        scalars = [0.0, -0.0, 1.0, -1.0, 0.1, 1 / 3, float(info.max), float(info.tiny), float(info.smallest_subnormal),
                   -float(info.smallest_subnormal), 65504.0, 65519.0, 1e-300, 2.0 ** 53 + 2, float("nan"),
                   float("inf"), float("-inf"), 0, 7, -(2 ** 31), 2 ** 63 - 1]
        if dt.itemsize < 8:
            scalars = [c for c in scalars if c != 1e-300]  # NumPy warns; it rounds to 0 either way
    elif dt.kind == "b":
        scalars = [True, False, 0.5, 3, -0.0]
    else:
        info = np.iinfo(dt)
        scalars = [0, 1, 2, int(info.min), int(info.max), int(info.max) // 3, int(info.min) + 1, 0.5, -0.0]
        scalars += [-1, -2] if dt.kind == "i" else []

    def f(x):  # (bool - bool raises in NumPy: xor there)
        return tuple(r for c in scalars for r in (x + c, x * c, c ^ x if _both_bool(x, c) else c - x))
    f.names = tuple(f"{op} {c!r}" for c in scalars for op in ("x +", "x *", "- x,"))
    return f


@pytest.fixture(scope="module")
def programs() -> dict:
    """Every program of the module, rendered and then built in one prebuild (parallel chunks)."""
    progs = _programs()
    recorded = []
    for (group, dt), (jitted, _, _) in progs.items():
        args = [np.zeros(N, d) for d in dt] if group == "mixed" else [np.zeros(N, dt)] * (2 if "binary" in group else 1)
        with emulator.record_modules() as modules, warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's overflow of a weak scalar, traced
            try:
                jitted(*args)
            except emulator.RenderedOnly:
                pass
        recorded += modules
    emulator.prebuild(recorded)
    return progs


def _float_values(dt: np.dtype, lo: float | None = None, hi: float | None = None) -> st.SearchStrategy:
    """Any float of `dt` (subnormals, extremes, both zeros, NaN, infinities), or within [lo, hi]
    plus the special values."""
    width = 8 * dt.itemsize
    specials = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, np.inf, -np.inf, np.nan,
                                float(np.finfo(dt).max), float(np.finfo(dt).tiny), float(np.finfo(dt).smallest_subnormal)])
    if lo is None:
        return st.one_of(specials, st.floats(width=width, allow_nan=True, allow_infinity=True))
    return st.one_of(specials, st.floats(lo, hi, width=width))


def _int_values(dt: np.dtype) -> st.SearchStrategy:
    if dt.kind == "b":
        return st.booleans()
    info = np.iinfo(dt)
    return st.one_of(st.sampled_from([0, 1, -1 if dt.kind == "i" else 2, int(info.min), int(info.max),
                                      int(info.min) + 1, int(info.max) - 1]),
                     st.integers(int(info.min), int(info.max)))


def _draw(data, dt: np.dtype, elements: st.SearchStrategy) -> np.ndarray:
    return data.draw(hnp.arrays(dt, N, elements=elements))


def _run(programs: dict, group: str, dt: np.dtype, *args: np.ndarray) -> tuple:
    jitted, plain, names = programs[group, dt]
    with np.errstate(all="ignore"):
        return jitted(*args), numpy_result(plain, *args), names


def _assert_each(got: tuple, expected: tuple, names: tuple, exact: bool, args: tuple) -> None:
    for name, g, e in zip(names or [str(d) for d in ALL_DTYPES], got, expected):
        try:
            if exact:
                assert_matches_numpy(g, e, rtol=0.0, atol=0.0, _path=name)
                assert_zero_signs(g, e)
            else:
                assert_matches_numpy(g, e, _path=name)
                _same_signs_of_zero_results(g, e)  # sin(-0.0) is -0.0 in C, libdevice and NumPy
        except AssertionError as err:
            raise AssertionError(f"{name} of {[a.dtype.name for a in args]} {args}: {err}") from None


def _same_signs_of_zero_results(got: np.ndarray, expected: np.ndarray) -> None:
    """Where both results are zeros (C99 Annex F decides their sign: sin(-0.0), expm1(-0.0),
    atan2(-0.0, 1.0), ...), the same zero."""
    g, e = np.asarray(got), np.asarray(expected)
    if e.dtype.kind == "f":
        both = (g == 0) & (e == 0)
        np.testing.assert_array_equal(np.signbit(g[both]), np.signbit(e[both]))


@pytest.mark.parametrize("dt", FLOAT_DTYPES, ids=str)
@settings(max_examples=20, deadline=None, suppress_health_check=_SLOW_DRAWS)
@given(data=st.data())
def test_exact_float_ufuncs_bit_for_bit(programs, dt, data) -> None:
    """+ - * /, sqrt, floor/ceil/trunc/rint, abs, square, reciprocal, fmod, copysign, fmax/fmin,
    comparisons and logical ufuncs over any floats (subnormals, NaN, infinities, extremes):
    NumPy's bits and the sign of every zero (float16 rounded after every operation)."""
    x, y = _draw(data, dt, _float_values(dt)), _draw(data, dt, _float_values(dt))
    got, expected, names = _run(programs, "exact_unary", dt, x)
    _assert_each(got, expected, names, True, (x,))
    got, expected, names = _run(programs, "exact_binary", dt, x, y)
    _assert_each(got, expected, names, True, (x, y))


@pytest.mark.parametrize("dt", FLOAT_DTYPES, ids=str)
@settings(max_examples=20, deadline=None, suppress_health_check=_SLOW_DRAWS)
@given(data=st.data())
def test_math_library_ufuncs_within_cpu_tolerances(programs, dt, data) -> None:
    """exp, log, sin, ..., power, arctan2, hypot, cbrt over wide ranges with NaN, infinities and
    zeros: the same NaN and infinity positions as NumPy, finite values within helpers.FLOAT_TOL
    (the CPU backend's tolerances)."""
    x = _draw(data, dt, _float_values(dt, -30.0, 30.0))
    y = _draw(data, dt, _float_values(dt, -8.0, 8.0))
    got, expected, names = _run(programs, "libm_unary", dt, x)
    _assert_each(got, expected, names, False, (x,))
    got, expected, names = _run(programs, "libm_binary", dt, np.abs(x), y)
    _assert_each(got, expected, names, False, (np.abs(x), y))


@pytest.mark.parametrize("dt", INT_DTYPES, ids=str)
@settings(max_examples=20, deadline=None, suppress_health_check=_SLOW_DRAWS)
@given(data=st.data())
def test_integer_ufuncs_over_the_whole_range(programs, dt, data) -> None:
    """Wrap-around arithmetic (C's promotion of narrow types and signed overflow must not leak),
    bit operations, max/min, comparisons and logical ufuncs, for any values of each integer dtype
    and bool."""
    x, y = _draw(data, dt, _int_values(dt)), _draw(data, dt, _int_values(dt))
    got, expected, names = _run(programs, "int_unary", dt, x)
    _assert_each(got, expected, names, True, (x,))
    got, expected, names = _run(programs, "int_binary", dt, x, y)
    _assert_each(got, expected, names, True, (x, y))


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
@settings(max_examples=20, deadline=None, suppress_health_check=_SLOW_DRAWS)
@given(data=st.data())
def test_casts_to_every_dtype(programs, dt, data) -> None:
    """x.astype(d) for every destination: int -> float rounding (int64/uint64 -> float16/32),
    float -> float16 (one rounding), float -> int of any value (NaN, infinities and out-of-range
    values give NumPy's x86 values, which the renderer writes out; a GPU's cast would saturate)."""
    x = _draw(data, dt, _float_values(dt) if dt.kind == "f" else _int_values(dt))
    got, expected, _ = _run(programs, "casts", dt, x)
    if dt.kind == "f":
        got, expected = _defined_casts(x, got), _defined_casts(x, expected)
    _assert_each(got, expected, (), True, (x,))


def _defined_casts(x: np.ndarray, results: tuple) -> tuple:
    """The elements of float -> integer casts NumPy defines (the truncated value fits the
    destination): for NaN, infinities and values out of range its answer depends on the loop
    (the scalar loop keeps the low bits of a 64-bit conversion, the SIMD loop of a long array
    gives 0 or 2**31 for uint32), so those elements are left out here;
    test_ufuncs.py::test_float_to_int_casts_of_special_values pins the values of the long loop."""
    out = []
    with np.errstate(all="ignore"):
        t = np.trunc(x.astype(np.float64))
    for d, r in zip(ALL_DTYPES, results):
        if d.kind in "iu":
            info = np.iinfo(d)
            r = r[np.isfinite(t) & (t >= float(info.min)) & (t < float(info.max) + 1.0)]
        out.append(r)
    return tuple(out)


_TIE_VALUES = st.sampled_from([0.0, -0.0, np.nan, 1.0, -1.0, np.inf, -np.inf])
_jitted_fmax_fmin: dict = {}


def _fmax_fmin(x, y):
    return np.fmax(x, y), np.fmin(x, y), np.maximum(x, y), np.minimum(x, y)


@pytest.mark.parametrize("backend", ["cpu", "interpret", "cuda-emulator"])
@pytest.mark.parametrize("dt", FLOAT_DTYPES, ids=str)
@settings(max_examples=15, deadline=None, suppress_health_check=_SLOW_DRAWS)
@given(data=st.data())
def test_fmax_fmin_nan_and_equal_zeros_on_every_backend(dt, backend, data) -> None:
    """fmax/fmin ignore NaN and, of 0.0 and -0.0, keep the operand NumPy's array loop keeps (the
    first for float16, the second for float32/float64, as maximum/minimum: the shared rule
    semantic_rules.float_fmax_fmin). C's fmaxf kept the second for float16 and LLVM's maxnum the
    first for float32/float64 before the rule; the sign of every zero is compared."""
    x, y = _draw(data, dt, _TIE_VALUES), _draw(data, dt, _TIE_VALUES)
    jitted = _jitted_fmax_fmin.setdefault((dt, backend), jk.jit(_fmax_fmin, backend=backend))
    got, expected = jitted(x, y), numpy_result(_fmax_fmin, x, y)
    assert_matches_numpy(got, expected, rtol=0.0, atol=0.0)
    assert_zero_signs(got, expected)


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
@settings(max_examples=10, deadline=None, suppress_health_check=_SLOW_DRAWS)
@given(data=st.data())
def test_python_scalar_literals_bit_for_bit(programs, dt, data) -> None:
    """Python scalars written into the C source as literals of the operand's dtype (extremes,
    signed zeros, NaN, infinities, subnormals, values float16 or float32 round): NumPy's bits and
    zero signs (integers exact, wrapping)."""
    x = _draw(data, dt, _float_values(dt, -4.0, 4.0) if dt.kind == "f" else _int_values(dt))
    got, expected, names = _run(programs, "literals", dt, x)
    _assert_each(got, expected, names, True, (x,))


def _values_of(dt: np.dtype) -> st.SearchStrategy:
    return _float_values(dt) if dt.kind == "f" else _int_values(dt)


@pytest.mark.parametrize("pair", MIXED_PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
@settings(max_examples=15, deadline=None, suppress_health_check=_SLOW_DRAWS)
@given(data=st.data())
def test_mixed_dtype_comparisons_and_promotions(programs, pair, data) -> None:
    """Comparisons across signedness (int64 with uint64 exact, as NumPy 2 compares), additions
    in the promoted dtype, maximum of promoted values, for any values of both dtypes."""
    x, y = _draw(data, pair[0], _values_of(pair[0])), _draw(data, pair[1], _values_of(pair[1]))
    got, expected, names = _run(programs, "mixed", pair, x, y)
    _assert_each(got, expected, names, True, (x, y))
