"""jk.lax: cond, switch, while_loop, fori_loop, scan traced into control-flow primitives, on
the cpu and interpret backends, against the same loops run as plain Python on NumPy values
(the reference: outside a trace jk.lax runs as Python, and a hand-written loop is compared too)."""
from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel.errors import TracerBoolConversionError, UnsupportedOperationError
from tests.helpers import assert_matches_numpy, check

BACKENDS = ["cpu", "interpret"]
lax = jk.lax


def _prims(program) -> list[str]:
    return [e.prim for e in program.eqns]


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
    assert _prims(program).count("fori_loop") == 1


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
    assert _prims(program).count("fori_loop") == 1 and len(program.eqns) < 6
    g = jk.jit(f, static_argnums=1, backend=backend)
    t0 = time.perf_counter()
    got = g(a, 10_000)
    first = time.perf_counter() - t0
    expected = np.zeros_like(a)
    for _ in range(10_000):
        expected = expected * 0.5 + a
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert first < 10.0, f"first call of a 10,000-iteration loop took {first:.2f} s"


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


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(st.sampled_from(range(len(_BODY_OPS))), min_size=1, max_size=4),
       trips=st.integers(0, 6), dtype=st.sampled_from(["float64", "float32", "int64", "int32"]),
       kind=st.sampled_from(["fori", "while", "scan"]), backend=st.sampled_from(BACKENDS))
def test_random_loop_programs_match_python(ops, trips, dtype, kind, backend):
    x = (np.arange(4) - 1).astype(dtype)

    def step(c, i):
        for k in ops:
            c = _BODY_OPS[k][1](c, x, i).astype(dtype)
        return c

    def f(x0):
        if kind == "fori":
            return lax.fori_loop(0, trips, lambda i, c: step(c, i), x0)
        if kind == "while":
            return lax.while_loop(lambda c: c[1] < trips, lambda c: (step(c[0], c[1]), c[1] + 1), (x0, 0))[0]
        return lax.scan(lambda c, t: (step(c, t), c.sum()), x0, np.arange(trips))

    expected = x.copy()
    ys = []
    for i in range(trips):
        ys.append(expected.sum())
        expected = step(expected, i)
    if kind == "scan":
        expected = (expected, np.array(ys, dtype=x.sum().dtype))  # int32 sums are int64, as NumPy's
    with np.errstate(all="ignore"):
        got = jk.jit(f, backend=backend)(x)
    assert_matches_numpy(got, expected)
