"""jk.lax: cond, switch, while_loop, fori_loop, scan traced into control-flow primitives, on
the cpu and interpret backends, against the same loops run as plain Python on NumPy values
(the reference: outside a trace jk.lax runs as Python, and a hand-written loop is compared too)."""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel.errors import TracerBoolConversionError, UnsupportedOperationError
from tests.helpers import assert_matches_numpy, check
import emulator_suite
from helpers import HOST_BACKENDS, primitive_names

TPU_SUITE = True  # the backend tests run on tpu-interpret too (tests/tpu_suite.py)


BACKENDS = HOST_BACKENDS + emulator_suite.emulator_backends()  # cuda-emulator where g++ is
DRAWN_BACKENDS = emulator_suite.DRAWN_BACKENDS
lax = jk.lax


# ----------------------------------------------------------------------------- fori_loop


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("lower,upper", [(0, 6), (2, 2), (5, 1), (-3, 2)])
def test_fori_loop_matches_a_python_loop(backend, lower, upper):
    a = np.linspace(-1.0, 2.0, 7)

    def f(a):
        return lax.fori_loop(lower, upper, lambda i, c: np.sin(c) * 0.5 + a * i, np.zeros_like(a))

    expected = np.zeros_like(a)
    for i in range(lower, upper):
        expected = np.sin(expected) * 0.5 + a * i
    got = jk.jit(f, backend=backend)(a)
    assert_matches_numpy(got, expected)
    check(f, a, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fori_loop_with_traced_bounds(backend):
    def f(a, n):
        return lax.fori_loop(1, n, lambda i, c: c + a * i, a)

    for n in (0, 1, 4, 9):
        expected = a0 = np.arange(3.0)
        for i in range(1, n):
            expected = expected + a0 * i
        assert_matches_numpy(jk.jit(f, backend=backend)(a0, n), expected)
    # n is a Python int argument (a run-time value): one trace for every value
    program = jk.make_ir(f)(np.arange(3.0), 5)
    assert primitive_names(program).count("fori_loop") == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_python_scalar_carry_takes_the_body_dtype_as_numpy_does(backend):
    x = np.arange(1, 6, dtype=np.float32)

    def f(x):
        return lax.fori_loop(0, 5, lambda i, acc: acc + x[i] * 2, 0.0)

    acc = 0.0
    for i in range(5):
        acc = acc + x[i] * 2  # Python float + float32 scalar -> float32 (NEP 50)
    got = jk.jit(f, backend=backend)(x)
    assert_matches_numpy(got, acc)
    assert got.dtype == np.float32


@pytest.mark.parametrize("backend", BACKENDS)
def test_python_int_carry_stays_a_python_int(backend):
    def f(n):
        return lax.fori_loop(0, n, lambda i, c: c + i * i, 0)
    assert_matches_numpy(jk.jit(f, backend=backend)(6), sum(i * i for i in range(6)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_ten_thousand_iterations_compile_like_one(backend):
    def f(a, n):
        return lax.fori_loop(0, n, lambda i, c: c * 0.5 + a, np.zeros_like(a))

    a = np.random.default_rng(0).random(64)
    program = jk.make_ir(f, static_argnums=1)(a, 10_000)
    assert primitive_names(program).count("fori_loop") == 1 and len(program.eqns) < 6
    g = jk.jit(f, static_argnums=1, backend=backend)
    got = g(a, 10_000)
    expected = np.zeros_like(a)
    for _ in range(10_000):
        expected = expected * 0.5 + a
    np.testing.assert_allclose(got, expected, rtol=1e-12)


# ----------------------------------------------------------------------------- while_loop


@pytest.mark.parametrize("backend", BACKENDS)
def test_while_loop_pytree_carry(backend):
    def f(x, limit):
        def cond(c):
            return c["x"].sum() < limit

        def body(c):
            return {"x": c["x"] * 1.5 + 0.25, "n": c["n"] + 1, "hist": (c["hist"][1], c["x"].max())}
        return lax.while_loop(cond, body, {"x": x, "n": np.int32(0), "hist": (x.min(), x.max())})

    x = np.array([0.5, 1.0, 2.0])
    for limit in (0.0, 10.0, 1000.0):
        c = {"x": x, "n": np.int32(0), "hist": (x.min(), x.max())}
        while c["x"].sum() < limit:
            c = {"x": c["x"] * 1.5 + 0.25, "n": c["n"] + 1, "hist": (c["hist"][1], c["x"].max())}
        assert_matches_numpy(jk.jit(f, backend=backend)(x, limit), c)


@pytest.mark.parametrize("backend", BACKENDS)
def test_while_loop_on_a_data_dependent_condition(backend):
    def collatz_steps(n):
        return lax.while_loop(lambda c: c[0] != 1, lambda c: (np.where(c[0] % 2 == 0, c[0] // 2, 3 * c[0] + 1), c[1] + 1),
                              (n, np.int64(0)))
    for n in (1, 6, 27):
        assert int(jk.jit(collatz_steps, backend=backend)(np.int64(n))[1]) == {1: 0, 6: 8, 27: 111}[n]


# ----------------------------------------------------------------------------- cond / switch


@pytest.mark.parametrize("backend", BACKENDS)
def test_cond_branches_close_over_outer_tracers(backend):
    def f(x, y, t):
        scale = y.sum()  # an outer traced value read by both branches
        return lax.cond(x.mean() > t, lambda v: (v * scale, v.max()), lambda v: (v - scale, y.min()), x)

    x, y = np.array([1.0, 2.0, 4.0]), np.array([0.5, -1.0])
    for t in (0.0, 5.0):
        check(f, x, y, t, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_switch_clamps_its_index(backend):
    branches = [lambda v: v + 1, lambda v: v * 10, lambda v: -v]

    def f(k, v):
        return lax.switch(k, branches, v)
    for k in (-5, 0, 1, 2, 99):
        expected = branches[min(max(k, 0), 2)](np.arange(3))
        assert_matches_numpy(jk.jit(f, backend=backend)(np.int64(k), np.arange(3)), expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cond_joins_a_python_scalar_with_an_array_dtype(backend):
    def f(x):
        return lax.cond(x.sum() > 0, lambda: x.sum(), lambda: 0.0)
    for x in (np.array([1, 2], np.float32), np.array([-1, -2], np.float32)):
        got = jk.jit(f, backend=backend)(x)
        assert got.dtype == np.float32 and float(got) == max(float(x.sum()), 0.0)


# ----------------------------------------------------------------------------- scan


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_matches_a_python_loop(backend, reverse):
    def f(xs, w):
        def step(c, x):
            h = np.tanh(c["h"] * w + x["a"])
            return {"h": h, "n": c["n"] + 1}, (h.sum(), x["b"] * 2)
        return lax.scan(step, {"h": np.zeros(3), "n": 0}, xs, reverse=reverse)

    rng = np.random.default_rng(1)
    xs = {"a": rng.standard_normal((5, 3)), "b": np.arange(5, dtype=np.int32)}
    w = 0.7
    c, ys = {"h": np.zeros(3), "n": 0}, []
    for t in (range(4, -1, -1) if reverse else range(5)):
        h = np.tanh(c["h"] * w + xs["a"][t])
        c = {"h": h, "n": c["n"] + 1}
        ys.append((h.sum(), xs["b"][t] * 2))
    if reverse:
        ys.reverse()
    expected = (c, (np.stack([y[0] for y in ys]), np.stack([y[1] for y in ys])))
    assert_matches_numpy(jk.jit(f, backend=backend)(xs, w), expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_scan_of_length_zero(backend):
    def f(xs):
        return lax.scan(lambda c, x: (c + x, (x * 2).astype(np.int8)), np.ones(2), xs)
    carry, ys = jk.jit(f, backend=backend)(np.zeros((0, 2)))
    assert ys.shape == (0, 2) and ys.dtype == np.int8
    np.testing.assert_array_equal(carry, np.ones(2))


# ----------------------------------------------------------------------------- nesting


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_loops_capture_the_outer_index_and_arrays(backend):
    def f(a):
        n = a.shape[0]

        def outer(i, acc):
            row = a[i]

            def inner(j, s):
                return s + row[j] * a[j, i] * (i + 1)
            return acc + lax.fori_loop(0, n, inner, 0.0)
        return lax.fori_loop(0, n, outer, 0.0)

    a = np.arange(16.0).reshape(4, 4) / 7
    expected = 0.0
    for i in range(4):
        s = 0.0
        for j in range(4):
            s = s + a[i][j] * a[j, i] * (i + 1)
        expected = expected + s
    assert_matches_numpy(jk.jit(f, backend=backend)(a), expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cond_inside_a_loop_is_a_dynamic_programming_step(backend):
    def best_run(x):
        def body(i, c):
            best, cur = c
            cur = lax.cond(x[i] > 0, lambda: cur + x[i], lambda: 0.0 * cur)
            return lax.cond(cur > best, lambda: cur, lambda: best), cur
        return lax.fori_loop(0, x.shape[0], body, (np.float64(0.0), np.float64(0.0)))[0]

    x = np.array([1.0, -2.0, 3.0, 4.0, -1.0, 2.5])
    best = cur = 0.0
    for v in x:
        cur = cur + v if v > 0 else 0.0
        best = max(best, cur)
    assert float(jk.jit(best_run, backend=backend)(x)) == best


# ----------------------------------------------------------------------------- outside a trace


def test_outside_a_trace_jk_lax_is_plain_python():
    assert lax.fori_loop(0, 4, lambda i, c: c + i, 0) == 6
    assert lax.while_loop(lambda c: c < 10, lambda c: c * 3, 1) == 27
    assert lax.cond(True, lambda: "t", lambda: "f") == "t"
    assert lax.switch(-1, [lambda: 0, lambda: 1]) == 0
    c, ys = lax.scan(lambda c, x: (c + x, c), 0, np.arange(4))
    assert c == 6 and ys.tolist() == [0, 0, 1, 3]


# ----------------------------------------------------------------------------- errors


def test_carry_dtype_change_names_the_leaf():
    def f(x):
        return lax.fori_loop(0, 3, lambda i, c: (c[0], c[1] * 0.5), (x, np.int32(1)))
    with pytest.raises(TypeError, match=r"carry\[1\] is i32\[\] at the input and f64\[\] at the output of body_fun"):
        jk.jit(f)(np.ones(2))


def test_carry_structure_change_is_an_error():
    with pytest.raises(TypeError, match="structure"):
        jk.jit(lambda x: lax.while_loop(lambda c: c[0].sum() < 3, lambda c: [c[0] + 1, c[1]], (x, x)))(np.ones(2))


def test_branch_types_must_agree():
    with pytest.raises(TypeError, match=r"result differs \(branch 0: f64\[2\], branch 1: i64\[2\]\)"):
        jk.jit(lambda x: lax.cond(x.sum() > 0, lambda: np.arange(2), lambda: x))(np.ones(2))


def test_a_leaked_body_value_is_a_clear_error():
    leaked = []

    def f(x):
        def body(i, c):
            leaked.append(c * 2)
            return c + 1
        out = lax.fori_loop(0, 2, body, x)
        return out + leaked[0]
    with pytest.raises(UnsupportedOperationError, match="used after that function returned"):
        jk.jit(f)(np.ones(2))


def test_python_if_on_a_traced_value_names_jk_lax():
    def f(x):
        if x.sum() > 0:
            return x
        return -x
    with pytest.raises(TracerBoolConversionError, match=r"jk\.lax\.cond .*jk\.lax\.while_loop or jk\.lax\.fori_loop"):
        jk.jit(f, autograph=False)(np.ones(2))  # converted by default (jitkernel/autograph)


def test_make_ir_prints_the_body():
    text = str(jk.make_ir(lambda a: lax.fori_loop(0, 3, lambda i, c: c + a, a))(np.ones(2)))
    assert "fori_loop[body={ program" in text and "nconsts=1" in text


# ----------------------------------------------------------------------------- random loop programs

_BODY_OPS = [
    ("c + x", lambda c, x, i: c + x),
    ("c * 0.5", lambda c, x, i: c * 0.5),
    ("c - i", lambda c, x, i: c - i),
    ("maximum(c, x)", lambda c, x, i: np.maximum(c, x)),
    ("where(c > x, c - x, c + 1)", lambda c, x, i: np.where(c > x, c - x, c + 1)),
    ("c * 2 + i", lambda c, x, i: c * 2 + i),
    ("abs(c) // 2 + x", lambda c, x, i: np.abs(c) // 2 + x),
]


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(st.sampled_from(range(len(_BODY_OPS))), min_size=1, max_size=4),
       trips=st.integers(0, 6), dtype=st.sampled_from(["float64", "float32", "int64", "int32"]),
       kind=st.sampled_from(["fori", "while", "scan", "nested"]), traced_trips=st.booleans(),
       branch=st.sampled_from([None, "sum > 0", "i odd"]), backend=st.sampled_from(DRAWN_BACKENDS))
def test_random_loop_programs_match_python(ops, trips, dtype, kind, traced_trips, branch, backend):
    """A random body (elementwise ops, optionally under a cond on a traced value) in a random
    loop (trip counts from 0, static or traced) on a random carried dtype, against the same
    loop written in Python (`python=True` runs Python `if` / `for`)."""
    x = (np.arange(4) - 1).astype(dtype)

    def ops_on(c, i):
        for k in ops:
            c = _BODY_OPS[k][1](c, x, i).astype(dtype)
        return c

    def step(c, i, python=False):
        if branch is None:
            return ops_on(c, i)
        take = c.sum() > 0 if branch == "sum > 0" else i % 2 == 1
        if python:
            return ops_on(c, i) if take else (c * 3).astype(dtype)
        return lax.cond(take, lambda: ops_on(c, i), lambda: (c * 3).astype(dtype))

    def f(x0, n):
        if kind == "fori":
            return lax.fori_loop(0, n, lambda i, c: step(c, i), x0)
        if kind == "nested":
            return lax.fori_loop(0, n, lambda i, c: lax.fori_loop(i, n, lambda j, d: step(d, j), c), x0)
        if kind == "while":
            return lax.while_loop(lambda c: c[1] < n, lambda c: (step(c[0], c[1]), c[1] + 1), (x0, 0))[0]
        return lax.scan(lambda c, t: (step(c, t), c.sum()), x0, np.arange(trips))

    expected = x.copy()
    ys = []
    for i in range(trips):
        if kind == "nested":
            for j in range(i, trips):
                expected = step(expected, j, python=True)
            continue
        ys.append(expected.sum())
        expected = step(expected, i, python=True)
    if kind == "scan":
        expected = (expected, np.array(ys, dtype=x.sum().dtype))  # int32 sums are int64, as NumPy's
    jitted = jk.jit(f, backend=backend, **({} if traced_trips else {"static_argnums": 1}))
    with np.errstate(all="ignore"):
        got = jitted(x, trips)
    assert_matches_numpy(got, expected)


def test_a_loop_index_that_does_not_fit_a_narrow_carry_raises_numpys_overflow_error():
    def f(x):
        return lax.fori_loop(0, 200, lambda i, c: c + i, x)
    x = np.ones(3, np.int8)
    with pytest.raises(OverflowError) as numpy_error:
        f(x)  # plain Python: NumPy's error at i == 128
    with pytest.raises(OverflowError, match=str(numpy_error.value)):
        jk.jit(f)(x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_python_scalar_result_is_cast_to_the_carry_dtype(backend):
    got = jk.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: 0.0, x.sum()), backend=backend)(np.ones(2, np.float32))
    assert got.dtype == np.float32 and float(got) == 0.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_branches_capturing_different_outer_values(backend):
    def f(x, y, z, k):
        branches = [lambda v: v + y.sum(), lambda v: v * z, lambda v: v - y * z, lambda v: v]
        return lax.switch(k, branches, x)
    x, y, z = np.arange(3.0), np.array([1.0, 2.0, 4.0]), np.array([-1.0, 0.5, 2.0])
    for k in range(4):
        check(f, x, y, z, k, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_scan_without_xs_and_loops_inside_branches(backend):
    def f(x, n):
        def step(c, _):
            c = lax.cond(c.sum() > 10, lambda: c * 0.5, lambda: lax.fori_loop(0, n, lambda i, d: d + i, c))
            return c, c.max()
        return lax.scan(step, x, None, length=6)
    for n in (0, 3):
        check(f, np.array([1.0, 2.0]), n, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fori_loop_bounds_of_a_narrow_integer_dtype(backend):
    def f(a, bounds):
        return lax.fori_loop(bounds[0], bounds[1], lambda i, c: c + a[i], np.float32(0))
    a = np.arange(10, dtype=np.float32)
    for b in ([2, 7], [5, 5], [-3, -1]):
        check(f, a, np.array(b, np.int16), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_while_condition_reads_outer_values(backend):
    def f(x, limit):
        top = limit * 2
        return lax.while_loop(lambda c: (c * c).sum() < top, lambda c: c + x, np.zeros_like(x))
    check(f, np.array([0.5, 1.0]), 3.0, backend=backend)


@pytest.mark.parametrize("value,dtype", [(300, np.int8), (0.1, np.float32), (2**60 + 1, np.float64)])
def test_a_python_scalar_that_the_carry_cannot_hold_is_an_error(value, dtype):
    with pytest.raises(TypeError, match="may not hold that Python"):
        jk.jit(lambda x: lax.fori_loop(0, 2, lambda i, c: value, x))(np.zeros((), dtype))
    with pytest.raises(TypeError, match="branches must return the same types"):
        jk.jit(lambda x: lax.cond(x > 0, lambda: x, lambda: value))(np.zeros((), dtype))


def test_a_traced_python_int_into_a_narrow_carry_is_an_error():
    with pytest.raises(TypeError, match="int32 may not hold that Python int"):
        jk.jit(lambda x: lax.fori_loop(0, 2, lambda i, c: i, x))(np.zeros((), np.int32))
    got = jk.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: i, x))(np.zeros((), np.int64))
    assert got.dtype == np.int64 and int(got) == 2


def test_eager_scan_of_length_zero_returns_empty_stacked_outputs():
    # JAX returns empty arrays of the per-step types; None would break code that reads ys.shape
    def step(c, x):
        return c + x.sum(), (x * 2, c)
    xs = np.zeros((0, 3), np.float32)
    c, (a, b) = jk.lax.scan(step, np.float32(1.0), xs)
    assert c == 1.0 and a.shape == (0, 3) and a.dtype == np.float32 and b.shape == (0,)
    cj, (aj, bj) = jk.jit(lambda xs: jk.lax.scan(step, np.float32(1.0), xs))(xs)
    assert aj.shape == a.shape and aj.dtype == a.dtype and bj.shape == b.shape and bj.dtype == b.dtype
