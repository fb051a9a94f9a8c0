"""The tiled matmul kernel (backends/cuda/render_matmul.py) on a real GPU through PyCUDA, at
sizes the emulator cannot run: both tile shapes, edges, batches, transposed operands, every
accumulator rule, and bitwise determinism across calls. Skipped, with the reason, wherever
PyCUDA, the driver or a device is missing (run by the GPU check)."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from jitkernel.backends.cuda import missing_for_cuda

MISSING = missing_for_cuda()
pytestmark = pytest.mark.skipif(bool(MISSING), reason="; ".join(MISSING) or "a CUDA GPU is present")
RNG = np.random.default_rng(5)


def cuda(fn):
    return jk.jit(fn, backend="cuda")


@pytest.mark.parametrize("m, k, n", [(1024, 1024, 1024), (1000, 777, 1030), (33, 4097, 65)])
def test_float32_matmul_matches_numpy(m: int, k: int, n: int) -> None:
    x = RNG.standard_normal((m, k)).astype(np.float32)
    y = RNG.standard_normal((k, n)).astype(np.float32)
    got = np.asarray(cuda(lambda a, b: a @ b)(x, y))
    exact = x.astype(np.float64) @ y.astype(np.float64)
    # float32 products summed over k: error grows like sqrt(k) ulps of the row norms
    bound = 1e-6 * np.sqrt(k) * np.abs(x).max() * np.abs(y).max() * 8
    assert got.dtype == np.float32 and np.abs(got - exact).max() < bound


def test_float64_batched_transposed_and_epilogue() -> None:
    x = RNG.standard_normal((4, 300, 257))
    y = RNG.standard_normal((4, 300, 129))

    def f(a, b):
        return np.tanh(np.swapaxes(a, 1, 2) @ b + 1.0).sum(axis=-1)

    np.testing.assert_allclose(np.asarray(cuda(f)(x, y)), f(x, y), rtol=1e-10, atol=1e-10)


def test_integer_matmul_wraps_around_as_numpy() -> None:
    x = RNG.integers(-2**31, 2**31, (130, 70), dtype=np.int64).astype(np.int32)
    y = RNG.integers(-2**31, 2**31, (70, 90), dtype=np.int64).astype(np.int32)
    np.testing.assert_array_equal(np.asarray(cuda(lambda a, b: a @ b)(x, y)), x @ y)


def test_float16_accumulates_in_float32() -> None:
    x = RNG.standard_normal((256, 512)).astype(np.float16)
    y = RNG.standard_normal((512, 128)).astype(np.float16)
    got = np.asarray(cuda(lambda a, b: a @ b)(x, y))
    exact = (x.astype(np.float64) @ y.astype(np.float64)).astype(np.float16)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), exact.astype(np.float64), rtol=2e-3, atol=2e-2)


def test_same_input_same_bits() -> None:
    x = RNG.standard_normal((2048, 2048)).astype(np.float32)
    f = cuda(lambda a: a @ a.T)
    first = np.asarray(f(x)).tobytes()
    assert all(np.asarray(f(x)).tobytes() == first for _ in range(3))
