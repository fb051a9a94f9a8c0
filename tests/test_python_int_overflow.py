"""Arithmetic between Python ints inside jit: a Python int argument is traced as an int64, but
Python's ints are unbounded, so an operation whose operands are both Python ints raises a clear
OverflowError where its exact result leaves int64 (instead of wrapping silently), and Python's
ZeroDivisionError / ValueError where Python raises them (trace/python_int.py). Arithmetic with an
array or a NumPy scalar is NumPy's and keeps NumPy's behaviour."""
from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from emulator_suite import DRAWN_BACKENDS, emulator_backends
from helpers import HOST_BACKENDS

BACKENDS = HOST_BACKENDS + emulator_backends()
SETTINGS = settings(max_examples=400, deadline=None, derandomize=True, database=None, print_blob=False)
MIN, MAX = -2**63, 2**63 - 1


def _call(backend: str, fn, *args):
    return jk.jit(fn, backend=backend)(*args)


# ----------------------------------------------------------------------------- hand-written cases
def double(v):
    return v * 2


def store_double(a, v):
    a[0] = v * 2


def augmented_double(v):
    v *= 2
    return v


@pytest.mark.parametrize("backend", BACKENDS)
def test_product_past_int64_raises_when_returned(backend):
    assert _call(backend, double, 2**61) == 2**62
    with pytest.raises(OverflowError, match=r"Python int arithmetic \(`\*`\) went past int64.*v \* 2"):
        _call(backend, double, 2**62)


@pytest.mark.parametrize("backend", BACKENDS)
def test_product_past_int64_raises_when_stored(backend):
    a = np.zeros(1, np.int64)
    with pytest.raises(OverflowError):
        store_double(a.copy(), 2**62)  # NumPy refuses the Python int 2**63 too
    with pytest.raises(OverflowError, match="went past int64"):
        _call(backend, store_double, a, 2**62)
    _call(backend, store_double, a, -2**62)
    assert a[0] == MIN


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args", [
    (lambda v: v + 1, (MAX,)), (lambda v: v - 1, (MIN,)), (lambda v: 1 - v, (MIN + 1,)),
    (lambda v: -v, (MIN,)), (lambda v: abs(v), (MIN,)), (lambda v: v // -1, (MIN,)),
    (lambda v, w: v // w, (MIN, -1)), (lambda v: v ** 3, (2**21,)), (lambda v, k: v ** k, (3, 40)),
    (lambda k: 2 ** k, (63,)), (lambda v: v << 2, (2**61,)), (lambda v, k: v << k, (1, 63)),
    (lambda k: 1 << k, (64,)), (lambda v, w: v * w, (2**32, 2**31)), (lambda v, w: v + w, (MAX, 1)),
    (lambda v, w: v - w, (MIN, 1)), (augmented_double, (2**62,)), (lambda v, w: divmod(v, w), (MIN, -1)),
    (lambda v: pow(v, 3), (2**21,)),
])
def test_python_int_operations_past_int64_raise(backend, fn, args):
    with pytest.raises(OverflowError, match="went past int64"):
        _call(backend, fn, *args)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args", [
    (lambda v: v + 1, (MAX - 1,)), (lambda v: -v, (MIN + 1,)), (lambda v: abs(v), (-5,)),
    (lambda v, w: v * w, (-2**32, 2**31)), (lambda v, w: v * w, (2**32, 2**31 - 1)),
    (lambda v, k: v ** k, (3, 39)), (lambda v, k: v ** k, (-2, 63)), (lambda v, k: v ** k, (-1, 2**62 + 1)),
    (lambda v, k: v << k, (-1, 63)), (lambda v, k: v >> k, (-5, 200)), (lambda v, w: v % w, (MIN, -1)),
    (lambda v, w: v // w, (MIN, 1)), (lambda v: v * -1, (MAX,)),
])
def test_python_int_operations_inside_int64_are_exact(backend, fn, args):
    assert int(_call(backend, fn, *args)) == fn(*args)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args, exc", [
    (lambda v, w: v // w, (7, 0), ZeroDivisionError), (lambda v, w: v % w, (7, 0), ZeroDivisionError),
    (lambda v: v // 0, (7,), ZeroDivisionError), (lambda v, k: v << k, (1, -1), ValueError),
    (lambda v, k: v >> k, (1, -1), ValueError), (lambda v, w: divmod(v, w), (5, 0), ZeroDivisionError),
])
def test_python_errors_of_python_int_operations(backend, fn, args, exc):
    with pytest.raises(exc):
        fn(*args)
    with pytest.raises(exc):
        _call(backend, fn, *args)


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_arithmetic_keeps_numpy_behaviour(backend):
    # An int64 array or NumPy scalar operand makes it NumPy's arithmetic: it wraps, no check.
    a = np.array([MAX], np.int64)
    np.testing.assert_array_equal(_call(backend, lambda x, v: x + v, a, 1), a + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = np.int64(2**62) * 2
        got = _call(backend, lambda s, v: s * v, np.int64(2**62), 2)
    assert got == expected
    with pytest.raises(OverflowError):  # NumPy: a Python int outside int8 meets an int8 array
        np.int8([1]) + 300
    with pytest.raises(OverflowError):
        _call(backend, lambda x, v: x + v, np.int8([1]), 300)


def test_loop_index_arithmetic_is_checked_after_the_loop():
    # A loop body's checks are an error code the loop carries (trace/pending_checks.py), raised by
    # one raise_if after it: none in the body, which stays a native loop on the CPU backend.
    def loop(s, n):
        for i in range(n):
            s[0] = s[0] + i * i
        return s
    program = jk.make_ir(loop)(np.zeros(1, np.int64), 10)
    (body,) = [str(e.params["body"]) for e in program.eqns if e.prim == "fori_loop"]
    assert "raise_if" not in body
    assert _call("cpu", loop, np.zeros(1, np.int64), 1000)[0] == sum(i * i for i in range(1000))


def test_argument_past_int64_is_refused_clearly():
    with pytest.raises(OverflowError, match="np.uint64"):
        jk.jit(double)(2**63)


# ----------------------------------------------------------------------------- generator
EDGES = [0, 1, 2, 3, -1, -2, 2**31, -2**31, 2**32, 2**62, -2**62, MAX, MAX - 1, MIN, MIN + 1,
         3037000499, 3037000500, -3037000500, 2**21, -2**21 - 1]
BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
          "%": operator.mod, "**": operator.pow, "<<": operator.lshift, ">>": operator.rshift}
UNARY = {"neg": operator.neg, "abs": abs}
USAGES = ("returned", "stored", "compared", "with_array")

values = st.one_of(st.sampled_from(EDGES), st.integers(MIN, MAX),
                   st.sampled_from(EDGES).flatmap(lambda e: st.integers(max(MIN, e - 3), min(MAX, e + 3))))
small_counts = st.integers(-2, 130)  # exponents and shift counts (Python needs small ones)


def _use(usage: str, compute):
    """A function of (a, *operands) that uses compute(*operands) as `usage` says."""
    if usage == "returned":
        return lambda a, *xs: compute(*xs)
    if usage == "stored":
        def store(a, *xs):
            a[0] = compute(*xs)
        return store
    if usage == "compared":
        return lambda a, *xs: compute(*xs) > 7
    return lambda a, *xs: a + compute(*xs)


def _outcome(fn, a, args):
    """(value or None, exception type or None), NumPy's warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            out = fn(a, *args)
        except (OverflowError, ZeroDivisionError, ValueError) as e:
            return None, type(e)
    return (a.tolist() if out is None else np.asarray(out).tolist()), None


_JITTED: dict = {}


@pytest.fixture(scope="module", autouse=True)
def _release_jitted():
    yield
    _JITTED.clear()  # compiled code is released while the runtime is alive, not at exit


def _jitted(key, backend, fn):
    if (key, backend) not in _JITTED:
        _JITTED[key, backend] = jk.jit(fn, backend=backend)
    return _JITTED[key, backend]


@SETTINGS
@given(backend=st.sampled_from(DRAWN_BACKENDS), op=st.sampled_from(sorted(BINARY) + sorted(UNARY)),
       usage=st.sampled_from(USAGES), constant=st.booleans(), data=st.data())
def test_python_int_arithmetic_matches_python(backend, op, usage, constant, data):
    """Every operator between Python ints, values near the int64 edges, the result returned,
    stored into an int64 array, compared or used with an int64 array: the same value as plain
    Python + NumPy, or the same exception; where Python's exact result leaves int64 (NumPy would
    reject it, or it would be returned), our OverflowError counts as matching."""
    if op in UNARY:
        compute, args, key = UNARY[op], (data.draw(values),), (op, usage)
        exact = UNARY[op](*args)
    else:
        v = data.draw(values)
        w = data.draw(small_counts if op in ("**", "<<", ">>") else values)
        if op == "**" and w < 0:
            w = -w  # Python gives a float for a negative exponent (NumPy raises): not this class
        exact = _exact(BINARY[op], v, w)
        if constant:  # the second operand is a Python int constant of the program
            compute, args, key = (lambda x, w=w, f=BINARY[op]: f(x, w)), (v,), (op, usage, w)
        else:
            compute, args, key = BINARY[op], (v, w), (op, usage)
    fn = _use(usage, compute)
    expected = _outcome(fn, np.zeros(1, np.int64), args)
    got = _outcome(_jitted(key, backend, fn), np.zeros(1, np.int64), args)
    if isinstance(exact, int) and not MIN <= exact <= MAX:
        assert got[1] is OverflowError, (expected, got)
    else:
        assert got == expected


def _exact(f, v, w):
    try:
        return f(v, w)
    except (ZeroDivisionError, ValueError) as e:
        return type(e)
