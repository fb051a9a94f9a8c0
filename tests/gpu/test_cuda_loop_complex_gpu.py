"""On a real GPU through PyCUDA: library steps inside loop bodies (an RNN-style fori_loop of a
matmul tile step and a kernel) and complex DeviceArrays in and out of backend="cuda" (float
(..., 2) views of the same pooled allocation: PyCudaDevice.view). Skipped, with the reason,
wherever PyCUDA, the driver or a device is missing (run by scripts/gpu_check.py)."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import lax
from jitkernel.backends.cuda import missing_for_cuda

MISSING = missing_for_cuda()
pytestmark = pytest.mark.skipif(bool(MISSING), reason="; ".join(MISSING) or "a CUDA GPU is present")

RNG = np.random.default_rng(5)


@pytest.fixture(scope="module")
def gpu():
    return jk.devices("gpu")[0]


def test_rnn_loop_with_a_matmul_body(gpu) -> None:
    w = (RNG.standard_normal((64, 64)) * 0.1).astype(np.float32)
    h0 = RNG.standard_normal((32, 64)).astype(np.float32)
    f = jk.jit(lambda h0, w, n: lax.fori_loop(0, n, lambda i, h: np.tanh(h @ w), h0), backend="cuda")
    for n in (0, 5, 6):
        got = f(jk.device_put(h0, gpu), jk.device_put(w, gpu), np.int64(n))
        h = h0.copy()
        for _ in range(n):
            h = np.tanh(h @ w)
        assert isinstance(got, jk.DeviceArray)
        np.testing.assert_allclose(np.asarray(got), h, rtol=1e-4, atol=1e-5)


def test_complex_device_arrays_in_and_out(gpu) -> None:
    z = (RNG.standard_normal((40, 30)) + 1j * RNG.standard_normal((40, 30))).astype(np.complex64)
    f = jk.jit(lambda z: (z * (2 - 1j) + np.conj(z), (z @ z.T).sum(), np.exp(z * 0.1)), backend="cuda")
    d = jk.device_put(z, gpu)
    a, s, e = f(d)
    assert a.dtype == np.complex64 and a.shape == z.shape and s.shape == () and e.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(a), z * (2 - 1j) + np.conj(z), rtol=1e-5)
    np.testing.assert_allclose(complex(np.asarray(s)), (z @ z.T).sum(), rtol=1e-3)
    np.testing.assert_allclose(np.asarray(e), np.exp(z * 0.1), rtol=1e-5)
    again = f(a)[0]  # a complex result fed back: read in place
    np.testing.assert_allclose(np.asarray(again), np.asarray(a) * (2 - 1j) + np.conj(np.asarray(a)), rtol=1e-5)
