"""Accumulations, np.take and the warm DeviceArray call path on a real GPU (backend="cuda"), at
sizes the emulator cannot run. Skipped, with the reason, wherever PyCUDA, the driver or a device
is missing (run by the GPU check on the GPU machine)."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from jitkernel.backends.cuda import missing_for_cuda

MISSING = missing_for_cuda()
pytestmark = pytest.mark.skipif(bool(MISSING), reason="; ".join(MISSING) or "a CUDA GPU is present")

RNG = np.random.default_rng(0)


def test_integer_cumsum_of_a_long_line_is_numpy_bit_for_bit() -> None:
    """The chunks form (three launches) over 1e7 int32 values accumulating in int64."""
    x = RNG.integers(-1000, 1000, 10_000_000).astype(np.int32)
    got = jk.jit(np.cumsum, backend="cuda")(x)
    np.testing.assert_array_equal(np.asarray(got), np.cumsum(x))


def test_float_cumsum_down_columns_is_numpy_bit_for_bit() -> None:
    """The lines form: one thread per column, NumPy's order, coalesced across columns."""
    x = RNG.standard_normal((2000, 8192)).astype(np.float32)
    got = jk.jit(lambda a: np.cumsum(a, axis=0), backend="cuda")(x)
    assert np.asarray(got).tobytes() == np.cumsum(x, axis=0).tobytes()


def test_running_maximum_with_nan() -> None:
    x = RNG.standard_normal(3_000_000)
    x[RNG.integers(0, x.size, 5)] = np.nan
    got = jk.jit(np.maximum.accumulate, backend="cuda")(x)
    np.testing.assert_array_equal(np.asarray(got), np.maximum.accumulate(x))


def test_take_modes_and_the_index_error() -> None:
    a = RNG.standard_normal((4096, 512)).astype(np.float32)
    idx = RNG.integers(-8192, 8192, 100_000)
    for mode in ("wrap", "clip"):
        got = jk.jit(lambda a, i: np.take(a, i, axis=0, mode=mode), backend="cuda")(a, idx)
        np.testing.assert_array_equal(np.asarray(got), np.take(a, idx, axis=0, mode=mode))
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 4096"):
        np.asarray(jk.jit(lambda a, i: np.take(a, i, axis=0), backend="cuda")(a, idx))


def test_warm_device_array_calls_chain_on_the_device() -> None:
    """1,000 warm calls through the fast path, each on the previous call's DeviceArray."""
    gpu = jk.devices("gpu")[0]
    f = jk.jit(lambda x, y: x * np.float32(0.5) + y, backend="cuda")
    y = jk.device_put(np.ones(1 << 16, np.float32), gpu)
    x = jk.device_put(np.zeros(1 << 16, np.float32), gpu)
    want = np.zeros(1 << 16, np.float32)
    for _ in range(1000):
        x = f(x, y)
        want = want * np.float32(0.5) + np.float32(1)
    np.testing.assert_array_equal(np.asarray(x), want)
