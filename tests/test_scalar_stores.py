"""A Python or NumPy scalar ARGUMENT stored into an array follows NumPy 2 on every store path
(trace/scalar_store.py): a float 300.7 into uint8 raises OverflowError, NaN ValueError, a
complex into a float array TypeError, a NumPy scalar into a signed array by basic indexing is
stored by value, ... The value is only known when the call runs: the checks are run-time
checks, so they hold on warm (cached) calls too, and a call that raises leaves the caller's
array as NumPy leaves it.

The generator draws (store path) x (target dtype) x (value kind and value) and compares
jitkernel with NumPy: the same exception type, or the same array contents and dtype."""
from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import jitkernel as jk
from emulator_suite import DRAWN_BACKENDS

MASK = np.array([True, False, True, False])
IDX = np.array([0, 2])


def item(a, v):
    a[0] = v


def item_2(a, v):
    a[-1] = v


def window(a, v):
    a[1:3] = v


def ellipsis(a, v):
    a[...] = v


def mask(a, v):
    a[MASK] = v


def traced_mask(a, v):
    a[a == 0] = v


def fancy(a, v):
    a[IDX] = v


def traced_index(a, v):
    a[(a != a).sum()] = v  # a traced integer index: a basic store to NumPy


def view_row(a, v):
    a.reshape(2, 2)[1] = v  # through a view


def put_traced_indices(a, v):
    np.put(a, np.argsort(a)[:2], v)


def put_along_axis(a, v):
    np.put_along_axis(a, np.array([0, 2]), v, axis=0)


def fill(a, v):
    a.fill(v)


def put(a, v):
    np.put(a, [0, 3], v)


def copyto(a, v):
    np.copyto(a, v, casting="unsafe")


def copyto_same_kind(a, v):
    np.copyto(a, v)


def place(a, v):
    np.place(a, MASK, v)


def putmask(a, v):
    np.putmask(a, MASK, v)


def computed(a, v):
    a[1] = v * 2  # a Python scalar computed in the function is a Python scalar too


def augmented(a, v):
    a += v


def window_augmented(a, v):
    a[0:2] += v


STORES = [item, item_2, window, ellipsis, mask, traced_mask, fancy, traced_index, view_row, fill, put,
          put_traced_indices, put_along_axis, copyto, copyto_same_kind,
          place, putmask, computed, augmented, window_augmented]
TARGETS = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
           np.float16, np.float32, np.float64, np.complex64, np.complex128]
JITTED = {(fn.__name__, backend): jk.jit(fn, backend=backend) for fn in STORES for backend in DRAWN_BACKENDS}


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_functions():
    """Free the compiled code with the module, not at interpreter exit (LLVM is gone by then)."""
    yield
    JITTED.clear()

_EDGES = [300.7, -1.5, 1.5, -0.5, 255.9, 256.0, -128.9, -129.0, 1e20, -1e20, 2.0 ** 63, -2.0 ** 63, 1e19,
          2.0 ** 64, 65504.0, 70000.0, 0.0, -0.0]
_floats = st.one_of(st.sampled_from(_EDGES), st.floats(allow_nan=True, allow_infinity=True),
                    st.floats(-1e4, 1e4))
_ints = st.one_of(st.sampled_from([300, -1, 255, 256, -129, 127, 128, 65536, 2 ** 31, -2 ** 31 - 1, 2 ** 32,
                                   2 ** 63 - 1, -2 ** 63]),
                  st.integers(-2 ** 63, 2 ** 63 - 1))  # (larger Python ints are refused at the call)
_complex = st.builds(complex, _floats, _floats)
_NUMPY_SCALARS = [np.float64, np.float32, np.float16, np.int64, np.int32, np.int8, np.uint8, np.uint64,
                  np.bool_, np.complex128]


def _numpy_scalar(t: type, x: float) -> np.generic:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if np.dtype(t).kind in "iu":
            info = np.iinfo(t)
            x = 0.0 if not np.isfinite(x) else float(np.clip(np.trunc(x), info.min, min(info.max, 2.0 ** 62)))
            return t(int(x))
        return t(x)


_values = st.one_of(_floats, _ints, _complex, st.booleans(),
                    st.builds(_numpy_scalar, st.sampled_from(_NUMPY_SCALARS), _floats))


def _run(fn, dtype, value):
    """(exception type or None, the caller's array afterwards) of fn(a, value) on a fresh a."""
    a = np.arange(4).astype(dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            fn(a, value)
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            return type(e), a
    return None, a


def _undefined_in_numpy(fn, dtype, value) -> bool:
    """Whether NumPy's own C cast is undefined here ("invalid value encountered in cast": a NaN
    or out-of-range NumPy float into an integer array; NumPy's scalar and array loops disagree)."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(invalid="warn"):
        warnings.simplefilter("always")
        a = np.arange(4).astype(dtype)
        try:
            fn(a, value)
        except Exception:  # noqa: BLE001
            pass
    return any("invalid value encountered in cast" in str(w.message) for w in caught)


def _assert_like_numpy(name: str, backend: str, dtype, value) -> None:
    fn = next(f for f in STORES if f.__name__ == name)
    want_error, want = _run(fn, dtype, value)
    got_error, got = _run(JITTED[(name, backend)], dtype, value)
    what = f"{name}(np.{np.dtype(dtype)} array, {value!r}) on {backend}"
    if want_error is not None:
        assert got_error is not None and issubclass(got_error, want_error), \
            f"{what}: NumPy raises {want_error.__name__}, jitkernel {got_error}"
    else:
        assert got_error is None, f"{what}: NumPy stores {want}, jitkernel raises {got_error.__name__}"
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want, err_msg=what)  # (the caller's array, after an error too)


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from([fn.__name__ for fn in STORES]), dtype=st.sampled_from(TARGETS), value=_values,
       backend=st.sampled_from(DRAWN_BACKENDS))
def test_a_scalar_argument_is_stored_as_numpy_stores_it(name, dtype, value, backend):
    # (`v * 2` of a Python int beyond int64 is Python int arithmetic, traced in int64: not a store)
    assume(not (name == "computed" and type(value) is int and not -2 ** 62 <= value < 2 ** 62))
    assume(not _undefined_in_numpy(next(f for f in STORES if f.__name__ == name), dtype, value))
    _assert_like_numpy(name, backend, dtype, value)


@pytest.mark.parametrize("backend", DRAWN_BACKENDS)
@pytest.mark.parametrize("name", [fn.__name__ for fn in STORES])
def test_a_float_outside_uint32_is_stored_through_int64(name, backend):
    """NumPy's C cast of one float into uint32 goes through int64 and keeps the low bits
    (-3e9 -> 1294967296, -2**63 -> 0), where `convert` follows NumPy's vector loops (2**31):
    a silent difference the generator above found on every store path."""
    for value in (np.float64(-3e9), np.float64(-2.0 ** 63), np.float32(-2.5e9), np.float64(5e9), np.float64(-7.5)):
        if not _undefined_in_numpy(next(f for f in STORES if f.__name__ == name), np.uint32, value):
            _assert_like_numpy(name, backend, np.uint32, value)


@pytest.mark.parametrize("backend", DRAWN_BACKENDS)
@pytest.mark.parametrize("dtype, value, error, message", [
    (np.uint8, 300.7, OverflowError, "Python integer 300 out of bounds for uint8"),
    (np.uint8, -1.5, OverflowError, "Python integer -1 out of bounds for uint8"),
    (np.int8, float("nan"), ValueError, "cannot convert float NaN to integer"),
    (np.int64, float("-inf"), OverflowError, "cannot convert float infinity to integer"),
    (np.int64, 1e20, OverflowError, "Python int too large to convert to C long"),
    (np.float32, 1 + 2j, TypeError, "float() argument must be a string or a real number, not 'complex'"),
    (np.int16, 1 + 0j, TypeError, "int() argument must be a string, a bytes-like object or a real number, not 'complex'"),
    (np.int8, np.float64(300.7), OverflowError, "Python integer 300 out of bounds for int8"),
])
def test_numpys_exception_and_message_on_every_call(backend, dtype, value, error, message):
    """The check runs when the call runs: a warm call with a good value stores it, the next
    bad one raises NumPy's exception and message, and the caller's array is left untouched."""
    f = jk.jit(item, backend=backend)
    a = np.zeros(3, dtype)
    f(a, 1.0 if isinstance(value, complex) else type(value)(1))
    assert a[0] == 1
    with pytest.raises(error) as info:
        f(a, value)
    assert str(info.value) == message
    np.testing.assert_array_equal(a, np.array([1, 0, 0], dtype))


@pytest.mark.parametrize("backend", DRAWN_BACKENDS)
def test_stored_values_are_numpys(backend):
    """Values NumPy accepts are stored as NumPy stores them (truncated toward zero, by value)."""
    def f(a, b, v, s):
        a[0] = v       # a Python float into int64: int(v)
        b[0] = s       # a NumPy scalar into uint8 by basic indexing: NumPy's C cast
        b[1:] = v      # a Python float into uint8: int(v) must fit
        return a, b

    a, b = np.zeros(2, np.int64), np.zeros(3, np.uint8)
    jk.jit(f, backend=backend)(a, b, 200.9, np.float64(300.7))
    want_a, want_b = np.zeros(2, np.int64), np.zeros(3, np.uint8)
    f(want_a, want_b, 200.9, np.float64(300.7))
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(b, want_b)
    assert a[0] == 200 and list(b) == [44, 200, 200]


def test_a_numpy_scalar_argument_is_immutable_and_not_a_zero_d_array():
    """`s += 1` on a NumPy scalar argument rebinds it, as in NumPy (a 0-d array argument would
    be written back); the two are separate signatures."""
    def f(s):
        s += 1
        return s

    g = jk.jit(f)
    assert g(np.float64(2.0)) == 3.0
    z = np.array(2.0)
    g(z)
    assert z == 3.0


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")
@pytest.mark.parametrize("name", ["item", "window", "fill", "fancy", "computed", "traced_mask"])
def test_cuda_emulator_stores_scalars_as_numpy(name):
    JITTED[(name, "cuda-emulator")] = JITTED.get((name, "cuda-emulator")) or jk.jit(
        next(f for f in STORES if f.__name__ == name), backend="cuda-emulator")
    for dtype, value in [(np.uint8, 300.7), (np.int8, float("nan")), (np.int64, 1e20), (np.uint8, 200.5),
                         (np.float32, 1 + 2j), (np.int8, np.float64(300.7)), (np.int8, -3.9)]:
        _assert_like_numpy(name, "cuda-emulator", dtype, value)


@pytest.mark.parametrize("backend", DRAWN_BACKENDS)
def test_the_check_runs_where_the_store_runs(backend):
    """In a loop that runs zero times NumPy stores nothing and raises nothing; in one that runs,
    the first store raises (a check made before the call would raise for both)."""
    def fill_prefix(a, v, n):
        for i in range(n):
            a[i] = v
        return a

    f = jk.jit(fill_prefix, backend=backend)
    a = np.zeros(3, np.uint8)
    f(a, 300.7, 0)
    np.testing.assert_array_equal(a, [0, 0, 0])
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for uint8"):
        f(a, 300.7, 2)
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        f(a, float("nan"), 1)
    f(a, 100.5, 2)
    np.testing.assert_array_equal(a, [100, 100, 0])


@pytest.mark.parametrize("backend", DRAWN_BACKENDS)
def test_a_store_never_read_still_checks(backend):
    """NumPy raises at the store even when the array written is never read afterwards."""
    def f(x, v):
        scratch = np.zeros(3, np.int8)
        scratch[0] = v
        return x + 1

    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for int8"):
        jk.jit(f, backend=backend)(np.zeros(2), 300.7)
