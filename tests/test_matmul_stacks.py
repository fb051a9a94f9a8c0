"""A stack of matrices times one matrix (`A(r, q, m, k) @ C(k, n)`): one product whose rows are
the stack's, never the matrix broadcast to every batch (NPBench's doitgen materialised 472 MB
and ran 8x slower than NumPy that way). Values and dtypes are NumPy's."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk

from helpers import HOST_BACKENDS


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(1, 5), st.integers(1, 5), st.integers(1, 5),
       st.sampled_from(["float64", "float32", "int64", "complex128", "bool"]), st.integers(0, 2**31 - 1))
def test_stack_times_matrix_matches_numpy(backend, batch, m, k, n, dtype, seed):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(tuple(batch) + (m, k)) * 4).astype(dtype)
    c = (rng.standard_normal((k, n)) * 4).astype(dtype)
    got, want = jk.jit(lambda a, c: a @ c, backend=backend)(a, c), a @ c
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)


def test_the_matrix_is_not_broadcast_per_batch():
    a, c = np.ones((6, 5, 1, 8)), np.ones((8, 8))
    text = jk.jit(lambda a, c: a @ c).lower(a, c).as_text("optimized")
    assert "broadcast_in_dim" not in text and "dot_general" in text


def test_grad_and_vmap_of_a_stack_times_a_matrix():
    rng = np.random.default_rng(0)
    a, c = rng.standard_normal((3, 2, 4)), rng.standard_normal((4, 5))
    ga, gc = jk.grad(lambda a, c: np.sum(np.sin(a @ c)), argnums=(0, 1))(a, c)
    g = np.cos(a @ c)
    np.testing.assert_allclose(ga, g @ c.T, rtol=1e-12)
    np.testing.assert_allclose(gc, np.einsum("bmk,bmn->kn", a, g), rtol=1e-12)
    np.testing.assert_allclose(jk.vmap(lambda a: a @ c)(a), a @ c, rtol=1e-12)
