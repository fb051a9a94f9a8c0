"""passes/dot_operands.py: transposed dot_general operands fold into the dimension numbers, and
products with nothing to sum become fused multiplies, without changing a value (NumPy's matmul,
bit for bit, signed zeros, infinities and NaNs included)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel.passes import dot_operands, optimize
from helpers import HOST_BACKENDS

# NumPy warns about the inf * 0 products of the special values; so may jitkernel's interpreter.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered")


def prims(fun, *args) -> list[str]:
    return [e.prim for e in optimize(jk.make_ir(fun)(*args)).eqns]


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal values with equal signs of zero, NaN where NumPy has NaN."""
    got, want = np.asarray(got), np.asarray(want)
    return (got.shape == want.shape and got.dtype == want.dtype
            and np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want)))


def special_values(rng, shape, dtype):
    """Normal values with zeros of both signs, infinities and a NaN mixed in."""
    x = rng.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    picks = rng.integers(0, flat.size, size=min(flat.size, 6))
    for k, v in zip(picks, [0.0, -0.0, np.inf, -np.inf, np.nan, -0.0]):
        flat[k] = v
    return x


# ----------------------------------------------------------------------------- transposes


def test_transposed_lhs_folds_and_matches_numpy_bitwise():
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((64, 48)), rng.standard_normal((64, 32))
    f = lambda x, g: x.T @ g  # noqa: E731 - the reverse rule's weight gradient
    assert prims(f, x, g) == ["dot_general"]
    assert same_bits(jk.jit(f)(x, g), x.T @ g)


def test_transposed_rhs_folds_and_matches_numpy_bitwise():
    rng = np.random.default_rng(1)
    g, w = rng.standard_normal((16, 40)).astype(np.float32), rng.standard_normal((24, 40)).astype(np.float32)
    f = lambda g, w: g @ w.T  # noqa: E731 - the reverse rule's input gradient
    assert prims(f, g, w) == ["dot_general"]
    assert same_bits(jk.jit(f)(g, w), g @ w.T)


def test_transpose_that_reorders_free_dims_is_kept():
    """Folding would change the result's layout: the transpose stays, the value is NumPy's."""
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((5, 3, 4)), rng.standard_normal((5, 6))
    f = lambda x, y: np.tensordot(np.transpose(x, (0, 2, 1)), y, axes=([0], [0]))  # noqa: E731
    assert "transpose" in prims(f, x, y)
    np.testing.assert_allclose(jk.jit(f)(x, y), np.tensordot(np.transpose(x, (0, 2, 1)), y, axes=([0], [0])),
                               rtol=1e-12)


def test_transpose_with_other_readers_still_folds():
    rng = np.random.default_rng(3)
    x, g = rng.standard_normal((8, 5)), rng.standard_normal((8, 7))
    f = lambda x, g: (x.T @ g, x.T + 1)  # noqa: E731
    eqns = optimize(jk.make_ir(f)(x, g)).eqns
    dot = next(e for e in eqns if e.prim == "dot_general")
    assert all(e.prim != "transpose" for e in eqns if dot.inputs[0] in e.outputs)
    got = jk.jit(f)(x, g)
    assert same_bits(got[0], x.T @ g) and same_bits(got[1], x.T + 1)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6), st.integers(1, 4), st.booleans(), st.booleans(),
       st.sampled_from([np.float32, np.float64]))
def test_batched_transposed_operands_hypothesis(m, k, n, b, t_lhs, t_rhs, dtype):
    rng = np.random.default_rng(m * 1000 + k * 100 + n * 10 + b)
    x = rng.standard_normal((b, k, m) if t_lhs else (b, m, k)).astype(dtype)
    y = rng.standard_normal((b, n, k) if t_rhs else (b, k, n)).astype(dtype)

    def f(x, y):
        return (np.swapaxes(x, 1, 2) if t_lhs else x) @ (np.swapaxes(y, 1, 2) if t_rhs else y)
    want = f(x, y)
    got = jk.jit(f, backend="interpret")(x, y)
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
    assert "transpose" not in prims(f, x, y)


# ----------------------------------------------------------------------------- outer products


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batched_outer_product_is_a_multiply_with_matmuls_zero_signs(backend, dtype):
    rng = np.random.default_rng(4)
    a, b = special_values(rng, (3, 7, 1), dtype), special_values(rng, (3, 1, 5), dtype)
    f = lambda a, b: a @ b  # noqa: E731 - k = 1
    assert "dot_general" not in prims(f, a, b)
    want = np.matmul(a, b)
    assert np.signbit(want[want == 0]).sum() == 0  # matmul sums from +0.0: never -0.0
    assert same_bits(jk.jit(f, backend=backend)(a, b), want)


def test_unit_contraction_in_a_middle_dimension():
    rng = np.random.default_rng(5)
    x, y = special_values(rng, (4, 1, 3), np.float64), special_values(rng, (1, 6), np.float64)
    f = lambda x, y: np.tensordot(x, y, axes=([1], [0]))  # noqa: E731 - (4, 3, 6), contracting a size-1 dim
    assert "dot_general" not in prims(f, x, y)
    assert same_bits(jk.jit(f)(x, y), np.tensordot(x, y, axes=([1], [0])))


def test_integer_outer_product_stays_a_dot_general():
    a, b = np.arange(6).reshape(2, 3, 1), np.arange(8).reshape(2, 1, 4)
    f = lambda a, b: a @ b  # noqa: E731
    assert "dot_general" in prims(f, a, b)
    assert np.array_equal(jk.jit(f)(a, b), a @ b)


def test_real_contraction_is_left_alone():
    x, y = np.ones((3, 2)), np.ones((2, 4))
    program = jk.make_ir(lambda x, y: x @ y)(x, y)
    assert dot_operands(program) is program or [e.prim for e in dot_operands(program).eqns] == ["dot_general"]


def test_per_example_gradient_program_has_no_unit_gemm():
    """vmap of a dense layer's gradient: every weight gradient is an outer product per example,
    which the pass turns into a fused multiply."""
    w = np.ones((4, 3), np.float32) / 4
    x, t = np.ones((5, 4), np.float32), np.ones((5, 3), np.float32)

    def f(w, x, t):
        return ((x @ w - t) ** 2).sum()
    g = jk.vmap(jk.grad(f), in_axes=(None, 0, 0))
    try:
        program = optimize(jk.make_ir(g)(w, x, t))
    except jk.UnsupportedOperationError as e:  # the dot_general rules live on other branches
        pytest.skip(str(e))
    for e in program.eqns:
        if e.prim == "dot_general":
            (lc, _), _ = e.params["contracting"], e.params["batch"]
            assert any(e.inputs[0].aval.shape[d] != 1 for d in lc), e
    want = np.stack([2 * np.outer(x[i], x[i] @ w - t[i]) for i in range(5)])
    np.testing.assert_allclose(jk.jit(g)(w, x, t), want, rtol=1e-6)


def test_per_example_gradients_with_changing_batch_sizes():
    """New batch sizes run on the shape-generic kernels (a dynamic leading dimension) of the
    rewritten outer products and stay right."""
    from benchmarks import transforms_model as M
    f = jk.jit(jk.vmap(jk.grad(M.loss), in_axes=(None, 0, 0)))
    for batch in (8, 6, 5):
        params, x, y = M.make_inputs(batch, batch=batch, sizes=(7, 5, 4, 3))
        for got, want in zip(f(params, x, y), M.numpy_per_example_grads(params, x, y)):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert any("dynamic" in reason for r in f.recompilations() for reason in r.reasons)
