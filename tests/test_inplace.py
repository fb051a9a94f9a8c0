"""In-place semantics, exactly NumPy's. `x[idx] = v`, augmented operators,
ufunc `out=`, np.copyto, fill, np.put, on arguments, views and arrays made inside the function;
arguments written back to the caller; read-only, aliased and captured arrays; a generator of
random in-place programs with views, run by NumPy and jitted."""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import assert_matches_numpy, load, run_on_copies

CUDA_EMULATOR_SUITE = True  # the backend fixture adds "cuda-emulator" (tests/emulator_suite.py)
TPU_SUITE = True  # and on tpu-interpret (tests/tpu_suite.py)


def same_as_numpy(fn, *args, backend):
    """The jitted call gives NumPy's result (or raises NumPy's exception type) and leaves every
    argument with NumPy's final contents (unchanged when it raised)."""
    expected = run_on_copies(fn, *args)
    got = run_on_copies(jk.jit(fn, backend=backend), *args)
    assert got[0] == expected[0], (got, expected)
    if got[0] == "raise":
        assert issubclass(got[1], expected[1]), (got, expected)
        for a, b in zip(got[2], args):  # a call that raises leaves its arguments unchanged
            if isinstance(a, np.ndarray):
                np.testing.assert_array_equal(a, b)
        return got
    assert_matches_numpy(got[1], expected[1])
    for a, b in zip(got[2], expected[2]):
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype
            if a.dtype.kind == "f":  # libm and NumPy's sin may differ in the last bit
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-300)
            else:
                np.testing.assert_array_equal(a, b)
    return got


A = np.arange(24.0).reshape(4, 6) / 7
V = np.arange(6.0)


# ----------------------------------------------------------------------------- setitem forms

def _set_basic(x):
    x[0] = 1.5
    x[1, 2] = -3
    x[2:, ::2] = x[:2, 1::2]
    x[..., -1] = 9
    x[:, None, 0] = 4
    return x.sum()


def _set_overlap(x):
    x[1:] = x[:-1]  # NumPy reads the right-hand side first
    return x


def _set_negative_step(x):
    x[::-2] = np.arange(3.0)
    x[4:0:-3] += 10
    return x


def _set_broadcast_value(x):
    x[1:3] = np.ones((1, 1, 6)) * 2  # leading size-1 dimensions are dropped, as NumPy does
    x[:, 0] = x[:, 1]
    return x


def _set_cast(x):
    y = np.zeros(x.shape, np.int32)
    y[:] = x * 10  # unsafe cast, as ndarray.__setitem__
    y[0, 0] = 2.9
    return y


def _bad_broadcast(x):
    x[:2] = np.ones(3)
    return x


def _int_overflow(x):
    y = np.zeros(3, np.int8)
    y[0] = 300
    return y


def _numpy_scalar_is_immutable(x):
    s = x.sum()
    s[()] = 1
    return s


def _into_broadcast_view(x):
    v = np.broadcast_to(x[0], (3, 6))
    v[0, 0] = 1
    return v


@pytest.mark.parametrize("fn", [_set_basic, _set_overlap, _set_negative_step, _set_broadcast_value, _set_cast,
                                _bad_broadcast, _int_overflow, _numpy_scalar_is_immutable, _into_broadcast_view])
def test_setitem_forms(fn, backend):
    same_as_numpy(fn, A, backend=backend)


def test_setitem_1d_overlap_both_ways(backend):
    def right(x):
        x[1:] = x[:-1]
        return x

    def left(x):
        x[:-1] = x[1:]
        return x
    same_as_numpy(right, V, backend=backend)
    same_as_numpy(left, V, backend=backend)


# ----------------------------------------------------------------------------- views alias

def _view_then_base(x):
    v = x[1:, ::2]
    v *= 2
    return x + 0


def _base_then_view(x):
    v = x[1:3]
    x[2] = -1  # v sees it
    return v * 1


def _transpose_view(x):
    t = x.T
    t[0] = 100
    return x.copy()


def _reshape_view(x):
    r = x.reshape(3, 8)
    r[1] += 1
    x[0, 0] = r[2, 7]
    return r * 1, x * 1


def _reshape_of_a_transpose_copies(x):
    r = x.T.reshape(-1)  # NumPy copies: writing r leaves x alone
    r[0] = 50
    return x * 1, r * 1


def _ravel_and_flatten(x):
    a = x.ravel()
    a[0] = 7  # a view of contiguous x
    b = x[:, ::2].ravel()
    b[0] = 8  # a copy
    c = x.flatten()
    c[1] = 9  # always a copy
    return x * 1


def _view_of_a_view(x):
    v = x[1:][:, 2:][::2]
    v[...] = 0
    w = v.T
    w += 1
    return x * 1


def _copy_is_independent(x):
    c = x.copy()
    d = np.copy(x)
    e = np.array(x)
    c[0] = 1
    d[1] = 2
    e[2] = 3
    x[3] = 4
    return c, d, e


def _two_names(x):
    y = x * 1
    z = y
    y += 1
    return z


def _astype_same_dtype_copies(x):
    y = x.astype(x.dtype)
    y[0] = 5
    return x * 1


@pytest.mark.parametrize("fn", [_view_then_base, _base_then_view, _transpose_view, _reshape_view,
                                _reshape_of_a_transpose_copies, _ravel_and_flatten, _view_of_a_view,
                                _copy_is_independent, _two_names, _astype_same_dtype_copies])
def test_views_alias_as_in_numpy(fn, backend):
    same_as_numpy(fn, A, backend=backend)


# ----------------------------------------------------------------------------- creation

def _created_arrays(x):
    a = np.zeros(6)
    b = np.ones((2, 6), np.float32)
    c = np.empty(6, np.int64)
    d = np.full((6,), 2.5)
    e = np.zeros_like(x)
    f = np.full_like(x, 3)
    a[1:] = x[0, 1:]
    b[1] = x[1]
    c[:] = 1
    c[2] = x[0, 2] * 10
    d += x[2]
    e[0] = x[3]
    f *= x
    return a, b, c, d, e, f


def _accumulate_rows(x):
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i].sum()
    return out


def test_creation_functions_make_traced_arrays(backend):
    same_as_numpy(_created_arrays, A, backend=backend)
    same_as_numpy(_accumulate_rows, A, backend=backend)


# ----------------------------------------------------------------------------- augmented operators

@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=", "^=", "<<=", ">>="])
@pytest.mark.parametrize("dtype", ["int32", "float64", "bool"])
def test_augmented_operators_on_arguments_and_views(tmp_path, op, dtype, backend):
    f = load(tmp_path, f"def f(x, y):\n    x[1:] {op} y[:-1]\n    v = x[::2]\n    v {op} 2\n    return x\n")
    x = (np.arange(6) % 3 + 1).astype(dtype)
    y = (np.arange(6) % 2 + 1).astype(dtype)
    same_as_numpy(f, x, y, backend=backend)


def test_augmented_casting_is_same_kind(backend):
    def f(x):
        x += 1.5  # int array += float: UFuncTypeError, argument unchanged
        return x
    got = same_as_numpy(f, np.arange(3), backend=backend)
    assert got[0] == "raise" and got[1] is TypeError


def test_matmul_in_place(backend):
    def f(x, m):
        x @= m
        return x
    same_as_numpy(f, A[:, :4].copy(), np.eye(4) * 2, backend=backend)


# ----------------------------------------------------------------------------- out=, copyto, fill, put

def _ufunc_out(x):
    c = np.empty_like(x)
    np.add(x, 1, out=c)
    np.multiply(c, x, out=(x,))
    np.sin(x[0], out=x[1])
    np.negative(x, out=x, where=x > 1)
    return c


def _ufunc_out_broadcasts(x):
    np.add(1.0, 2.0, out=x)
    return x


def _ufunc_out_bad_cast(x):
    y = np.zeros(x.shape, np.int64)
    np.add(x, 1, out=y)
    return y


def _reduction_out(x):
    s = np.zeros(6)
    np.sum(x, axis=0, out=s)
    m = np.zeros(4, np.float32)
    np.max(x, axis=1, out=m)
    return s, m


def _copyto(x):
    d = np.zeros((4, 6), np.float32)
    np.copyto(d, x, casting="same_kind")
    np.copyto(x, 0.5, where=x > 2)
    np.copyto(x[0], x[1])
    return d


def _copyto_bad_cast(x):
    d = np.zeros(6, np.int32)
    np.copyto(d, x[0])
    return d


def _fill(x):
    x[1].fill(7)
    y = np.empty(3, np.int16)
    y.fill(2.9)
    return y


def _put(x):
    np.put(x, [0, 5, -1, 5], [1.0, 2.0])
    np.put(x[1], [10], 3.0, mode="clip")
    np.put(x, [30], 4.0, mode="wrap")
    return x


def _put_traced_values(x):
    np.put(x, [1, 3], x[3, :2])
    return x


def _put_out_of_bounds(x):
    np.put(x, [100], 1.0)
    return x


@pytest.mark.parametrize("fn", [_ufunc_out, _ufunc_out_broadcasts, _ufunc_out_bad_cast, _reduction_out, _copyto,
                                _copyto_bad_cast, _fill, _put, _put_traced_values, _put_out_of_bounds])
def test_out_copyto_fill_put(fn, backend):
    same_as_numpy(fn, A, backend=backend)


# ----------------------------------------------------------------------------- arguments

def _writes_two(x, y):
    x[0] = y[0]
    y *= 2
    return None


@pytest.mark.parametrize("layout", ["contiguous", "strided", "transposed", "byteswapped", "strided-byteswapped"])
def test_written_arguments_of_every_layout(layout, backend):
    base = np.arange(48.0).reshape(6, 8)
    make = {"contiguous": lambda: base[:4, :6].copy(), "strided": lambda: base.copy()[::2, 1::1][:, :6][:3],
            "transposed": lambda: base[:6, :3].copy().T, "byteswapped": lambda: base[:3, :6].astype(">f8"),
            "strided-byteswapped": lambda: base.astype(">f8")[::2, ::1][:, :6]}[layout]
    x, y = make(), make() + 1
    ex, ey = x.copy(), y.copy()
    _writes_two(ex, ey)
    assert jk.jit(_writes_two, backend=backend)(x, y) is None
    np.testing.assert_array_equal(x, ex)
    np.testing.assert_array_equal(y, ey)
    assert x.dtype == ex.dtype and y.dtype == ey.dtype


def test_warm_calls_write_back_too(backend):
    def f(x):
        x += 1
    g = jk.jit(f, backend=backend)
    x = np.zeros(5)
    for _ in range(4):  # the first call compiles, the later ones take the fast path
        g(x)
    np.testing.assert_array_equal(x, np.full(5, 4.0))


def test_read_only_argument_that_is_written_raises(backend):
    def f(x, y):
        y[0] = 1.0
        x[0] = 1.0
        return x.sum()
    x, y = np.zeros(3), np.zeros(3)
    x.flags.writeable = False
    g = jk.jit(f, backend=backend)
    for _ in range(2):
        with pytest.raises(ValueError, match="assignment destination is read-only"):
            g(x, y)
        np.testing.assert_array_equal(y, 0)  # nothing written: the call raised
    assert float(jk.jit(lambda x: x.sum(), backend=backend)(x)) == 0  # reading a read-only array is fine


def test_a_call_that_raises_leaves_arguments_unchanged(backend):
    def f(x, e):
        x[0] = 5
        return x ** e  # a negative integer exponent raises at run time
    g = jk.jit(f, backend=backend)
    x = np.arange(3)
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        g(x, np.array([1, -1, 1]))
    np.testing.assert_array_equal(x, np.arange(3))
    g(x, np.array([1, 1, 1]))
    np.testing.assert_array_equal(x, [5, 1, 2])


def test_the_same_array_passed_twice_is_one_array(backend):
    def f(a, b):
        a[0] = 10
        b[1] += a[0]  # b is a: sees the write
        return a + b
    g = jk.jit(f, backend=backend)
    for _ in range(3):  # the fast path hands aliased calls to the traced variant too
        x, e = np.arange(4.0), np.arange(4.0)
        assert_matches_numpy(g(x, x), f(e, e))
        np.testing.assert_array_equal(x, e)
        v, ve = np.arange(6.0), np.arange(6.0)
        assert_matches_numpy(g(v[1:5], v[1:5]), f(ve[1:5], ve[1:5]))  # two views with the same layout
        np.testing.assert_array_equal(v, ve)
    x, y = np.arange(4.0), np.arange(4.0)
    g(x, y)  # separate arrays: the ordinary entry
    np.testing.assert_array_equal(y, [0, 11, 2, 3])


def test_overlapping_views_passed_to_a_writing_function_raise_a_clear_error(backend):
    def f(a, b):
        a[0] = b[1]
        return a
    base = np.arange(6.0)
    with pytest.raises(ValueError, match="overlapping views of one array"):
        jk.jit(f, backend=backend)(base[:4], base[2:])
    np.testing.assert_array_equal(base, np.arange(6.0))
    # a function that only reads may take the same array twice
    np.testing.assert_array_equal(jk.jit(lambda a, b: a + b, backend=backend)(base, base), base * 2)


def test_captured_numpy_array_written_names_the_line(tmp_path):
    f = load(tmp_path, "G = np.zeros(3)\ndef f(x):\n    G[0] = x.sum()\n    return x\n")
    with pytest.raises(jk.TracerArrayConversionError, match=r"G\[0\] = x.sum\(\)"):
        jk.jit(f)(np.ones(3))
    g = load(tmp_path, "G = np.zeros(3)\ndef f(x):\n    np.add(x, 1, out=G)\n    return x\n")
    with pytest.raises(jk.TracerArrayConversionError, match="made outside the jitted function"):
        jk.jit(g)(np.ones(3))


def test_python_and_numpy_scalars_cannot_be_written(backend):
    def f(x, s):
        s[0] = 1
        return x
    with pytest.raises(TypeError, match="does not support item assignment"):
        jk.jit(f, backend=backend)(np.ones(2), 3)


def test_writes_are_shown(backend):
    def f(x, y, z):
        y[0] = x[0]
        z += 1
        return x * 2
    lowered = jk.jit(f, backend=backend).lower(np.ones(3), np.ones(3), np.ones(3))
    assert "writes: y, z" in lowered.as_text("optimized")
    if backend == "cpu":
        assert "writes: y, z" in lowered.as_text("kernels")
    lowered = jk.jit(lambda x: x * 2, backend=backend).lower(np.ones(3))
    assert "writes:" not in lowered.as_text("optimized")


def test_nested_jitted_function_writes_the_outer_array(backend):
    @jk.jit
    def inner(v):
        v[0] = 42.0

    def outer(x):
        inner(x[1:])
        return x * 1
    x = np.zeros(4)
    np.testing.assert_array_equal(jk.jit(outer, backend=backend)(x), [0, 42, 0, 0])


# ----------------------------------------------------------------------------- random programs

_VIEW_OPS = ["[1:]", "[:-1]", "[::2]", "[::-1]", "[1:3]", "[0]", "[-1]", "[...]", ".T", ".reshape(-1)",
             ".ravel()", "[:, 1:]", "[:, ::-2]", "[1:, :2]", "[None]", ".copy()"]
_VALUES = ["1.5", "-2", "{y}", "{y} * 2", "np.sin({y})", "{y}.sum()", "{y}[::-1]", "{x}[::-1]", "{x} + 1",
           "{x}.mean()"]
_STATEMENTS = ["view", "set", "aug", "copyto", "fill", "read", "out", "put"]


@st.composite
def inplace_programs(draw):
    names = ["a", "b", "c"]
    lines = ["c = np.zeros((3, 4))"]
    for k in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(_STATEMENTS))
        x = draw(st.sampled_from(names))
        y = draw(st.sampled_from(names))
        if kind == "view":
            new = f"v{k}"
            lines.append(f"{new} = {x}{draw(st.sampled_from(_VIEW_OPS))}")
            names.append(new)
        elif kind == "set":
            index = draw(st.sampled_from(["[...]", "[1:]", "[::2]", "[0]", "[:, 0]", "[::-1]", "[1:3, ::2]"]))
            lines.append(f"{x}{index} = " + draw(st.sampled_from(_VALUES)).format(x=x, y=y))
        elif kind == "aug":
            op = draw(st.sampled_from(["+=", "-=", "*="]))
            lines.append(f"{x} {op} " + draw(st.sampled_from(_VALUES)).format(x=x, y=y))
        elif kind == "copyto":
            lines.append(f"np.copyto({x}, " + draw(st.sampled_from(_VALUES)).format(x=x, y=y) + ")")
        elif kind == "fill":
            lines.append(f"{x}.fill({draw(st.sampled_from(['0.25', '3']))})")
        elif kind == "out":
            ufunc = draw(st.sampled_from(["add", "multiply", "subtract"]))
            lines.append(f"np.{ufunc}({y}, " + draw(st.sampled_from(_VALUES)).format(x=x, y=y) + f", out={x})")
        elif kind == "put":
            lines.append(f"np.put({x}, {draw(st.sampled_from(['[0, 2]', '[-1]', '[1, 1, 3]']))}, {y}.sum())")
        else:
            new = f"r{k}"
            lines.append(f"{new} = {x} * 1")
            names.append(new)
    body = "\n".join(f"    {line}" for line in lines)
    return f"def f(a, b):\n{body}\n    return ({', '.join(n + ' * 1' for n in names)},)\n"


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(src=inplace_programs(), backend=st.sampled_from(["interpret", "cpu"]))
def test_random_in_place_programs_with_views_match_numpy(tmp_path_factory, src, backend):
    f = load(tmp_path_factory.mktemp("gen"), src)
    a = np.arange(12.0).reshape(3, 4) / 3
    b = np.arange(12.0).reshape(3, 4)[::-1] - 5
    try:
        same_as_numpy(f, a, b, backend=backend)
    except AssertionError as e:
        raise AssertionError(f"{src}\n{e}") from None


# ----------------------------------------------------------------------------- nesting, fusion, events

def test_writing_an_array_of_an_enclosing_trace_raises():
    from jitkernel.trace.context import TraceContext

    def f(x):
        with TraceContext("inner"):  # what a loop body's trace (jk.lax) is
            x[0] = 1.0
        return x
    with pytest.raises(jk.UnsupportedOperationError, match="enclosing trace"):
        jk.jit(f)(np.ones(3))


def test_whole_array_write_back_after_a_loop(backend):
    def f(A):
        new = A * 2 + 1  # what a converted loop's final carry is
        A[...] = new
        return A.sum()
    same_as_numpy(f, A, backend=backend)


def test_a_chain_of_writes_shares_one_buffer():
    def f(x):
        out = np.empty(x.shape[0])
        for i in range(x.shape[0]):
            out[i] = x[i].sum()
        return out
    x = np.arange(40.0).reshape(8, 5)
    text = jk.jit(f, autograph=False).lower(x).as_text("kernels")  # unrolled (converted: one loop)
    assert text.count("update_copy") == 1, text  # one copy (the zeros), then eight writes in place
    assert text.count("update_region") == 8, text
    np.testing.assert_array_equal(jk.jit(f)(x), f(x))


def test_region_write_computes_the_value_where_it_is_stored_in_the_argument():
    def f(a, b):
        b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1])
    a, b = np.random.default_rng(0).random((2, 64, 64))
    text = jk.jit(f).lower(a, b.copy()).as_text("kernels")
    # b is written in its own buffer: one kernel, no copy, and b is the program's output
    assert text.count("kernel ") == 1 and "update_region over [i0<62, i1<62]" in text, text
    assert "outputs: %1:f64[64,64]" in text, text
    expected = b.copy()
    f(a, expected)
    jk.jit(f)(a, b)
    np.testing.assert_allclose(b, expected, rtol=1e-15)


@pytest.mark.parametrize("layout", ["contiguous", "strided", "byteswapped"])
def test_in_place_argument_write_of_every_layout(layout, backend):
    def f(b, a):
        b[1:-1] = a[1:-1] * 2
        b[0] += 1
        return b.sum()
    make = {"contiguous": lambda v: v.copy(), "strided": lambda v: np.repeat(v, 2)[::2],
            "byteswapped": lambda v: v.astype(">f8")}[layout]
    a = np.arange(10.0)
    for _ in range(3):
        b, e = make(np.ones(10)), np.ones(10)
        assert_matches_numpy(jk.jit(f, backend=backend)(b, a), f(e, a))
        np.testing.assert_array_equal(b, e)


def test_in_place_argument_write_is_not_used_when_the_call_can_raise_afterwards():
    def f(b, e):
        b[1:] = 7
        return b ** e  # may raise (negative integer exponent) after the write
    b = np.arange(4)
    with pytest.raises(ValueError):
        jk.jit(f)(b, np.array([1, 1, -1, 1]))
    np.testing.assert_array_equal(b, np.arange(4))


def test_a_copy_of_an_argument_is_not_written_in_place():
    def f(x):
        y = x.copy()  # the same value, a new array: x must stay as it is
        y[0] = 100
        return y
    x = np.arange(5.0)
    np.testing.assert_array_equal(jk.jit(f)(x), [100, 1, 2, 3, 4])
    np.testing.assert_array_equal(x, np.arange(5.0))


def test_trace_event_names_the_written_arguments():
    from jitkernel import events
    seen = []
    unsubscribe = events.subscribe(seen.append)
    try:
        jk.jit(lambda x, y: x.__setitem__(0, y[0]))(np.zeros(2), np.ones(2))
    finally:
        unsubscribe()
    traces = [e for e in seen if isinstance(e, events.TraceEvent)]
    assert traces and traces[-1].writes == ("x",)


def test_traced_and_array_indices_go_through_the_functional_updates(backend):
    """x[i] = v with a traced scalar i (numpy/_dynamic.py) and x[idx] = v with an index array
    (numpy/_advanced.py): NumPy's result and argument, or (until those land) the unsupported
    error with the argument unchanged; never a silent difference."""
    def dynamic(x, i):
        x[i] = 5.0
        return x * 1

    def advanced(x, idx):
        x[idx] = 7.0
        return x * 1
    for fn, arg in ((dynamic, 2), (advanced, np.array([0, 3]))):
        x, e = np.arange(5.0), np.arange(5.0)
        try:
            got = jk.jit(fn, backend=backend)(x, arg)
        except jk.UnsupportedOperationError:
            np.testing.assert_array_equal(x, np.arange(5.0))
            continue
        assert_matches_numpy(got, fn(e, arg))
        np.testing.assert_array_equal(x, e)


def test_jacobi_step_matches_numpy_and_writes_b_in_place(backend):
    def step(A, B):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
    a, b = np.random.default_rng(1).random((2, 32, 32))
    for _ in range(2):
        same_as_numpy(step, a, b, backend=backend)
    if backend == "cpu":  # B in place (one kernel); A is read before it is written: a copy, then its region
        text = jk.jit(step).lower(a, b).as_text("kernels")
        assert "outputs: %2:f64[32,32], %1:f64[32,32]" in text and text.count("kernel ") == 3, text


def test_elementwise_update_of_an_argument_is_written_in_place(backend):
    def f(x, y):
        x *= y
        x += 1
    x, y = np.arange(6.0), np.full(6, 2.0)
    same_as_numpy(f, x, y, backend=backend)
    if backend == "cpu":
        text = jk.jit(f).lower(x, y).as_text("kernels")
        assert "outputs: %0:f64[6]" in text and text.count("kernel ") == 1, text

    def reversed_read(x):
        x += x[::-1]  # reads other elements: not in place
    same_as_numpy(reversed_read, np.arange(5.0), backend=backend)

    def read_before(x):
        y = x[::-1] * 2  # an earlier kernel over the same loops reads x elsewhere
        x += 1
        return y
    same_as_numpy(read_before, np.arange(5.0), backend=backend)


def test_an_argument_read_after_its_copy_is_not_adopted(backend):
    def f(x):
        x[1:] = x[:-1] * 2  # the region kernel reads x: the new value needs its own buffer
        x[0] = x[-1]
        return x.sum()
    same_as_numpy(f, np.arange(6.0), backend=backend)


def test_elementwise_in_place_update_is_not_used_when_a_library_step_can_raise(backend):
    def f(x, a):
        x += 1
        return np.linalg.inv(a)  # raises LinAlgError for a singular matrix, after x's kernel
    x = np.zeros(3)
    with pytest.raises(np.linalg.LinAlgError):
        jk.jit(f, backend=backend)(x, np.zeros((2, 2)))
    np.testing.assert_array_equal(x, 0)


_CHAIN_VIEWS = ["[::-1]", "[:, ::-1]", "[::-1, ::-2]", "[1:]", "[:, 1:3]", ".T", "[::2]", "[:, ::-3]", "[...]"]
_CHAIN_WRITES = ["[0] = 7.5", "[:, 0] = -1.0", "[-1] = {v}[0] * 2", "[...] = {v} + 1", "[::2] = 0.5",
                 " += 1", " *= -1", "[1:] = {v}[:-1]", "[:, -1] += {v}[:, 0]"]


@st.composite
def writes_through_view_chains(draw):
    """A chain of views of an argument (reversed, strided, transposed), a write through the last
    one, and reads of the base after it: writes through reversed views once merged a copy and a
    region store of one buffer into one loop (write after write at different offsets)."""
    chain = "".join(draw(st.lists(st.sampled_from(_CHAIN_VIEWS), min_size=1, max_size=3)))
    write = draw(st.sampled_from(_CHAIN_WRITES)).format(v="v")
    return (f"def f(a, b):\n    v = a{chain}\n    v{write}\n"
            f"    return a * 1, a.sum(), b + a[::-1]\n")


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(src=writes_through_view_chains(), backend=st.sampled_from(["interpret", "cpu"]))
def test_writes_through_random_view_chains_match_numpy(tmp_path_factory, src, backend):
    f = load(tmp_path_factory.mktemp("gen"), src)
    a = np.arange(20.0).reshape(4, 5) / 3
    b = np.arange(20.0).reshape(4, 5) - 5
    try:
        same_as_numpy(f, a, b, backend=backend)
    except (AssertionError, ValueError, IndexError) as e:
        raise AssertionError(f"{src}\n{e}") from None
