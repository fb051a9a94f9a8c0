"""Static arguments: values that compare equal but differ (signed zeros, int/float/bool, NaN
bit patterns) each get their own cache entry."""
from __future__ import annotations

import zlib

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import assert_matches_numpy as assert_same
from jitkernel.api import static_key


def _bits(v) -> bytes:
    return repr(static_key(v)).encode()


def _fingerprint(k) -> float:
    """A function of everything traced code can observe of a static value (type, bits)."""
    return float(zlib.crc32(repr((type(k).__name__, _bits(k))).encode()) % 997)


def test_signed_zero_static_gets_its_own_entry():
    f = jk.jit(np.full_like, static_argnums=1)
    a, b = f(np.ones(2), 0.0), f(np.ones(2), -0.0)
    assert not np.signbit(a).any() and np.signbit(b).all()
    assert np.signbit(f(np.ones(2), -0.0)).all() and not np.signbit(f(np.ones(2), 0.0)).any()
    assert f.cache_size() == 2
    (rec,) = f.recompilations()
    assert rec.reasons == ["fill_value: static value 0.0 -> -0.0"]


def test_int_float_bool_statics_get_their_own_entries():
    g = jk.jit(lambda x, k: x + np.full((), k), static_argnames="k")
    x = np.ones(2, np.int8)
    for k in (1, 1.0, True, np.float32(1), np.int16(1), 1.0, 1):
        got, want = g(x, k=k), x + np.full((), k)
        assert got.dtype == want.dtype, k
        np.testing.assert_array_equal(got, want)
    assert g.cache_size() == 5
    reasons = [r for rec in g.recompilations() for r in rec.reasons]
    assert reasons[0] == "k: static value 1 -> 1.0" and len(reasons) == 4
    assert all(r.startswith("k: static value ") for r in reasons), reasons


def test_nan_static_matches_itself_bit_for_bit():
    f = jk.jit(lambda x, k: x * np.copysign(1.0, k), static_argnums=1)
    x = np.ones(3)
    np.testing.assert_array_equal(f(x, float("nan")), x)
    np.testing.assert_array_equal(f(x, float("nan")), x)  # another NaN object, same bits: a hit
    assert f.cache_size() == 1 and f.recompilations() == []
    np.testing.assert_array_equal(f(x, -float("nan")), -x)  # the sign of a NaN is observable
    (rec,) = f.recompilations()
    assert rec.reasons[0].startswith("k: static value nan -> nan (bits 0x7ff8")


_SCALAR_TWINS = st.one_of(
    st.sampled_from([(0.0, -0.0), (1, 1.0), (1, True), (0, False), (True, 1.0), (0.0, False),
                     (np.float32(0.0), np.float32(-0.0)), (np.float64(-0.0), 0.0),
                     (complex(0.0, 0.0), complex(-0.0, 0.0)), (complex(1.0, 0.0), complex(1.0, -0.0)),
                     (1.0, complex(1.0, 0.0))]),
    st.integers(-100, 100).map(lambda i: (i, float(i))),
    st.integers(-100, 100).map(lambda i: (np.int8(i), i)),
    st.integers(-100, 100).map(lambda i: (np.int8(i), np.int64(i))),
    st.floats(width=32, allow_nan=False).map(lambda v: (np.float32(v), np.float64(v))),
    st.floats(width=32, allow_nan=False).map(lambda v: (np.float32(v), float(v))),
    st.floats(width=16, allow_nan=False).map(lambda v: (np.float16(v), np.float32(v))),
)
_TWINS = st.one_of(
    _SCALAR_TWINS,
    st.lists(_SCALAR_TWINS, min_size=1, max_size=3).map(lambda ps: (tuple(a for a, _ in ps), tuple(b for _, b in ps))),
    _SCALAR_TWINS.map(lambda p: (frozenset([p[0]]), frozenset([p[1]]))),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TWINS)
def test_equal_static_values_that_differ_never_share_an_entry(pair):
    """Any pair `a == b` whose type or bits differ: the function sees each as itself."""
    a, b = pair
    assert a == b and static_key(a) != static_key(b)
    x = np.ones((), np.float32)  # broadcasts against tuples of any length

    def fp(x, k):
        return x + _fingerprint(k)
    f = jk.jit(fp, static_argnums=1, backend="interpret", disk_cache=False)
    for k in (a, b, a):
        assert_same(f(x, k), fp(x, k))
    assert f.cache_size() == 2
    if not any(isinstance(v, (complex, frozenset)) or (isinstance(v, tuple) and any(isinstance(e, complex) for e in v))
               for v in pair):
        def arr(x, k):  # dtype and sign bits of NumPy's own conversion of the value
            return np.asarray(k) * x
        g = jk.jit(arr, static_argnums=1, backend="interpret", disk_cache=False)
        for k in (b, a, b):
            got, want = g(x, k), arr(x, k)
            assert_same(got, want)
            assert np.array_equal(np.signbit(got), np.signbit(want))


def test_equal_statics_on_the_cpu_backend_in_a_tuple():
    f = jk.jit(lambda x, ks: x * np.asarray(ks), static_argnames="ks", disk_cache=False)
    x = np.ones(2, np.float32)
    for ks in ((1, 0.0), (1.0, -0.0), (True, 0.0)):
        got, want = f(x, ks=ks), x * np.asarray(ks)
        assert got.dtype == want.dtype and np.array_equal(np.signbit(got), np.signbit(want)), ks
    assert f.cache_size() == 3


def test_static_integer_calls_take_the_warm_path():
    """An integer argument used as a size is made static (traced again by value); its calls
    then have warm entries keyed by the value, each running the program of its own value."""
    def f(n, x):
        out = np.zeros((n, 2))
        out[:, 0] = x[:n]
        return out
    j = jk.jit(f)
    x = np.arange(6.0)
    assert_same(j(3, x), f(3, x))
    assert j.static_argnums == frozenset({0}) and len(j._fast) == 1
    for n in (3, 2, 3, np.int64(2), np.int32(3), 5, 2):
        assert_same(j(n, x), f(n, x))
    assert j.cache_size() == 5 and len(j._fast) == 5  # 3, 2, 5 and the two NumPy integers


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(st.tuples(st.sampled_from([int, np.int64, np.int16, bool]), st.integers(0, 4)),
                      min_size=1, max_size=8),
       static=st.booleans())
def test_random_static_integer_call_sequences_match_numpy(calls, static):
    """Warm entries keyed by static integers (user-marked or found by the retrace) never answer
    a call of another value or type: every call of a sequence matches NumPy. (Booleans only
    where marked static: the retrace makes integers static, not booleans.)"""
    def f(x, k):
        return np.full(k + 1, k) * x[0] + x[:1].sum()
    j = jk.jit(f, static_argnums=1) if static else jk.jit(f)
    x = np.array([1.5, 2.0])
    for kind, v in calls:
        k = kind(v) if kind is not bool else bool(v % 2) if static else v
        assert_same(j(x, k), f(x, k))
