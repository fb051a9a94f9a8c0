"""Issue 7, trace semantics: in-place operators (1), random numbers while tracing (1b), weak
types of NumPy results (3), ndarray subclasses (5), power/byte order/clip (6), exception types
(16) and messages (23). NumPy (the installed NumPy 2) is the reference everywhere."""
from __future__ import annotations

import itertools
import random
import threading
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitkernel as jk
from helpers import assert_matches_numpy, load
from jitkernel.ir.primitives import BINARY_UFUNCS, UNARY_UFUNCS

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
OPERATORS = ["+=", "-=", "*=", "/=", "//=", "%=", "**=", "@=", "&=", "|=", "^=", "<<=", ">>="]



def outcome(fn, *args):
    """('ok', result, args after the call) or ('raise', exception)."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", fn(*args), args
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return "raise", e, args


# ------------------------------------------------------------------------------- item 1

@pytest.mark.parametrize("op", OPERATORS)
def test_augmented_assignment_on_an_argument_updates_the_callers_array(tmp_path, op, backend):
    """Issue 8 replaced issue 7's InPlaceUpdateError: the caller's array is updated as NumPy
    updates it (or NumPy's own casting error is raised, the argument unchanged)."""
    f = load(tmp_path, f"def f(x1, y):\n    x1 {op} y\n    return x1\n")
    expected = outcome(f, np.full((2, 2), 3, np.int64), np.ones((2, 2), np.int64))
    got = outcome(jk.jit(f, backend=backend), np.full((2, 2), 3, np.int64), np.ones((2, 2), np.int64))
    assert got[0] == expected[0], (got, expected)
    if got[0] == "raise":
        assert type(got[1]) is type(expected[1])
        return
    assert_matches_numpy(got[1], expected[1])
    assert all(np.array_equal(x, y) for x, y in zip(got[2], expected[2]))


def test_issue_reproducer_updates_the_argument(tmp_path):
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
    expected = outcome(f, np.arange(4.0))
    got = outcome(jk.jit(f, backend=backend), np.arange(4.0))
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
    """NumPy's result and NumPy's final argument contents (issue 8: arguments are written back),
    or InPlaceUpdateError for a NumPy array that outlives the call; never a silent difference."""
    keep = "keep" in _TARGET[kind]
    src = (f"def f(a, b):\n    {_TARGET[kind]}\n    t {op} {_OTHER[other]}\n"
           f"    return (t, keep)\n" if keep else
           f"def f(a, b):\n    {_TARGET[kind]}\n    t {op} {_OTHER[other]}\n    return (t, a)\n")
    f = load(tmp_path_factory.mktemp("gen"), src)
    rng = np.random.default_rng(0)
    a = (rng.integers(1, 4, (2, 3)) if dtype != "bool" else rng.integers(0, 2, (2, 3))).astype(dtype)
    b = (rng.integers(1, 3, (2, 3))).astype(dtype)
    expected = outcome(f, a, b)
    got = outcome(jk.jit(f, backend="interpret"), a, b)
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


# ------------------------------------------------------------------------------- item 1b

rng_global = np.random.default_rng(0)
legacy_global = np.random.RandomState(0)
from numpy.random import rand as imported_rand  # noqa: E402


@pytest.mark.parametrize("fn", [
    lambda x: x + np.random.rand(3), lambda x: x + np.random.normal(size=3),
    lambda x: x + np.random.uniform(size=3), lambda x: x + np.random.randint(0, 5, 3),
    lambda x: x + np.random.choice(3, 3), lambda x: x + np.random.permutation(3),
    lambda x: (np.random.shuffle(np.arange(3)), x)[1], lambda x: (np.random.seed(0), x)[1],
    lambda x: x + np.random.default_rng().normal(size=3), lambda x: x + np.random.default_rng(1).normal(size=3),
    lambda x: x + rng_global.normal(size=3), lambda x: x + rng_global.integers(0, 3, 3),
    lambda x: x + legacy_global.rand(3), lambda x: x + imported_rand(3),
    lambda x: x + random.random(), lambda x: x + random.gauss(0, 1),
], ids=["rand", "normal", "uniform", "randint", "choice", "permutation", "shuffle", "seed", "default_rng",
        "seeded_default_rng", "generator_global", "generator_integers", "randomstate_global",
        "from_import", "stdlib_random", "stdlib_gauss"])
def test_random_while_tracing_raises(fn):
    with pytest.raises(jk.TracedRandomError, match="frozen"):
        jk.jit(fn)(np.ones(3))


def test_random_modules_restored_and_other_threads_unaffected():
    original = np.random.rand
    stop = threading.Event()
    errors: list = []

    def draw() -> None:
        while not stop.is_set():
            try:
                assert np.random.rand(2).shape == (2,)
                random.random()
            except Exception as e:  # noqa: BLE001
                errors.append(e)

    t = threading.Thread(target=draw)
    t.start()
    try:
        for i in range(20):
            f = jk.jit(lambda x: np.sin(x) + 1)
            f(np.ones(i + 1))
            with pytest.raises(jk.TracedRandomError):
                jk.jit(lambda x: x + np.random.rand())(np.ones(2))
    finally:
        stop.set()
        t.join()
    assert not errors
    assert np.random.rand == original and np.random.rand.__self__ is np.random.mtrand._rand
    assert random.random.__self__ is random._inst


# ------------------------------------------------------------------------------- item 3

_FUNCTIONS = {
    "where": lambda x, s1, s2: np.where(x > 0, s1, s2) * x,
    "where_plus": lambda x, s1, s2: np.where(x > 0, s1, s2) + x,
    "clip": lambda x, s1, s2: np.clip(s1, s2, s2 + 5) + x,
    "maximum": lambda x, s1, s2: np.maximum(s1, s2) + x,
    "add": lambda x, s1, s2: np.add(s1, s2) + x,
    "sin": lambda x, s1, s2: np.sin(s1) + x,
    "asarray": lambda x, s1, s2: np.asarray(s1) + x,
    "reshape": lambda x, s1, s2: np.reshape(s1, (1,)) + x,
    "broadcast_to": lambda x, s1, s2: np.broadcast_to(s1, (2,)) + x,
    "stack": lambda x, s1, s2: np.stack([s1, s2]) + x,
    "concatenate": lambda x, s1, s2: np.concatenate([np.atleast_1d(s1), np.atleast_1d(s2)]) + x,
    "sum": lambda x, s1, s2: np.sum(s1) + x,
    "full_like": lambda x, s1, s2: np.full_like(x, s1) + s2,
    "operator": lambda x, s1, s2: (s1 + s2) + x,    # Python operators on Python scalars stay weak
}


@SETTINGS
@given(name=st.sampled_from(sorted(_FUNCTIONS)), kinds=st.sampled_from([(int, int), (float, float), (int, float),
                                                                        (bool, bool), (bool, int)]),
       dtype=st.sampled_from(["int8", "uint8", "int16", "float16", "float32", "float64", "bool"]),
       as_args=st.booleans())
def test_numpy_results_are_strong(name, kinds, dtype, as_args):
    fn = _FUNCTIONS[name]
    if name == "asarray" and as_args:
        as_args = False  # NumPy's own np.asarray() cannot take a traced value (no dispatch protocol)
    s1, s2 = kinds[0](1), kinds[1](2)
    x = np.array([2, 0], dtype)
    expected = outcome(fn, x, s1, s2)
    if as_args:
        got = outcome(jk.jit(fn, backend="interpret"), x, s1, s2)
    else:
        got = outcome(jk.jit(lambda x: fn(x, s1, s2), backend="interpret"), x)
    if expected[0] == "raise":
        assert got[0] == "raise" and isinstance(got[1], type(expected[1])), (expected, got)
        return
    assert got[0] == "ok", got[1]
    assert_matches_numpy(got[1], expected[1])


def test_issue_reproducers_where(backend):
    x = np.array([2, -1], np.int8)
    assert_matches_numpy(jk.jit(lambda x: np.where(x > 0, 100, 2) * x, backend=backend)(x),
                         np.where(x > 0, 100, 2) * x)
    y = np.array([1, -1], np.float32)
    assert jk.jit(lambda x: np.where(x > 0, 1, 2) + x, backend=backend)(y).dtype == np.float64


def test_python_bool_arithmetic_is_python_arithmetic():
    assert jk.jit(lambda a, b: a + b)(True, True) == 2
    assert jk.jit(lambda a, x: (a - a) + x)(True, np.int8(3)).dtype == np.int8


# ------------------------------------------------------------------------------- item 5

@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_semantic_subclasses_are_rejected_naming_the_type():
    f = jk.jit(lambda x: x * x)
    f(np.ones((2, 2)))  # registers the fast path for plain arrays of this shape
    with pytest.raises(TypeError, match="numpy.matrix"):
        f(np.matrix(np.ones((2, 2))))
    with pytest.raises(TypeError, match="MaskedArray"):
        jk.jit(lambda x: x.sum())(np.ma.masked_array([1.0, 2.0], mask=[0, 1]))

    class Custom(np.ndarray):
        def __array_ufunc__(self, *a, **k):
            return NotImplemented
    with pytest.raises(TypeError, match="Custom"):
        jk.jit(lambda x: x + 1)(np.ones(2).view(Custom))
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(TypeError, match="numpy.matrix"):
        jk.jit(lambda x: x * m)(np.ones((2, 2)))   # a constant of the program


def test_plain_data_subclasses_are_arrays(tmp_path):
    mm = np.memmap(tmp_path / "m.dat", dtype=np.float32, mode="w+", shape=(4,))
    mm[:] = [1, 2, 3, 4]
    assert_matches_numpy(jk.jit(lambda x: (x * 2).sum())(mm), np.asarray(mm * 2).sum())

    class Tagged(np.ndarray):
        def __array_finalize__(self, obj):
            self.tag = getattr(obj, "tag", None)
    assert_matches_numpy(jk.jit(lambda x: x + 1)(np.ones(2).view(Tagged)), np.ones(2) + 1)


# ------------------------------------------------------------------------------- item 6

@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int64", "float16", "float32"])
@pytest.mark.parametrize("exponent", [0, 1, 2, 3, 0.5, 2.0, True])
def test_power_operator_dtype_matches_numpy(dtype, exponent, backend):
    x = np.array([1, 0, 1], dtype)
    expected = outcome(lambda x: x ** exponent, x)
    got = outcome(jk.jit(lambda x: x ** exponent, backend=backend), x)
    if expected[0] == "raise":
        assert got[0] == "raise" and isinstance(got[1], type(expected[1]))
    else:
        assert_matches_numpy(got[1], expected[1])
    s = outcome(lambda x: x.sum() ** exponent, x)
    assert_matches_numpy(jk.jit(lambda x: x.sum() ** exponent, backend=backend)(x), s[1])


_BYTEORDER = {
    "identity": lambda x: x, "T": lambda x: x.T, "slice": lambda x: x[1:], "reshape": lambda x: x.reshape(3, 2),
    "copy": lambda x: x.copy(), "np.copy": lambda x: np.copy(x), "broadcast_to": lambda x: np.broadcast_to(x, (2, 6)),
    "flip": lambda x: np.flip(x), "ravel": lambda x: x.ravel(), "expand_dims": lambda x: np.expand_dims(x, 0),
    "round": lambda x: np.round(x), "add0": lambda x: x + 0, "positive": lambda x: +x,
    "astype": lambda x: x.astype(np.int16), "clip": lambda x: np.clip(x), "where": lambda x: np.where(x > 0, x, x),
    "concatenate": lambda x: np.concatenate([x, x]), "max": lambda x: x.max(), "index": lambda x: x[0],
    "tuple": lambda x: (x, x * 2, x[::2]),
}


@pytest.mark.parametrize("name", sorted(_BYTEORDER))
def test_byte_order_of_results_matches_numpy(name, backend):
    fn = _BYTEORDER[name]
    x = np.arange(6, dtype=">i2")
    f = jk.jit(fn, backend=backend)
    for arg in (x, x.astype("<i2"), x):   # the native call must not give the swapped one its entry
        got, expected = f(arg), fn(arg)
        for g, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
            assert g.dtype.str == e.dtype.str, (name, g.dtype.str, e.dtype.str)
            assert_matches_numpy(np.asarray(g).astype(g.dtype.newbyteorder("=")) if g.ndim else g,
                                 np.asarray(e).astype(e.dtype.newbyteorder("=")) if e.ndim else e)


def test_clip_without_bounds_returns_a_copy(backend):
    x = np.arange(4.0)
    for fn in (lambda x: np.clip(x), lambda x: np.clip(x, None, None), lambda x: x.clip()):
        assert_matches_numpy(jk.jit(fn, backend=backend)(x), fn(x))


# ------------------------------------------------------------------------------- item 16

def test_matmul_of_scalars_is_a_type_error():
    with pytest.raises(TypeError, match="unsupported operand type"):
        jk.jit(lambda a: a.sum() @ a.sum())(np.ones(3))
    with pytest.raises(ValueError, match="does not have enough dimensions"):
        jk.jit(lambda a: np.matmul(a.sum(), a.sum()))(np.ones(3))
    with pytest.raises(ValueError):
        np.matmul(np.ones(3).sum(), np.ones(3).sum())


@pytest.mark.parametrize("value", [2**63, 2**64, -2**63 - 1])
@pytest.mark.parametrize("op", ["<", "==", ">="])
def test_bool_array_against_huge_int_overflows(value, op):
    fn = eval(f"lambda x: x {op} {value}")
    with pytest.raises(OverflowError):
        fn(np.array([True]))
    with pytest.raises(OverflowError):
        jk.jit(fn)(np.array([True]))


_DTYPES = ["bool", "int8", "uint16", "int64", "uint64", "float16", "float32", "float64"]
_OPERANDS = [(d, None) for d in _DTYPES] + [(None, 1), (None, 1.5), (None, True)]


def _rejected_cases():
    cases = []
    for name in UNARY_UFUNCS + BINARY_UFUNCS:
        uf = getattr(np, name)
        for ops in itertools.product(_OPERANDS, repeat=uf.nin):
            if all(d is None for d, _ in ops):
                continue
            args = [np.ones(2, d) if d is not None else v for d, v in ops]
            kind, err, _ = outcome(uf, *args)
            if kind == "raise":
                cases.append(pytest.param(name, ops, type(err), id=f"{name}-{'-'.join(str(d or v) for d, v in ops)}"))
    return cases


@pytest.mark.parametrize("name,ops,expected", _rejected_cases())
def test_rejected_ufunc_calls_raise_numpys_exception_type(name, ops, expected):
    args = [np.ones(2, d) if d is not None else v for d, v in ops]
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    uf = getattr(np, name)

    def fn(*arrs):
        it = iter(arrs)
        return uf(*[next(it) if isinstance(a, np.ndarray) else a for a in args])
    kind, err, _ = outcome(jk.jit(fn, backend="interpret"), *arrays)
    assert kind == "raise" and isinstance(err, expected), (name, ops, expected, err)


# ------------------------------------------------------------------------------- item 23

@pytest.mark.usefixtures("no_static_int_fallback")
def test_traced_size_suggests_static_argnames(tmp_path):
    f = load(tmp_path, "def f(x, n):\n    return np.zeros(n) + x\n")
    with pytest.raises(jk.TracerIntegerConversionError) as info:
        jk.jit(f)(np.ones(3), 3)
    assert 'static_argnames=("n",)' in str(info.value) and "--static n" in str(info.value)


def test_at_says_what_to_use():
    with pytest.raises(AttributeError, match="np.where"):
        jk.jit(lambda x: x.at[0].set(1.0))(np.ones(3))
    assert jk.jit(lambda x: np.float64(hasattr(x, "at")))(np.ones(3)) == 0


def test_list_argument_says_pass_an_array():
    with pytest.raises(jk.TracerArrayConversionError, match=r"pass an array \(np.asarray"):
        jk.jit(lambda x: np.sin(x))([1.0, 2.0])


@pytest.mark.parametrize("dtype", ["float64", "int64", "bool", "float32"])
def test_storing_into_a_numpy_array_names_the_cause(tmp_path, dtype):
    # Issue 8: an array made inside the function is traced and takes the value...
    f = load(tmp_path, f"def f(x):\n    out = np.zeros(3, '{dtype}')\n    out[0] = x.sum()\n    return out\n")
    assert_matches_numpy(jk.jit(f)(np.ones(3)), f(np.ones(3)))
    # ... while a NumPy array captured from outside cannot: the error names the cause and line.
    g = load(tmp_path, f"OUT = np.zeros(3, '{dtype}')\ndef f(x):\n    OUT[0] = x.sum()\n    return OUT\n")
    with pytest.raises(jk.TracerArrayConversionError, match="stored into a NumPy array") as info:
        jk.jit(g)(np.ones(3))
    assert "probably not supported" not in str(info.value) and "OUT[0] = x.sum()" in str(info.value)


def test_warnings_while_tracing_point_at_the_user_line(tmp_path):
    f = load(tmp_path, "def f(x):\n    return x + 1e300\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jk.jit(f)(np.ones(2, np.float32))
    runtime = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert runtime and all(w.filename == f.__code__.co_filename and w.lineno == 3 for w in runtime), \
        [(w.filename, w.lineno, str(w.message)) for w in caught]


def test_trace_stack_is_per_thread():
    """Two threads tracing at once each record into their own program (jnp.stack of Python
    scalars has no Tracer argument: it finds the trace through current_context())."""
    import jitkernel.numpy as jnp
    barrier = threading.Barrier(2)
    results: dict = {}

    def work(i: int) -> None:
        def fn(x):
            barrier.wait(timeout=10)
            c = jnp.stack([float(i), float(i)])
            barrier.wait(timeout=10)
            return c + x
        try:
            results[i] = jk.jit(fn, backend="interpret")(np.ones(2))
        except Exception as e:  # noqa: BLE001
            results[i] = e

    threads = [threading.Thread(target=work, args=(i,)) for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert_matches_numpy(results[1], np.ones(2) + 1)
    assert_matches_numpy(results[2], np.ones(2) + 2)
