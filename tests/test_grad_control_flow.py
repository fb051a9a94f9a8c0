"""Differentiation of control flow (transforms/ad_control_flow.py): cond, scan, fori_loop and
while_loop in forward and reverse mode, checked against central finite differences
(`jk.check_grads`), plus JAX's errors for reverse mode of loops without a static trip count and
Python loops converted by autograph.

Sweeps run on the interpret backend (no LLVM compile); a representative subset runs on cpu.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel import lax
from jitkernel.transforms import ad
from jitkernel.transforms.ad_control_flow import LoopGradientError

JAX_LOOP_MESSAGE = ("Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
                    "start/stop values. Try using lax.scan, or using fori_loop with static start/stop.")


def _prims(program) -> set[str]:
    from jitkernel.ir.control_flow import sub_programs
    found = set()
    for eqn in program.eqns:
        found.add(eqn.prim)
        for sub in sub_programs(eqn.params):
            found |= _prims(sub)
    return found


X = np.array([0.3, -0.7, 1.1])

# ----------------------------------------------------------------------------- cond


def _switch3(x, w, k):
    return lax.switch(k, [lambda a: np.sin(a) * w, lambda a: a * a * w, lambda a: np.exp(a) + w], x).sum()


@pytest.mark.parametrize("k", [0, 1, 2, 7])
def test_switch_both_modes_order2(interpret, k):
    jk.check_grads(lambda x, w: _switch3(x, w, k), (X, 0.8), order=2)


def test_cond_chooses_the_branch_derivative():
    f = lambda x, p: lax.cond(p, lambda a: np.sin(a), lambda a: a ** 3, x).sum()  # noqa: E731
    np.testing.assert_allclose(jk.grad(f)(X, True), np.cos(X))
    np.testing.assert_allclose(jk.grad(f)(X, False), 3 * X ** 2)
    _, t = jk.jvp(lambda x: lax.cond(False, lambda a: np.sin(a), lambda a: a ** 3, x), (X,), (np.ones(3),))
    np.testing.assert_allclose(t, 3 * X ** 2)


def test_cond_with_traced_predicate_and_integer_output_cpu():
    def f(x):
        y, n = lax.cond(x.sum() > 0, lambda a: (a * 2.0, 1), lambda a: (np.cos(a), 2), x)
        return (y * n).sum()
    jk.check_grads(f, (X,), order=1)
    jk.check_grads(f, (-X,), order=1)

# ----------------------------------------------------------------------------- scan


def _scan_loss(x, w, reverse=False):
    def step(c, xi):
        c2 = np.sin(c) * w + xi * c
        return c2, c2 * xi
    c, ys = lax.scan(step, np.full(2, 0.5), x, reverse=reverse)
    return (c * c).sum() + np.tanh(ys).sum()


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_both_modes_order2(interpret, reverse):
    x = np.linspace(-1, 1, 8).reshape(4, 2)
    jk.check_grads(lambda x, w: _scan_loss(x, w, reverse), (x, 0.9), order=2)


def test_scan_cpu_matches_interpret():
    x = np.linspace(-1, 1, 8).reshape(4, 2)
    jk.check_grads(lambda x, w: _scan_loss(x, w), (x, 0.9), order=1)
    g = jk.jit(jk.grad(_scan_loss, argnums=(0, 1)))(x, 0.9)
    saved = jk.config.default_backend
    jk.config.update("default_backend", "interpret")
    try:
        g_ref = jk.grad(_scan_loss, argnums=(0, 1))(x, 0.9)
    finally:
        jk.config.update("default_backend", saved)
    np.testing.assert_allclose(g[0], g_ref[0], rtol=1e-12)
    np.testing.assert_allclose(g[1], g_ref[1], rtol=1e-12)


def test_scan_consts_get_summed_cotangents_and_integer_carry(interpret):
    def f(w, b):
        def step(carry, x):
            c, k = carry
            return (c * w + b * x, k + 1), c * k
        (c, k), ys = lax.scan(step, (np.ones(3), 0), np.arange(5.0))
        return c.sum() + ys.sum() + k
    w, b = np.array([0.9, 1.1, -0.5]), 0.3
    jk.check_grads(f, (w, b), order=2)
    # the derivative with respect to the const b, by hand: c_t = w c_{t-1} + b t
    gb = jk.grad(f, argnums=1)(w, b)
    eps = 1e-6
    assert abs(gb - (f(w, b + eps) - f(w, b - eps)) / (2 * eps)) < 1e-6


def test_scan_sums_cotangents_only_of_wanted_consts(interpret):
    x = np.linspace(-1, 1, 8).reshape(4, 2)

    def backward_carries(argnums):
        program = jk.make_ir(jk.grad(_scan_loss, argnums=argnums))(x, 0.9)
        return [e.params["ncarry"] for e in program.eqns if e.prim == "scan" and e.params["reverse"]]
    assert backward_carries(0) == [1]  # the carry's cotangent; w is not differentiated
    assert backward_carries((0, 1)) == [2]  # and the running sum of w's cotangent


def test_scan_without_carry_and_empty(interpret):
    f = lambda x: lax.scan(lambda c, xi: (c, np.sin(xi) * 2.0), (), x)[1].sum()  # noqa: E731
    jk.check_grads(f, (X,), order=2)
    g = jk.grad(lambda x, y: lax.scan(lambda c, xi: (c * xi, xi), x, y)[0].sum())(X, np.zeros((0, 3)))
    np.testing.assert_array_equal(g, np.ones(3))


def test_scan_forward_mode_carry_tangent_from_a_const(interpret):
    # the carry starts without a tangent and gets one from the const w: the fixed point
    def f(w):
        return lax.scan(lambda c, _: (c * 2.0 + w, c), 0.0, None, length=4)[0]
    _, t = jk.jvp(f, (1.5,), (1.0,))
    assert t == pytest.approx(1 + 2 + 4 + 8)


@settings(max_examples=15, deadline=None)
@given(length=st.integers(1, 5),  # length 0: test_scan_without_carry_and_empty
        width=st.integers(1, 3), reverse=st.booleans(), seed=st.integers(0, 10 ** 6))
def test_scan_sweep(length, width, reverse, seed):
    saved = jk.config.default_backend
    jk.config.update("default_backend", "interpret")
    try:
        rng = np.random.default_rng(seed)
        xs = rng.standard_normal((length, width)) * 0.5
        c0 = rng.standard_normal(width)

        def f(c0, xs):
            def step(c, x):
                return np.tanh(c) * 1.3 + x * c, c * x
            c, ys = lax.scan(step, c0, xs, reverse=reverse)
            return c.sum() + ys.sum()
        jk.check_grads(f, (c0, xs), order=1)
    finally:
        jk.config.update("default_backend", saved)

# ----------------------------------------------------------------------------- fori_loop / while_loop


def _fori_loss(x, lo=0, hi=4):
    return lax.fori_loop(lo, hi, lambda i, c: np.sin(c) * x + c * i, x).sum()


@pytest.mark.parametrize("lo,hi", [(0, 4), (2, 5), (3, 3), (5, 1)])
def test_fori_static_bounds_both_modes_order2(interpret, lo, hi):
    jk.check_grads(lambda x: _fori_loss(x, lo, hi), (X,), order=2)


@settings(max_examples=15, deadline=None)
@given(lo=st.integers(-2, 3), trips=st.integers(-1, 4), seed=st.integers(0, 10 ** 6))
def test_fori_trip_count_sweep(lo, trips, seed):
    x = np.random.default_rng(seed).standard_normal(2)
    with_interpret = jk.config.default_backend
    jk.config.update("default_backend", "interpret")
    try:
        jk.check_grads(lambda x: _fori_loss(x, lo, lo + trips), (x,), order=1)
    finally:
        jk.config.update("default_backend", with_interpret)


def test_fori_static_bounds_cpu():
    jk.check_grads(_fori_loss, (X,), order=1)


def test_fori_static_bounds_from_folded_constants(interpret):
    n = 3
    jk.check_grads(lambda x: lax.fori_loop(n - 2, 2 * n, lambda i, c: c * 0.9 + np.sin(c), x).sum(), (X,), order=1)


def _dynamic_fori(x, n):
    return lax.fori_loop(0, n, lambda i, c: np.sin(c) * 1.1, x).sum()


def test_fori_dynamic_bounds_forward_mode_and_reverse_error(interpret):
    n = np.array(3)  # an array: a run-time value, never made static
    _, t = jk.jit(lambda x, n: jk.jvp(lambda x: _dynamic_fori(x, n), (x,), (np.ones(3),)))(X, n)
    eps = 1e-6
    assert t == pytest.approx((_dynamic_fori(X + eps, 3) - _dynamic_fori(X - eps, 3)) / (2 * eps), rel=1e-6)
    with pytest.raises(LoopGradientError) as info:
        jk.grad(_dynamic_fori)(X, n)
    assert JAX_LOOP_MESSAGE in str(info.value)
    assert "fori_loop" in str(info.value)
    assert isinstance(info.value, ValueError)  # as JAX's


def test_fori_python_int_bound_is_static_under_grad(interpret):
    # a Python int argument is traced again as a static value (jk.config.static_int_fallback)
    g = jk.grad(_dynamic_fori)(X, 2)
    x1 = np.sin(X) * 1.1
    np.testing.assert_allclose(g, np.cos(x1) * 1.1 * np.cos(X) * 1.1)


def _while_loss(x):
    def body(c):
        v, k = c
        return np.sin(v) * x + 0.5, k + 1
    return lax.while_loop(lambda c: c[1] < 3, body, (x, 0))[0].sum()


def test_while_forward_mode_order2(interpret):
    jk.check_grads(_while_loss, (X,), order=2, modes=("fwd",))


def test_while_forward_mode_cpu():
    jk.check_grads(_while_loss, (X,), order=1, modes=("fwd",))
    _, t = jk.jvp(lambda x: lax.while_loop(lambda c: c[1] < 2, lambda c: (c[0] * c[0], c[1] + 1), (x, 0))[0],
                  (X,), (np.ones(3),))
    np.testing.assert_allclose(t, 4 * X ** 3)


def test_while_reverse_mode_raises_jax_error(interpret):
    def loss(x):
        return lax.while_loop(lambda c: c.sum() < 10, lambda c: c * 2.0, x).sum()
    with pytest.raises(LoopGradientError) as info:
        jk.grad(loss)(np.abs(X) + 0.1)
    assert JAX_LOOP_MESSAGE in str(info.value)
    assert "while_loop" in str(info.value)
    # the integer-only loop of a function is no obstacle: nothing to differentiate through it
    g = jk.grad(lambda x: x.sum() * lax.while_loop(lambda k: k < 3, lambda k: k + 1, 0))(X)
    np.testing.assert_array_equal(g, np.full(3, 3.0))

# ----------------------------------------------------------------------------- nesting


def _nested(x):
    def outer(c, xi):
        inner = lax.fori_loop(0, 3, lambda i, d: np.sin(d) * xi + d, c)
        return inner * 0.5, lax.cond(xi > 0, lambda a: a * a, lambda a: np.cos(a), inner).sum()
    c, ys = lax.scan(outer, x, x)
    return c.sum() + ys.sum()


def test_nested_control_flow_order2(interpret):
    jk.check_grads(_nested, (X,), order=2)


def test_nested_control_flow_cpu_and_forward_over_reverse():
    jk.check_grads(_nested, (X,), order=1)
    g = jk.grad(_nested)
    _, hv = jk.jvp(g, (X,), (np.ones(3),))  # a Hessian-vector product, forward over reverse
    eps = 1e-5
    np.testing.assert_allclose(hv, (g(X + eps) - g(X - eps)) / (2 * eps), atol=1e-6)


def test_grad_inside_loop_bodies(interpret):
    def scan_of_grad(x):
        def step(c, xi):
            return c + jk.grad(lambda t: np.sin(t * xi).sum())(c), xi
        return lax.scan(step, x, np.arange(3.0))[0].sum()

    def fori_of_grad_of_fori(x):
        def body(i, c):
            return c + jk.grad(lambda t: lax.fori_loop(0, 2, lambda j, u: u * t, t).sum())(c)
        return lax.fori_loop(0, 2, body, x).sum()
    jk.check_grads(scan_of_grad, (X,), order=1)
    jk.check_grads(fori_of_grad_of_fori, (X,), order=1)

# ----------------------------------------------------------------------------- Python loops (autograph)


def test_grad_through_converted_python_loop_in_jit():
    def loss(x):
        s = x
        for i in range(40):  # long enough to stay a loop (not unrolled)
            s = s * 0.95 + np.sin(s) * x * 0.01
        return s.sum()
    grad_fn = jk.jit(jk.grad(loss))
    assert "fori_loop" in _prims(jk.make_ir(loss)(X)) or "scan" in _prims(jk.make_ir(loss)(X))
    program = jk.make_ir(grad_fn)(X)
    assert "scan" in _prims(program)  # the reverse pass of the loop
    jk.check_grads(loss, (X,), order=1)
    np.testing.assert_allclose(grad_fn(X), jk.grad(loss)(X), rtol=1e-12)


def test_grad_through_converted_loop_with_index_reads(interpret):
    x = np.linspace(0.1, 0.9, 30)

    def loss(x, w):
        acc = 0.0
        for i in range(30):
            acc = acc * w + x[i] * x[i]
        return acc
    assert "fori_loop" in _prims(jk.make_ir(loss)(x, 0.5))
    jk.check_grads(loss, (x, 0.5), order=1)


def test_converted_loop_with_dynamic_bound_raises_under_grad(interpret, no_static_int_fallback):
    def loss(x, n):
        s = x
        for i in range(n):
            s = np.sin(s)
        return s.sum()
    with pytest.raises(LoopGradientError, match="dynamic start/stop"):
        jk.grad(loss)(X, 3)

def test_converted_python_while_loop_forward_mode_and_reverse_error(interpret):
    def grow(x):
        while x.sum() < 10.0:  # a traced condition: a while_loop
            x = x * 1.5
        return x.sum()
    x = np.array([1.0, 2.0])
    assert "while_loop" in _prims(jk.make_ir(grow)(x))
    value, t = jk.jvp(grow, (x,), (np.ones(2),))
    assert (value, t) == pytest.approx((3 * 1.5 ** 3, 2 * 1.5 ** 3))
    with pytest.raises(LoopGradientError, match="while_loop"):
        jk.grad(grow)(x)


# ----------------------------------------------------------------------------- a broken rule is caught


def test_a_broken_scan_rule_is_caught(interpret, monkeypatch):
    good = ad.VJP_RULES["scan"]

    def broken(cts, primals, outs, **params):
        return [None if c is None else ad.ops.mul(c, ad.ops.full(c.shape, 1.01, c.dtype)) for c in good(cts, primals, outs, **params)]
    monkeypatch.setitem(ad.VJP_RULES, "scan", broken)
    with pytest.raises(jk.GradientCheckError, match="vjp"):
        jk.check_grads(lambda x, w: _scan_loss(x, w), (np.linspace(-1, 1, 8).reshape(4, 2), 0.9), order=1, modes=("rev",))
