"""Control flow, gather/scatter and dynamic sizes on a real GPU (backend="cuda" through
PyCUDA), at sizes the emulator cannot run: host-driven loops over device buffers, scatter-add
bit for bit against NumPy, a new size without an nvcc run. Skipped, with the reason, wherever
PyCUDA, the driver or a device is missing (run by the GPU check on the GPU machine)."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import events, lax
from jitkernel.backends.cuda import missing_for_cuda

MISSING = missing_for_cuda()
pytestmark = pytest.mark.skipif(bool(MISSING), reason="; ".join(MISSING) or "a CUDA GPU is present")

RNG = np.random.default_rng(0)


def test_fori_while_and_cond_on_device_buffers() -> None:
    x = RNG.standard_normal(1 << 20).astype(np.float32)
    f = jk.jit(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * np.float32(0.5) + np.sin(c), x), backend="cuda")
    c = x.copy()
    for _ in range(7):
        c = c * np.float32(0.5) + np.sin(c)
    np.testing.assert_allclose(np.asarray(f(x, 7)), c, rtol=1e-5, atol=1e-6)
    w = jk.jit(lambda v: lax.while_loop(lambda c: np.abs(c).sum() < 1e9, lambda c: c * 2, v), backend="cuda")
    want = x.astype(np.float64)
    while np.abs(want).sum() < 1e9:
        want = want * 2
    np.testing.assert_allclose(np.asarray(w(x)), want.astype(np.float32), rtol=1e-6)
    k = jk.jit(lambda v: lax.cond(v.sum() > 0, lambda u: u + 1, lambda u: u - 1, v), backend="cuda")
    np.testing.assert_allclose(np.asarray(k(x)), x + 1 if x.sum() > 0 else x - 1)


def test_gather_and_scatter_add_bit_for_bit() -> None:
    x = RNG.standard_normal((4096, 256)).astype(np.float32)
    idx = RNG.integers(-4096, 4096, 10000)
    v = RNG.standard_normal((10000, 256)).astype(np.float32)

    def f(x, i, v):
        y = x * 1
        np.add.at(y, i, v)
        return y, x[i].sum(axis=1)

    got = jk.jit(f, backend="cuda")(x, idx, v)
    want = f(x.copy(), idx, v)
    assert np.asarray(got[0]).tobytes() == want[0].tobytes()
    np.testing.assert_allclose(np.asarray(got[1]), want[1], rtol=1e-4, atol=1e-4)
    with pytest.raises(IndexError, match="index 4096 is out of bounds for axis 0 with size 4096"):
        jk.jit(f, backend="cuda")(x, np.array([0, 4096]), v[:2])


def test_a_new_size_runs_without_nvcc() -> None:
    f = jk.jit(lambda a: np.exp(a - a.max(axis=1, keepdims=True)).sum(axis=1), backend="cuda")
    for n in (1000, 2000):
        f(np.ones((64, n), np.float32))
    seen: list = []
    unsubscribe = events.subscribe(seen.append)
    try:
        out = np.asarray(f(np.ones((64, 3000), np.float32)))
    finally:
        unsubscribe()
    assert not [e for e in seen if isinstance(e, events.CompileEvent)]
    np.testing.assert_allclose(out, 3000.0, rtol=1e-5)
