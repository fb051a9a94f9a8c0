"""jk.custom_jvp / jk.custom_vjp (transforms/custom.py, ir/custom_prims.py, passes/custom_inline.py):
the user's rules are used in both modes, higher order, under vmap and jit, and inlined before the
passes; JAX's errors."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from jitkernel.passes import optimize
from helpers import HOST_BACKENDS


@jk.custom_jvp
def log1pexp(x):
    return np.log1p(np.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t / (1 + np.exp(-x))  # stable where the naive derivative is inf / inf


@jk.custom_vjp
def clip_gradient(x):
    return x


clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (np.clip(g, -1.0, 1.0),))


@jk.custom_vjp
def sin_times(x, y):
    return np.sin(x) * y


def _sin_times_fwd(x, y):
    return sin_times(x, y), (np.cos(x), np.sin(x), y)


def _sin_times_bwd(res, g):
    cos_x, sin_x, y = res
    return (cos_x * g * y, sin_x * g)


sin_times.defvjp(_sin_times_fwd, _sin_times_bwd)


def test_outside_a_trace_runs_plain_numpy():
    assert isinstance(log1pexp(np.ones(2)), np.ndarray)
    assert log1pexp(1.0) == np.log1p(np.exp(1.0))


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_custom_jvp_rule_is_used_both_modes(backend):
    x = np.array([1.0, 50.0, 1000.0])
    expected = 1 / (1 + np.exp(-x))  # the naive derivative exp(x) / (1 + exp(x)) is nan at 1000
    np.testing.assert_allclose(jk.jit(jk.grad(lambda x: np.sum(log1pexp(x))), backend=backend)(x), expected)
    _, t = jk.jvp(log1pexp, (x,), (np.full(3, 2.0),))
    np.testing.assert_allclose(t, 2 * expected)


def test_custom_jvp_higher_order_and_check_grads():
    x = np.array([-1.0, 0.5, 2.0])
    jk.check_grads(log1pexp, (x,), order=2)
    h = jk.grad(jk.grad(lambda x: log1pexp(x)))(0.5)
    np.testing.assert_allclose(h, np.exp(-0.5) / (1 + np.exp(-0.5)) ** 2)


def test_custom_jvp_vmap():
    x = np.array([1.0, 2.0, 100.0])
    np.testing.assert_allclose(jk.vmap(jk.grad(log1pexp))(x), 1 / (1 + np.exp(-x)))
    np.testing.assert_allclose(jk.grad(lambda x: np.sum(jk.vmap(log1pexp)(x)))(x), 1 / (1 + np.exp(-x)))


def test_custom_jvp_nondiff_argnums_and_pytrees():
    @jk.custom_jvp
    def scaled(power, p):
        return {"y": p["a"] ** power * p["b"]}

    scaled.nondiff_argnums = (0,)

    @scaled.defjvp
    def _scaled_jvp(power, primals, tangents):
        (p,), (t,) = primals, tangents
        out = scaled(power, p)
        return out, {"y": power * p["a"] ** (power - 1) * p["b"] * t["a"] + p["a"] ** power * t["b"]}

    p = {"a": np.array([1.5, 2.0]), "b": np.array([0.5, -1.0])}
    g = jk.grad(lambda p: np.sum(scaled(3, p)["y"]))(p)
    np.testing.assert_allclose(g["a"], 3 * p["a"] ** 2 * p["b"])
    np.testing.assert_allclose(g["b"], p["a"] ** 3)


def test_custom_jvp_defjvps():
    @jk.custom_jvp
    def f(x, y):
        return np.sin(x) * y

    f.defjvps(lambda x_dot, out, x, y: np.cos(x) * x_dot * y, lambda y_dot, out, x, y: np.sin(x) * y_dot)
    gx, gy = jk.grad(f, (0, 1))(1.0, 2.0)
    assert np.isclose(gx, np.cos(1.0) * 2) and np.isclose(gy, np.sin(1.0))


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_custom_vjp_rule_is_used(backend):
    g = jk.jit(jk.grad(lambda x: np.sum(5.0 * clip_gradient(x))), backend=backend)(np.array([1.0, -2.0]))
    np.testing.assert_allclose(g, [1.0, 1.0])
    gx, gy = jk.jit(jk.grad(sin_times, (0, 1)), backend=backend)(1.0, 2.0)
    assert np.isclose(gx, np.cos(1.0) * 2) and np.isclose(gy, np.sin(1.0))


def test_custom_vjp_second_order_and_check_grads():
    np.testing.assert_allclose(jk.grad(jk.grad(sin_times))(1.0, 2.0), -np.sin(1.0) * 2)
    jk.check_grads(sin_times, (np.array([0.3, 1.0]), np.array([2.0, -1.0])), order=2, modes=("rev",))


def test_custom_vjp_vmap_sums_unbatched_cotangents():
    xs, y = np.array([0.1, 0.5, 1.0]), 2.0
    per_example = jk.vmap(jk.grad(sin_times, (0, 1)), in_axes=(0, None))(xs, y)
    np.testing.assert_allclose(per_example[0], np.cos(xs) * y)
    np.testing.assert_allclose(per_example[1], np.sin(xs))
    gy = jk.grad(lambda y: np.sum(jk.vmap(sin_times, in_axes=(0, None))(xs, y)))(y)
    np.testing.assert_allclose(gy, np.sum(np.sin(xs)))


def test_custom_vjp_nondiff_argnums():
    def fwd(scale, x):
        return x * scale, None

    def bwd(scale, res, g):
        return (g * scale * 10,)  # deliberately not the true derivative: proves the rule is used

    f = jk.custom_vjp(lambda scale, x: x * scale, nondiff_argnums=(0,))
    f.defvjp(fwd, bwd)
    assert float(jk.grad(lambda x: f(2.0, x))(1.0)) == 20.0


def test_custom_vjp_forward_mode_is_jax_error():
    with pytest.raises(jk.GradientError, match=r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp function\."):
        jk.jvp(clip_gradient, (1.0,), (1.0,))


def test_bwd_rule_errors():
    f = jk.custom_vjp(lambda x, y: x * y)
    f.defvjp(lambda x, y: (x * y, None), lambda res, g: (g,))
    with pytest.raises(jk.CustomDerivativeError, match="tuple of length equal to the number of arguments"):
        jk.grad(f)(1.0, 2.0)
    h = jk.custom_vjp(lambda x: x * 2)
    h.defvjp(lambda x: (x * 2, None), lambda res, g: (np.ones(3),))
    with pytest.raises(jk.CustomDerivativeError, match="shape"):
        jk.grad(h)(1.0)


def test_jvp_rule_structure_error():
    f = jk.custom_jvp(lambda x: (x, x))
    f.defjvp(lambda p, t: ((p[0], p[0]), t[0]))
    with pytest.raises(jk.CustomDerivativeError, match="equal container"):
        jk.jvp(f, (1.0,), (1.0,))


def test_closed_over_differentiated_value_raises():
    def loss(w):
        f = jk.custom_jvp(lambda x: x * w)
        f.defjvp(lambda p, t: (p[0] * w, t[0] * w))
        return f(2.0)
    with pytest.raises(jk.CustomDerivativeError, match="closes over a value that is being differentiated"):
        jk.grad(loss)(3.0)
    with pytest.raises(jk.CustomDerivativeError, match="closes over a value that is being differentiated"):
        jk.jvp(loss, (3.0,), (1.0,))


def test_inlined_before_the_passes():
    prog = jk.make_ir(jk.grad(lambda x: np.sum(log1pexp(x) + clip_gradient(x))))(np.ones(3))
    assert any(e.prim == "custom_jvp_call" for e in prog.eqns)
    assert not any(e.prim in ("custom_jvp_call", "custom_vjp_call") for e in optimize(prog).eqns)
    inner = jk.make_ir(lambda x: jk.lax.fori_loop(0, 2, lambda i, c: log1pexp(c), x))(np.ones(2))
    text = str(optimize(inner))
    assert "custom_jvp_call" not in text and "log1p" in text
    np.testing.assert_allclose(jk.jit(lambda x: jk.lax.fori_loop(0, 2, lambda i, c: log1pexp(c), x))(np.ones(2)),
                               log1pexp(log1pexp(np.ones(2))))


def _closing_rule(w):
    @jk.custom_jvp
    def f(x):
        return np.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), tangents[0] * np.cos(primals[0]) * w  # w: a closure, not an argument
    return f


def test_a_rule_closing_over_a_value_of_a_finished_trace_is_refused_by_name():
    # grad(inner) differentiates inner's program after inner's trace closed: `w` there is a value
    # of that trace; using it would read an undefined variable (or lose its derivative)
    with pytest.raises(jk.CustomDerivativeError, match="rule 'f_jvp' reads the traced value 'w'"):
        jk.grad(lambda x, w: _closing_rule(w)(x))(0.3, 2.0)


def test_a_rule_closing_over_a_value_of_an_enclosing_trace_works():
    @jk.jit
    def outer(x, w):
        return jk.grad(_closing_rule(w))(x)
    assert float(outer(0.3, 2.0)) == pytest.approx(2 * np.cos(0.3))
    assert float(jk.grad(_closing_rule(2.0))(0.3)) == pytest.approx(2 * np.cos(0.3))  # a concrete closure
