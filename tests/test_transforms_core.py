"""The transformation core (jitkernel/transforms/core.py, ad.py, batching.py): API behaviour,
pytrees, composition with jit, names, errors. Only primitives with seed rules are used here
(add, subtract, negative, multiply, sin, convert, broadcast_in_dim, reduce_sum, reshape,
transpose); the rule tables are tested per primitive in their own files."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from jitkernel.transforms import ad

X = np.linspace(0.1, 1.0, 5)


def test_grad_matches_the_analytic_derivative():
    g = jk.grad(lambda x: np.sum(np.sin(x) * x))(X)
    np.testing.assert_allclose(g, np.cos(X) * X + np.sin(X), rtol=1e-13)
    assert g.dtype == np.float64 and g.shape == X.shape


def test_float32_gradients_stay_float32():
    g = jk.grad(lambda x: np.sum(x * x))(X.astype(np.float32))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * X.astype(np.float32), rtol=1e-6)


def test_value_and_grad_has_aux_and_argnums():
    def loss(w, x):
        y = w * x
        return np.sum(y * y), {"y": y}
    (v, aux), (gw, gx) = jk.value_and_grad(loss, argnums=(0, 1), has_aux=True)(X, 2.0)
    assert float(v) == pytest.approx(float(np.sum((2 * X) ** 2)))
    np.testing.assert_allclose(aux["y"], 2 * X)
    np.testing.assert_allclose(gw, 2 * (X * 2.0) * 2.0)
    assert float(gx) == pytest.approx(float(np.sum(2 * X * 2.0 * X)))


def test_gradients_of_pytree_arguments_have_the_arguments_structure():
    def loss(params, x):
        return np.sum(np.sin(x * params["w"]) * params["b"][0])
    params = {"w": np.ones(5), "b": [np.float64(2.0)]}
    g = jk.grad(loss)(params, X)
    assert set(g) == {"w", "b"} and isinstance(g["b"], list)
    np.testing.assert_allclose(g["w"], np.cos(X) * X * 2.0)
    assert float(g["b"][0]) == pytest.approx(float(np.sum(np.sin(X))))


def test_eager_call_is_jit_of_the_transformed_function():
    def loss(x):
        return np.sum(x * x * x)
    g = jk.grad(loss)
    eager = g(X)
    assert g.__name__ == "grad(loss)" and g._jitted.__name__ == "grad(loss)"
    np.testing.assert_array_equal(jk.jit(g)(X), eager)
    program = jk.make_ir(g)(X)
    assert program.name == "grad(loss)"
    assert all(e.prim not in ("cond", "scan") for e in program.eqns)  # one flat program


def test_grad_inside_jit_reads_traced_closures():
    @jk.jit
    def f(x):
        return jk.grad(lambda y: np.sum(y * y * x))(x)
    np.testing.assert_allclose(f(X), 2 * X * X)


def test_nested_grad_does_not_confuse_perturbations():
    # d/dx [x * d/dy (x * y)] = d/dx [x * x] = 2x (the classic perturbation-confusion test)
    assert float(jk.grad(lambda x: x * jk.grad(lambda y: x * y)(1.0))(3.0)) == 6.0
    assert float(jk.grad(jk.grad(lambda x: x * x * x))(0.5)) == pytest.approx(3.0)


def test_symbolic_zeros_keep_infinities_out_of_unrelated_gradients():
    # y = inf is not differentiated: no `0 * inf` term may turn the gradient into NaN
    g = jk.grad(lambda x, y: x + y * y)(1.0, np.inf)
    assert float(g) == 1.0
    _, t = jk.jvp(lambda x, y: x * 2.0 + y * y, (1.0, np.inf), (1.0, 0.0))
    assert np.isnan(t)  # an explicit zero tangent is a value: 0 * inf, as JAX gives
    _, t = jk.jvp(lambda x: x * 2.0 + np.inf * np.inf, (1.0,), (1.0,))
    assert float(t) == 2.0


def test_stop_gradient():
    assert float(jk.grad(lambda x: x * jk.stop_gradient(x))(3.0)) == 3.0
    np.testing.assert_array_equal(jk.stop_gradient(X), X)
    lowered = jk.jit(lambda x: jk.stop_gradient(x) * 2.0).lower(X)
    assert "stop_gradient" in lowered.as_text("ir") and "stop_gradient" not in lowered.as_text("optimized")


def test_the_callers_array_is_not_written_under_grad():
    def f(x):
        x *= 2.0
        return np.sum(x)
    a = X.copy()
    with pytest.warns(jk.ArgumentNotWrittenWarning, match=r"grad\(f\): the function writes input 0 \(f64\[5\]\) in place"):
        np.testing.assert_array_equal(jk.grad(f)(a), np.full(5, 2.0))
    np.testing.assert_array_equal(a, X)
    with pytest.warns(jk.ArgumentNotWrittenWarning):
        np.testing.assert_array_equal(jk.vmap(f)(np.ones((2, 3))), np.full(2, 6.0))


def test_jvp_and_vjp_with_pytrees():
    def f(p):
        return {"s": p[0] * p[1], "d": p[0] - p[1]}
    primal, tangent = jk.jvp(f, ((X, 2.0),), ((np.ones(5), 0.5),))
    np.testing.assert_allclose(primal["s"], 2 * X)
    np.testing.assert_allclose(tangent["s"], 2.0 + 0.5 * X)
    np.testing.assert_allclose(tangent["d"], np.full(5, 0.5))
    out, pull = jk.vjp(f, (X, 2.0))
    (ct,) = pull({"s": np.ones(5), "d": np.ones(5)})
    np.testing.assert_allclose(ct[0], np.full(5, 3.0))
    assert float(ct[1]) == pytest.approx(float(np.sum(X)) - 5)


def test_jacobians_and_hessian():
    def f(x, y):
        return x * x * y
    jr = jk.jacrev(f, argnums=(0, 1))(X[:3], 2.0)
    jf = jk.jacfwd(f, argnums=(0, 1))(X[:3], 2.0)
    for j in (jr, jf):
        np.testing.assert_allclose(j[0], np.diag(2 * X[:3] * 2.0))
        np.testing.assert_allclose(j[1], X[:3] ** 2)
    h = jk.hessian(lambda x: np.sum(x * x * x))(X[:3])
    np.testing.assert_allclose(h, np.diag(6 * X[:3]))
    m = np.arange(6.0).reshape(2, 3)
    jm = jk.jacrev(lambda a: a * a)(m)
    assert jm.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(jm.reshape(6, 6), np.diag(2 * m.reshape(-1)))


@pytest.mark.parametrize("bad", ["shape", "dtype"])
def test_a_rule_of_the_wrong_type_is_an_internal_error_not_a_cast(bad, monkeypatch):
    from jitkernel.transforms import ops

    def broken(cts, primals, outs):
        ct = cts[0]
        return [ops.convert(ct, np.float32) if bad == "dtype" else ops.reduce_sum(ct, (0,))]
    monkeypatch.setitem(ad.VJP_RULES, "sin", broken)
    with pytest.raises(AssertionError, match="the vjp rule of sin returned"):
        jk.grad(lambda x: np.sum(np.sin(x)))(X)


def test_jax_error_messages():
    with pytest.raises(jk.GradientError, match=r"Gradient only defined for scalar-output functions. Output had shape: \(5,\)"):
        jk.grad(lambda x: x * 2.0)(X)
    with pytest.raises(jk.GradientError, match=r"grad requires real- or complex-valued inputs .* but got int64.*test_transforms_core"):
        jk.grad(lambda x: x * 2.0)(np.arange(3))
    with pytest.raises(jk.GradientError, match="requires real-valued outputs .* but got complex128"):
        jk.grad(lambda x: np.sum(x * (1 + 1j)))(X)
    with pytest.raises(TypeError, match="primal and tangent arguments to jk.jvp must have equal types"):
        jk.jvp(lambda x: x, (X,), (X.astype(np.float32),))


# ----------------------------------------------------------------------------- vmap


def test_vmap_axes_and_pytrees():
    m = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(jk.vmap(lambda r: np.sum(r * r))(m), np.sum(m * m, axis=1))
    np.testing.assert_allclose(jk.vmap(lambda c: c * 2.0, in_axes=1, out_axes=1)(m), m * 2)
    np.testing.assert_allclose(jk.vmap(lambda c: c * 2.0, in_axes=-1, out_axes=0)(m), (m * 2).T)
    out = jk.vmap(lambda d, s: {"p": d["a"] * s, "q": d["b"]}, in_axes=({"a": 0, "b": None}, None))(
        {"a": m, "b": np.ones(2)}, 3.0)
    np.testing.assert_allclose(out["p"], m * 3)
    np.testing.assert_allclose(out["q"], np.ones((3, 2)))  # unbatched output broadcast
    nested = jk.vmap(jk.vmap(lambda a: a * a))(m)
    np.testing.assert_allclose(nested, m * m)
    np.testing.assert_allclose(jk.vmap(lambda s: s * 2.0, in_axes=None, axis_size=3)(1.5), np.full(3, 3.0))


def test_vmap_errors_are_jaxs():
    with pytest.raises(jk.BatchingError, match="vmap got inconsistent sizes for array axes to be mapped"):
        jk.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
    with pytest.raises(jk.BatchingError, match="vmap has mapped output but out_axes is None"):
        jk.vmap(lambda a: a * 2.0, out_axes=None)(np.ones(3))
    with pytest.raises(jk.BatchingError, match="must have at least one non-None value in in_axes"):
        jk.vmap(lambda a: a, in_axes=None)(np.ones(3))


def test_composition_of_jit_vmap_and_grad_is_one_program():
    def loss(w, x, y):
        d = np.sum(w * x) - y
        return d * d
    per_example = jk.jit(jk.vmap(jk.grad(loss), in_axes=(None, 0, 0)))
    w, xs, ys = np.ones(3), np.arange(12.0).reshape(4, 3), np.arange(4.0)
    expected = np.stack([2 * (np.sum(w * xs[i]) - ys[i]) * xs[i] for i in range(4)])
    np.testing.assert_allclose(per_example(w, xs, ys), expected)
    g_of_v = jk.grad(lambda w: np.sum(jk.vmap(loss, in_axes=(None, 0, 0))(w, xs, ys)))(w)
    np.testing.assert_allclose(g_of_v, expected.sum(axis=0))


def test_the_same_transformation_of_the_same_function_is_compiled_once():
    def loss(x):
        return np.sum(x * x)
    assert jk.grad(loss) is jk.grad(loss) and jk.grad(loss) is not jk.grad(loss, has_aux=False, argnums=(0,))
    assert jk.vmap(loss) is jk.vmap(loss) and jk.vmap(loss, in_axes=1) is not jk.vmap(loss)
    for k in range(3):  # a training loop calling jk.grad(loss) every iteration
        jk.grad(loss)(X + k)
    assert jk.grad(loss)._jitted.cache_size() == 1
    for n in (1, 2):  # vjp with a different number of primals must not reuse the other's program
        primals = (X,) * n
        out, pull = jk.vjp(lambda *xs: sum(xs[1:], xs[0]) * 2.0, *primals)
        assert len(pull(np.ones(5))) == n
    f = lambda a, b: a * b  # noqa: E731
    assert len(jk.vjp(f, X, X)[1](np.ones(5))) == 2
    np.testing.assert_allclose(jk.vjp(f, X, 2.0)[1](np.ones(5))[1], np.sum(X))


def test_namedtuple_results_under_vjp_jacobians_and_check_grads():
    m = np.array([[4.0, 1.0], [1.0, 3.0]])
    out, pull = jk.vjp(np.linalg.slogdet, m)
    assert type(out).__name__ == "SlogdetResult"
    (g,) = pull(out)  # the result passed back as its own cotangent (a namedtuple)
    np.testing.assert_allclose(g, out.logabsdet * np.linalg.inv(m).T)
    jac = jk.jacrev(np.linalg.slogdet)(m)
    assert type(jac).__name__ == "SlogdetResult"
    np.testing.assert_allclose(jac.logabsdet, np.linalg.inv(m).T)
    jk.check_grads(np.linalg.slogdet, (m,), order=1)
