"""Augmented assignment (`+=`, ...) on arguments, shared targets and owned accumulators updates
arrays as NumPy does, arguments included; NumPy (the installed NumPy 2) is the reference."""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import assert_matches_numpy, call_on_copies, load

TPU_SUITE = True  # the backend tests run on tpu-interpret too (tests/tpu_suite.py)


SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


OPERATORS = ["+=", "-=", "*=", "/=", "//=", "%=", "**=", "@=", "&=", "|=", "^=", "<<=", ">>="]


@pytest.mark.parametrize("op", OPERATORS)
def test_augmented_assignment_on_an_argument_updates_the_callers_array(tmp_path, op, backend):
    """No InPlaceUpdateError any more: the caller's array is updated as NumPy
    updates it (or NumPy's own casting error is raised, the argument unchanged)."""
    f = load(tmp_path, f"def f(x1, y):\n    x1 {op} y\n    return x1\n")
    expected = call_on_copies(f, np.full((2, 2), 3, np.int64), np.ones((2, 2), np.int64))
    got = call_on_copies(jk.jit(f, backend=backend), np.full((2, 2), 3, np.int64), np.ones((2, 2), np.int64))
    assert got[0] == expected[0], (got, expected)
    if got[0] == "raise":
        assert type(got[1]) is type(expected[1])
        return
    assert_matches_numpy(got[1], expected[1])
    assert all(np.array_equal(x, y) for x, y in zip(got[2], expected[2]))


def test_reported_example_updates_the_argument(tmp_path):
    k = load(tmp_path, "def k(x1, A, y):\n    x1 += A @ y\n", "k")
    x1, A, y = np.zeros(3), np.arange(9.0).reshape(3, 3), np.ones(3)
    assert jk.jit(k)(x1, A, y) is None
    np.testing.assert_array_equal(x1, A @ y)


@pytest.mark.parametrize("body", [
    "b = a\n    a += 1\n    return b",                       # alias of an argument
    "a = a * 1\n    b = a\n    a += 1\n    return b",       # alias of a local
    "v = a[1:]\n    v += 1\n    return a",                  # view of an argument
    "v = a.T\n    v *= 2\n    return v",
    "v = a.reshape(-1)\n    v -= 1\n    return v",
    "l = a * 1\n    v = l[::2]\n    v += 1\n    return l",   # a view of a live local
    "l = a * 1\n    v = l.reshape(2, 2)\n    l += 1\n    return v",
    "xs = [a * 1]\n    t = xs[0]\n    t += 1\n    return xs[0]",
    "c = np.zeros(4)\n    d = c\n    c += a\n    return d",   # an array made inside, two names
    "c = np.zeros((2, 4))\n    r = c[0]\n    r += a\n    return c",
])
def test_shared_targets_follow_numpy(tmp_path, body, backend):
    f = load(tmp_path, f"def f(a):\n    {body}\n")
    expected = call_on_copies(f, np.arange(4.0))
    got = call_on_copies(jk.jit(f, backend=backend), np.arange(4.0))
    assert got[0] == expected[0] == "ok", (got, expected)
    assert_matches_numpy(got[1], expected[1])
    np.testing.assert_array_equal(got[2][0], expected[2][0])


@pytest.mark.parametrize("body", [
    "t = 0.0\n    for i in range(a.shape[0]):\n        t += np.tanh(a[i])\n    return t",
    "t = np.zeros(3)\n    t += a[0]\n    return t",
    "t = np.zeros(3, np.float32)\n    t += a[0]\n    return t",      # the target keeps float32
    "t = a * 1\n    t *= 2.5\n    return t",
    "t = a[0] * 1\n    t **= 2\n    t -= a[1]\n    return t",
    "t = (a + 1).reshape(-1)\n    t /= 3\n    return t",             # a view of a dead temporary
    "s = a.sum()\n    s += a[0]\n    return s",                       # a NumPy scalar rebinds
    "t = a * 1\n    t @= np.eye(3)\n    return t",
])
def test_owned_accumulators_follow_numpy(tmp_path, body, backend):
    f = load(tmp_path, f"def f(a):\n    {body}\n")
    a = np.arange(6.0).reshape(2, 3) / 7
    assert_matches_numpy(jk.jit(f, backend=backend)(a), f(a.copy()))


def test_in_place_keeps_numpy_errors(tmp_path):
    f = load(tmp_path, "def f(a):\n    t = a * 1\n    t /= 2\n    return t\n")
    with pytest.raises(np._core._exceptions._UFuncOutputCastingError):
        jk.jit(f)(np.arange(3))
    g = load(tmp_path, "def f(a):\n    t = a * 1\n    t += np.ones((2, 3))\n    return t\n")
    with pytest.raises(ValueError, match=r"non-broadcastable output operand with shape \(3,\) doesn't match the "
                                         r"broadcast shape \(2,3\)"):
        jk.jit(g)(np.arange(3.0))


def test_numpy_arrays_outside_the_function_are_never_replaced(tmp_path):
    """`state.w += x`, `G += x` on a NumPy array that outlives the call: NumPy changes it; jit
    must raise rather than leave a traced value behind (or change nothing)."""
    f = load(tmp_path, "class S:\n    pass\nstate = S()\nstate.w = np.zeros(3)\nG = np.zeros(3)\n"
                       "def f(x):\n    state.w += x\n    return state.w\n"
                       "def g(x):\n    global G\n    G += x\n    return G\n", "f")
    with pytest.raises(jk.InPlaceUpdateError, match="state.w"):
        jk.jit(f)(np.ones(3))
    with pytest.raises(jk.InPlaceUpdateError, match="G"):
        jk.jit(f.__globals__["g"])(np.ones(3))
    assert type(f.__globals__["state"].w) is np.ndarray and type(f.__globals__["G"]) is np.ndarray


def test_python_scalar_argument_rebinds(tmp_path):
    f = load(tmp_path, "def f(x, s):\n    s += 1\n    s *= 2\n    return x * s\n")
    assert_matches_numpy(jk.jit(f)(np.ones(2, np.float32), 2.0), f(np.ones(2, np.float32), 2.0))


def test_setitem_writes_the_argument():
    x = np.ones(3)
    jk.jit(lambda x: x.__setitem__(0, 5))(x)
    np.testing.assert_array_equal(x, [5.0, 1.0, 1.0])


_KINDS = ["arg", "alias", "arg_view", "live_view", "dead_view", "local", "numpy_local", "numpy_alias", "reduction"]
_TARGET = {
    "arg": "t = a",
    "alias": "t = a * 1\n    keep = t",
    "arg_view": "t = a[::-1]",
    "live_view": "keep = a * 1\n    t = keep.reshape(keep.shape)[:]",
    "dead_view": "t = (a * 1)[:]",
    "local": "t = a * 1",
    "numpy_local": "t = np.ones(a.shape, a.dtype)",
    "numpy_alias": "t = np.ones(a.shape, a.dtype)\n    keep = t",
    "reduction": "t = a.sum()",
}
_OTHER = {"array": "b", "int": "3", "float": "1.5", "row": "b[-1:]", "bool": "True"}


@SETTINGS
@given(kind=st.sampled_from(_KINDS), op=st.sampled_from([o for o in OPERATORS if o != "@="]),
       other=st.sampled_from(sorted(_OTHER)), dtype=st.sampled_from(["int32", "float32", "float64", "bool"]))
def test_generated_in_place_programs_match_numpy_or_raise(tmp_path_factory, kind, op, other, dtype):
    """NumPy's result and NumPy's final argument contents (arguments are written back),
    or InPlaceUpdateError for a NumPy array that outlives the call; never a silent difference."""
    keep = "keep" in _TARGET[kind]
    src = (f"def f(a, b):\n    {_TARGET[kind]}\n    t {op} {_OTHER[other]}\n"
           f"    return (t, keep)\n" if keep else
           f"def f(a, b):\n    {_TARGET[kind]}\n    t {op} {_OTHER[other]}\n    return (t, a)\n")
    f = load(tmp_path_factory.mktemp("gen"), src)
    rng = np.random.default_rng(0)
    a = (rng.integers(1, 4, (2, 3)) if dtype != "bool" else rng.integers(0, 2, (2, 3))).astype(dtype)
    b = (rng.integers(1, 3, (2, 3))).astype(dtype)
    expected = call_on_copies(f, a, b)
    got = call_on_copies(jk.jit(f, backend="interpret"), a, b)
    if got[0] == "raise" and isinstance(got[1], jk.InPlaceUpdateError):
        assert kind not in ("local", "dead_view", "numpy_local", "reduction"), f"owned target raised:\n{src}\n{got[1]}"
        return
    if expected[0] == "raise":
        assert got[0] == "raise" and isinstance(got[1], type(expected[1])), (src, expected[1], got)
        return
    assert got[0] == "ok", (src, got[1])
    assert all(np.array_equal(x, y) for x, y in zip(expected[2], got[2])), \
        f"the arguments differ from NumPy's after the call:\n{src}"
    assert_matches_numpy(got[1], expected[1])
