"""Issue 7 classes found by the differential soak (benchmarks/soak.py) and fixed on main:
mean/var/std divide by NumPy's strong intp count; a sum over no axes adds to the identity;
NumPy warnings raised while tracing a `python -c` program."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk

FLOATS = [np.float16, np.float32, np.float64]


def _same(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # NaN equals NaN; values bit for bit otherwise
    assert np.signbit(got).tolist() == np.signbit(want).tolist()


@pytest.mark.parametrize("fn", ["mean", "var", "std"])
def test_float16_statistics_of_more_than_65504_values_follow_numpy(fn, backend):
    # NumPy divides by an intp count in float64: the float16 sum overflows to inf and the
    # result is inf, never inf / float16(300000) = inf / inf = nan.
    a = np.full(300_000, 3.0, np.float16)
    with np.errstate(all="ignore"):
        want = getattr(np, fn)(a)
    _same(jk.jit(lambda x: getattr(np, fn)(x), backend=backend)(a), want)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(dtype=st.sampled_from(FLOATS), rows=st.integers(1, 4), cols=st.integers(1, 300),
       axis=st.sampled_from([None, 0, 1, -1]), fn=st.sampled_from(["mean", "var", "std"]),
       ddof=st.sampled_from([0, 1, 0.5]), seed=st.integers(0, 2**16))
def test_statistics_equal_numpy_bit_for_bit(dtype, rows, cols, axis, fn, ddof, seed):
    a = (np.random.default_rng(seed).standard_normal((rows, cols)) * 100).astype(dtype)
    kw = {} if fn == "mean" else {"ddof": ddof}
    with np.errstate(all="ignore"):
        want = getattr(np, fn)(a, axis=axis, **kw)
        got = jk.jit(lambda x: getattr(np, fn)(x, axis=axis, **kw))(a)
    _same(got, want)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape, axis", [((), None), ((), ()), ((1,), ()), ((3, 2), ()), ((2, 9), ())])
@pytest.mark.parametrize("fn", ["sum", "prod", "mean", "max", "min"])
def test_reductions_over_no_axes_keep_numpys_signed_zero(dtype, shape, axis, fn, backend):
    a = np.full(shape, -0.0, dtype)
    _same(jk.jit(lambda x: getattr(np, fn)(x, axis=axis), backend=backend)(a), getattr(np, fn)(a, axis=axis))


def test_reduction_over_no_axes_is_a_new_native_array():
    a = np.array([1.5, -0.0], ">f8")
    got = jk.jit(lambda x: np.max(x, axis=()))(a)
    assert got.dtype == np.max(a, axis=()).dtype and got.dtype.isnative


def test_numpy_warning_while_tracing_a_python_dash_c_program():
    # The warning points at the user's line; the loader of `python -c`'s __main__ cannot give
    # source lines, which used to raise ImportError out of the warning itself.
    code = ("import numpy as np, jitkernel as jk\n"
            "a = np.ones(3, np.float16)\n"
            "print(jk.jit(lambda x: x * 1e300)(a))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[inf inf inf]"
    assert "<string>:3: RuntimeWarning: overflow encountered" in proc.stderr


# An unread value whose computation raises in NumPy (integer power, negative exponent) must still
# raise: dead-code elimination may not drop a statement NumPy executes.
_UNREAD_STATEMENTS = [
    "u = a ** b",
    "u = (a ** b) * 2",
    "u = np.power(a, b).sum()",
    "u = a ** b; w = u + 1",
    "u = (a ** b)[1:]",
]
_RETURNS = ["a + 1", "a * b", "(a ** 2).sum()", "a"]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(stmt=st.sampled_from(_UNREAD_STATEMENTS), ret=st.sampled_from(_RETURNS),
       dtype=st.sampled_from([np.int8, np.int32, np.int64, np.uint8, np.uint64]),
       exps=st.lists(st.integers(-2, 3), min_size=3, max_size=3),
       backend=st.sampled_from(["cpu", "interpret"]))
def test_unread_integer_powers_still_raise(stmt, ret, dtype, exps, backend):
    ns: dict = {"np": np}
    exec(f"def f(a, b):\n    {stmt}\n    return {ret}\n", ns)
    f = ns["f"]
    a = np.array([3, 1, 2], dtype)
    b = np.array(exps).astype(dtype) if np.dtype(dtype).kind == "i" else np.array([abs(e) for e in exps], dtype)
    try:
        want = f(a, b)
    except ValueError as e:
        with pytest.raises(ValueError, match="negative integer powers"):
            jk.jit(f, backend=backend)(a, b)
        assert "negative integer powers" in str(e)
        return
    got = jk.jit(f, backend=backend)(a, b)
    _same(got, want) if np.asarray(want).dtype.kind == "f" else np.testing.assert_array_equal(got, want)


def test_hidden_outputs_never_reach_the_caller():
    f = jk.jit(lambda a: (a ** a, a)[1])
    out = f(np.array([1, 2], np.int64))
    assert isinstance(out, np.ndarray) and out.tolist() == [1, 2]
    g = jk.jit(lambda a: {"x": a + 1} if (a ** a) is not None else None)
    assert list(g(np.array([1, 2]))) == ["x"]


def test_recompilation_records_are_bounded(monkeypatch):
    # A function recompiled in a loop keeps only the latest records (memory stays flat).
    import collections
    import jitkernel.api as api
    f = jk.jit(lambda x, n: x + n, static_argnums=1, backend="interpret")
    f._recompilations = collections.deque(maxlen=3)
    for n in range(6):
        f(np.zeros(2), n)
    recs = f.recompilations()
    assert len(recs) == 3 and recs[-1].reasons == ["n: static value 4 -> 5"]
    assert api.MAX_RECOMPILATION_RECORDS >= 100
    assert jk.jit(lambda x: x)._recompilations.maxlen == api.MAX_RECOMPILATION_RECORDS


@pytest.mark.parametrize("fill", [np.nan, np.inf, -1, 300, 300.5, -0.0, True, 2**63, np.float32(1e10)])
@pytest.mark.parametrize("dtype", [np.uint16, np.int8, np.int64, np.float16, np.bool_])
def test_full_like_converts_a_static_fill_as_numpy_does(fill, dtype, backend):
    # np.full's copyto(casting="unsafe"): NaN and out-of-range floats become whatever NumPy
    # makes of them; out-of-range Python ints raise NumPy's OverflowError.
    a = np.array([6, 5], dtype)
    with np.errstate(all="ignore"):
        try:
            want = np.full_like(a, fill)
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            with pytest.raises(type(e)):
                jk.jit(np.full_like, static_argnums=1, backend=backend)(a, fill)
            return
        got = jk.jit(np.full_like, static_argnums=1, backend=backend)(a, fill)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


_ZERO_D_FUNCTIONS = [lambda a: a, lambda a: a.copy(), lambda a: a.reshape(()), lambda a: a[...],
                     lambda a: a + 1, lambda a: a.sum(), lambda a: (a, a * 2), lambda a: a.T,
                     lambda a: np.abs(a), lambda a: np.sum(a, keepdims=True)]


@pytest.mark.parametrize("k", range(len(_ZERO_D_FUNCTIONS)))
@pytest.mark.parametrize("x", [np.array(0.5, ">f8"), np.array(3, np.int16), np.array([1.5], ">f4"),
                               np.array(-0.0, np.float32), np.array(True)], ids=repr)
def test_zero_d_results_are_numpy_scalars(k, x, backend):
    # Every 0-d result is a NumPy scalar of NumPy's value and dtype (native byte order; NumPy
    # returns some of these as 0-d arrays: docs/numpy-support.md, "0-d results").
    f = _ZERO_D_FUNCTIONS[k]
    want, got = f(x), jk.jit(f, backend=backend)(x)
    for w, g in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
        w = np.asarray(w)
        assert g.shape == w.shape
        if w.ndim == 0:
            assert isinstance(g, np.generic) and g.dtype == w.dtype.newbyteorder("=")
        else:
            assert type(g) is np.ndarray and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
        assert np.signbit(np.asarray(g, np.float64)).tolist() == np.signbit(np.asarray(w, np.float64)).tolist()


@pytest.mark.parametrize("value", [np.nan, -np.nan, -0.0, np.inf])
def test_uniform_nan_and_signed_zero_constants_stay_shape_generic(value):
    # A folded constant whose elements share one bit pattern becomes a broadcast scalar, NaN
    # included, so the program's kernels do not change with the size (README: sizes 1..5
    # compile at most twice).
    compiles = []
    unsub = jk.events.subscribe(lambda e: compiles.append(e) if isinstance(e, jk.events.CompileEvent) else None)
    try:
        f = jk.jit(lambda a: (a + np.full(a.shape, value), np.argmin(value < a, axis=0)))
        for n in range(1, 6):
            a = np.arange(n, dtype=np.float64)
            got, want = f(a), (a + np.full(a.shape, value), np.argmin(value < a, axis=0))
            _same(got[0], want[0])
            assert got[1] == want[1]
    finally:
        unsub()
    assert len(compiles) <= 2


@settings(max_examples=60, deadline=None, derandomize=True)
@given(op=st.sampled_from(["%", "//", "fmod", "divmod0", "divmod1"]),
       dtype=st.sampled_from(FLOATS),
       divisor=st.sampled_from([1e300, 2.0, -3.5, 0.0, -0.0, np.inf, np.nan]),
       special=st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0]))
def test_nan_through_float_remainders_survives_llvm(op, dtype, divisor, special):
    # LLVM folded isnan(fmod(select(c, NaN, y), x)) to false when fmod was a libm call; the
    # backend emits `frem` now. Values chosen by a comparison, then reduced modulo a constant.
    expr = {"%": "v % D", "//": "v // D", "fmod": "np.fmod(v, D)",
            "divmod0": "divmod(v, D)[0]", "divmod1": "divmod(v, D)[1]"}[op]
    ns: dict = {"np": np, "D": dtype(divisor), "S": dtype(special), "T": dtype(0.75)}  # constants
    exec(f"def f(a):\n    v = np.where(a >= 0, S, T)\n    r = {expr}\n"
         f"    return np.isnan(r), np.signbit(r), r\n", ns)
    f = ns["f"]
    a = np.array([-4.5, 0.25, 7.0, -0.0], dtype)
    with np.errstate(all="ignore"):
        want = f(a)
        got = jk.jit(f)(a)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[2], want[2])


@pytest.mark.parametrize("fn", [lambda a: np.sum(a == a, axis=0),
                                lambda a: (np.sum(np.clip(a == a, -5, 9) <= 7), a.shape[0] * 2.0),
                                lambda a: np.full(3, a.shape[0])])
def test_programs_that_fold_to_a_size_dependent_constant_stay_shape_generic(fn):
    # The folded constant is an output stored as a literal; its unread buffer used to key the
    # kernel structure, so each size compiled again (soak seed 0, program 3954).
    compiles = []
    unsub = jk.events.subscribe(lambda e: compiles.append(e) if isinstance(e, jk.events.CompileEvent) else None)
    try:
        f = jk.jit(fn)
        for n in range(1, 6):
            a = np.arange(n, dtype=np.uint16)
            got, want = f(a), fn(a)
            for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
                np.testing.assert_array_equal(g, w)
                assert np.asarray(g).dtype == np.asarray(w).dtype
    finally:
        unsub()
    assert len(compiles) <= 2
