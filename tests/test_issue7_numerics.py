"""Issue 7, numerics: reductions in NumPy's order (1d), integer comparisons by value (2), NumPy's
signed zeros in maximum/minimum (6), float16 reductions on shape-generic programs (13) and
Python int range checks that follow NumPy per operation (14). Every expectation is computed
by the installed NumPy."""
from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitkernel as jk
import emulator_suite

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
BACKENDS = ["cpu", "interpret"] + emulator_suite.emulator_backends()  # cuda-emulator where g++ is (tests/emulator_suite.py)
FLOATS = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)]


def numpy_or_error(f, *args):
    """NumPy's result, or the type of the exception it raises."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f(*args)
    except Exception as e:  # noqa: BLE001 - the type is the expectation
        return type(e)


def jit_or_error(f, *args, backend="cpu"):
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return jk.jit(f, backend=backend)(*args)
    except Exception as e:  # noqa: BLE001
        return type(e)


def kind(a) -> np.ndarray:
    """0 finite, 1 nan, 2 +inf, 3 -inf: the kind of each value."""
    a = np.asarray(a, dtype=np.float64)
    return np.select([np.isnan(a), np.isposinf(a), np.isneginf(a)], [1, 2, 3], 0)


def same_bits(got, expected) -> bool:
    got, expected = np.asarray(got), np.asarray(expected)
    return got.dtype == expected.dtype and got.shape == expected.shape and got.tobytes() == expected.tobytes()


# ----------------------------------------------------------------------------- 1d: reduction order

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f, x, expected", [
    (np.sum, [1e308, 1e308, -1e308], np.inf),
    (np.prod, [1e300, 1e300, 1e-300], np.inf),
    (np.prod, [1e200, 1e200, 0.0], np.nan),
    (np.mean, [1e308, 1e308, -1e308], np.inf),
])
def test_overflowing_reductions_are_not_finite(backend, f, x, expected):
    if backend == "cuda-emulator":
        pytest.skip("the GPU reduces in a tree, not NumPy's order: where NumPy's order overflows and the tree "
                    "does not, the result's kind differs (docs/gpu.md, 'Reduction order on the GPU')")
    x = np.array(x)
    got = jk.jit(f, backend=backend)(x)
    with np.errstate(all="ignore"):
        assert kind(got) == kind(f(x)) == kind(expected)


def _extreme_array(draw, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    info = np.finfo(dtype)
    big = float(info.max)
    # Two of 0.6 * max overflow, one cancels another: the order decides between inf and finite.
    pool = [0.6 * big, -0.6 * big, 0.6 * big, -0.6 * big, big, -big, big / 3, 1.0, -1.0, 0.0, -0.0,
            float(info.tiny), np.inf, -np.inf, np.nan, 3.5, -2.25, float(info.eps)]
    weights = draw(st.lists(st.integers(0, 4), min_size=len(pool), max_size=len(pool)))
    choices = [v for v, w in zip(pool, weights) for _ in range(w)] or [1.0]
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    with np.errstate(all="ignore"):
        return np.asarray(rng.choice(np.array(choices), size=shape), dtype=dtype)


@st.composite
def reduction_cases(draw):
    dtype = draw(st.sampled_from(FLOATS))
    n = draw(st.one_of(st.integers(0, 20), st.integers(0, 300)))
    layout = draw(st.sampled_from(["1d", "rows", "cols", "3d-inner", "3d-outer-inner", "3d-all"]))
    shape, axis = {
        "1d": ((n,), None), "rows": ((3, n), 1), "cols": ((n, 3), 0), "3d-inner": ((2, 3, n), (1, 2)),
        "3d-outer-inner": ((2, 3, n), (0, 2)), "3d-all": ((2, n, 3), None),
    }[layout]
    return _extreme_array(draw, np.dtype(dtype), shape), axis, draw(st.sampled_from(["sum", "prod", "mean", "var", "std"]))


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(case=reduction_cases())
def test_reductions_of_extreme_values_give_numpy_kind_and_sign(backend, case):
    """Huge values, infinities and NaNs of lengths 0..300 along the reduced axes: the
    inf/nan/finite pattern and the sign of every result are NumPy's (float sums and products
    of these layouts are in fact bit-identical: NumPy's order is followed exactly)."""
    x, axis, name = case
    f = getattr(np, name)
    expected = numpy_or_error(lambda a: f(a, axis=axis), x)
    got = jit_or_error(lambda a: f(a, axis=axis), x, backend=backend)
    if isinstance(expected, type):
        assert got is expected
        return
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(kind(got), kind(expected))
    # The sign of every non-NaN result (a NaN's sign bit is the hardware's, not NumPy's).
    number = ~np.isnan(np.asarray(expected, np.float64))
    np.testing.assert_array_equal(np.signbit(got)[number], np.signbit(expected)[number])
    if name in ("sum", "prod"):
        g, e = np.asarray(got), np.asarray(expected)
        assert same_bits(np.where(number, g, 0), np.where(number, e, 0)), (got, expected)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [3, 7, 8, 9, 127, 128, 129, 300, 1000, 4096, 4097, 10007, 1 << 20])
def test_float_sums_are_numpys_pairwise_sum_bit_for_bit(dtype, n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-4, 5, n)).astype(dtype)
    assert same_bits(jk.jit(np.sum)(x), np.sum(x))
    rows = x[: (n // 3) * 3].reshape(3, -1)
    assert same_bits(jk.jit(lambda a: a.sum(axis=1))(rows), rows.sum(axis=1))
    assert same_bits(jk.jit(lambda a: a.sum(axis=0))(rows), rows.sum(axis=0))


def test_fused_and_generic_reductions_follow_numpy_order():
    """Fused bodies, merged reductions, row kernels and shape-generic kernels (the block size a
    run-time parameter) keep NumPy's order."""
    rng = np.random.default_rng(0)
    f = jk.jit(lambda a: ((a * 2).sum(axis=-1), a.max(axis=-1), (a * a).sum()))
    for n in (5, 7, 9, 130, 1000, 5000):
        x = rng.standard_normal((3, n)).astype(np.float32)
        for got, expected in zip(f(x), ((x * 2).sum(axis=-1), x.max(axis=-1), (x * x).sum())):
            assert same_bits(got, expected)
    g = jk.jit(lambda a: a.sum(axis=(0, 2)))
    for n in (5, 7, 9, 300):
        x = rng.standard_normal((3, 4, n)).astype(np.float64)
        assert same_bits(g(x), x.sum(axis=(0, 2)))


# ----------------------------------------------------------------------------- 6: signed zeros

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_keep_numpys_zero_and_nan(backend, dtype, name):
    f = getattr(np, name)
    for a, b in [(0.0, -0.0), (-0.0, 0.0), (np.nan, 0.0), (0.0, np.nan), (-0.0, -0.0), (1.0, -0.0)]:
        for n in (1, 3, 17):
            x, y = np.full(n, a, dtype), np.full(n, b, dtype)
            for args in ((x, y), (x, dtype.type(b)), (x, b)):
                got, expected = jk.jit(f, backend=backend)(*args), f(*args)
                assert np.array_equal(np.isnan(got), np.isnan(expected))
                assert np.array_equal(np.signbit(got), np.signbit(expected)), (a, b, n, got, expected)
    assert np.signbit(jk.jit(f, backend=backend)(np.array([0.0], dtype), -0.0)) == np.signbit(f(np.array([0.0], dtype), -0.0))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_reductions_of_signed_zeros(backend, dtype, name):
    """Of equal zeros NumPy keeps the later one (float32/64) or the first (float16). Lengths
    1 + k * (64 / itemsize) are left out: there NumPy's own answer comes from its SIMD lane
    reduction and depends on the CPU's vector width."""
    rng = np.random.default_rng(1)
    f = getattr(np, name)
    lanes = 64 // dtype.itemsize
    for n in (1, 2, 3, 5, 8, 10, 16, 100):
        if dtype.itemsize != 2 and n > 1 and (n - 1) % lanes == 0:
            continue
        for _ in range(10):
            x = np.where(rng.random(n) < 0.5, -0.0, 0.0).astype(dtype)
            if rng.random() < 0.3:
                x[rng.integers(n)] = -1.0 if name == "max" else 1.0
            assert np.signbit(jk.jit(f, backend=backend)(x)) == np.signbit(f(x)), x
        cols = np.where(rng.random((n, 4)) < 0.5, -0.0, 0.0).astype(dtype)
        assert same_bits(jk.jit(lambda a: f(a, axis=0), backend=backend)(cols), f(cols, axis=0))
    nan = np.array([1.0, np.nan, -0.0], dtype)
    assert np.isnan(jk.jit(f, backend=backend)(nan))


# ----------------------------------------------------------------------------- 2: uint64 vs signed

COMPARISONS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
               np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal]
UNSIGNED = [np.dtype(n) for n in ("uint8", "uint16", "uint32", "uint64")]
SIGNED = [np.dtype(n) for n in ("int8", "int16", "int32", "int64")]


def _extremes(dtype: np.dtype) -> list[int]:
    info = np.iinfo(dtype)
    return sorted({info.min, info.min + 1, -1, 0, 1, 2, info.max // 2, info.max - 1, info.max} & set(
        range(info.min, info.max + 1)) if info.bits <= 8 else {info.min, info.min + 1, -1 if info.min < 0 else 0,
                                                                  0, 1, 2, info.max // 2, info.max - 1, info.max})


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(u=st.sampled_from(UNSIGNED), s=st.sampled_from(SIGNED), cmp=st.sampled_from(COMPARISONS),
       swap=st.booleans(), data=st.data())
def test_unsigned_against_signed_compares_by_value(backend, u, s, cmp, swap, data):
    a = np.array(data.draw(st.lists(st.sampled_from(_extremes(u)), min_size=1, max_size=6)), u)
    b = np.array(data.draw(st.lists(st.sampled_from(_extremes(s)), min_size=len(a), max_size=len(a))), s)
    args = (b, a) if swap else (a, b)
    expected = cmp(*args)
    got = jk.jit(lambda x, y: cmp(x, y), backend=backend)(*args)
    assert got.dtype == expected.dtype and np.array_equal(got, expected), (args, got, expected)


def test_uint64_comparison_examples():
    a, b = np.array([7, 2**64 - 1], np.uint64), np.array([-2, -1])
    assert jk.jit(lambda x, y: x < y)(a, b).tolist() == [False, False]
    assert jk.jit(lambda x, y: x == y)(a, b).tolist() == [False, False]
    assert jk.jit(lambda x, s: x > s)(a, -1).tolist() == [True, True]  # a Python int argument


# ----------------------------------------------------------------------------- 13: float16, dynamic sizes

F16_REDUCTIONS = {
    "sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean, "var": np.var,
    "std": np.std, "argmax": np.argmax, "argmin": np.argmin, "any": np.any, "all": np.all,
}


@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("name", sorted(F16_REDUCTIONS))
def test_float16_reductions_on_shape_generic_programs(name, axis):
    """Sizes 5, 7, 9: the third call runs on shape-generic kernels (run-time parameters), which
    once needed compiler-rt's __truncdfhf2 for their float literals."""
    f = F16_REDUCTIONS[name]
    g = jk.jit(lambda a: f(a, axis=axis))
    for n in (5, 7, 9):
        x = ((np.arange(2 * n).reshape(2, n) % 7) - 3).astype(np.float16) / np.float16(4)
        got, expected = g(x), f(x, axis=axis)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(expected, np.float64), rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("src", ["int64", "uint64", "float64", "float32", "int8", "bool"])
@pytest.mark.parametrize("dst", ["float16", "float32", "int16", "uint64", "bool"])
def test_shape_generic_literals_of_every_dtype(src, dst):
    """A literal that depends on a dynamic size becomes a run-time parameter and is converted
    in the kernel: every dtype pair must compile (no runtime-library symbol) and match NumPy."""
    f = jk.jit(lambda a: (a.astype(src) + np.asarray(a.shape[0], src)).astype(dst))
    for n in (3, 4, 5):
        x = np.arange(n, dtype=np.int16)
        expected = (x.astype(src) + np.asarray(n, src)).astype(dst)
        assert same_bits(f(x), expected)


# ----------------------------------------------------------------------------- 14: Python int bounds

INT_OPS = {
    "add": lambda a, s: a + s, "rsub": lambda a, s: s - a, "mul": lambda a, s: a * s,
    "floordiv": lambda a, s: a // s, "mod": lambda a, s: a % s, "and": lambda a, s: a & s,
    "or": lambda a, s: a | s, "lshift": lambda a, s: a << s, "rshift": lambda a, s: a >> s,
    "lt": lambda a, s: a < s, "le": lambda a, s: a <= s, "eq": lambda a, s: a == s,
    "ne": lambda a, s: a != s, "rgt": lambda a, s: s > a, "rge": lambda a, s: s >= a,
    "np.less": lambda a, s: np.less(a, s), "np.equal": lambda a, s: np.equal(s, a),
    "maximum": lambda a, s: np.maximum(a, s), "minimum": lambda a, s: np.minimum(s, a),
    "where": lambda a, s: np.where(a > 1, a, s), "where_first": lambda a, s: np.where(a > 1, s, a),
    "clip_lo": lambda a, s: np.clip(a, s, None), "clip_hi": lambda a, s: np.clip(a, None, s),
    "truediv": lambda a, s: a / s, "logical_and": lambda a, s: np.logical_and(a, s),
}
INTS = [np.dtype(n) for n in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")]


def _near_bounds(dtype: np.dtype) -> list[int]:
    info = np.iinfo(dtype)
    values = {info.min - 1, info.min, info.min + 1, info.max - 1, info.max, info.max + 1, 0, 1, -1, 1000,
              -1000, 2**40, -(2**40), 2**63 - 1, -(2**63)}
    return sorted(v for v in values if -(2**63) <= v < 2**63)


def _same_outcome(got, expected) -> bool:
    if isinstance(expected, type) or isinstance(got, type):
        return got is expected
    g, e = np.asarray(got), np.asarray(expected)
    return g.dtype == e.dtype and g.shape == e.shape and np.array_equal(g, e, equal_nan=e.dtype.kind == "f")


@SETTINGS
@given(dtype=st.sampled_from(INTS), op=st.sampled_from(sorted(INT_OPS)), data=st.data())
def test_python_int_bounds_follow_numpy_per_operation(dtype, op, data):
    """Comparisons are by value whatever the Python int; arithmetic, bitwise ops, shifts and
    maximum/minimum raise OverflowError outside the dtype's range; np.where casts unsafely;
    np.clip only checks the side that can clip. As a traced argument and as a constant."""
    s = data.draw(st.sampled_from(_near_bounds(dtype)))
    f = INT_OPS[op]
    info = np.iinfo(dtype)
    x = np.array([0, 1, 2, info.max, info.min], dtype)
    expected = numpy_or_error(f, x, s)
    assert _same_outcome(jit_or_error(f, x, s), expected), ("argument", s)
    assert _same_outcome(jit_or_error(lambda a: f(a, s), x), expected), ("constant", s)


def test_comparison_with_out_of_range_argument_examples():
    f = jk.jit(lambda x, s: x < s)
    assert f(np.arange(3, dtype=np.int8), 1000).tolist() == [True, True, True]
    assert f(np.arange(3, dtype=np.uint8), -1).tolist() == [False, False, False]
    with pytest.raises(OverflowError):
        jk.jit(lambda x, s: x + s)(np.arange(3, dtype=np.int8), 1000)
