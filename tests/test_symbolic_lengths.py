"""Slices whose length depends on a loop index (`a[i, :i]`, `x[i:]`, ...) inside traced loops,
compared with NumPy running the same Python function (docs/architecture.md, "Symbolic
dimensions"). n = 300 forces a real loop (no unrolling)."""
import numpy as np
import pytest

import jitkernel as jk

BACKENDS = ["interpret", "cpu"]


def trisolve(L, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def _lower(n, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return (np.tril(rng.standard_normal((n, n))) + n * np.eye(n)).astype(dtype), rng.standard_normal(n).astype(dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [1, 2, 7, 300])
def test_triangular_solve(backend, n):
    L, b = _lower(n)
    np.testing.assert_allclose(jk.jit(trisolve, backend=backend)(L, b), trisolve(L, b), rtol=1e-12, atol=1e-14)
