"""Device arrays of backend="tpu": results stay on the device as jk.DeviceArray, arguments already
there are not transferred, written arguments take the call's buffer, NumPy results on `np.asarray`.
Run on the real chip where there is one, else on an emulated TPU (JAX's CPU device behind the
same device-array path: `emulate_tpu`)."""
from __future__ import annotations

import contextlib
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jitkernel as jk  # noqa: E402
from tpu_suite import have_jax  # noqa: E402

pytestmark = pytest.mark.skipif(not have_jax(), reason="JAX is not installed (the test extra brings it)")


@pytest.fixture
def tpu():
    from jitkernel.backends.tpu.device_array import emulate_tpu, tpu_devices
    real = tpu_devices()
    with (contextlib.nullcontext(real[0]) if real else emulate_tpu()) as device:
        yield device


def test_devices_and_device_put(tpu):
    assert jk.devices("tpu") == [tpu]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    d = jk.device_put(x, tpu)
    assert isinstance(d, jk.DeviceArray) and d.shape == (2, 3) and d.dtype == np.float32
    assert d.devices() == {tpu}
    np.testing.assert_array_equal(np.asarray(d), x)
    assert jk.device_put(d, tpu) is d  # already there


def test_results_stay_on_the_device(tpu):
    f = jk.jit(lambda x, y: (np.sin(x) * y, (x * y).sum()), backend="tpu")
    x = np.linspace(0, 1, 1000, dtype=np.float32)
    y = np.full(1000, 2, np.float32)
    a, s = f(jk.device_put(x, tpu), y)
    assert isinstance(a, jk.DeviceArray) and isinstance(s, jk.DeviceArray) and s.shape == ()
    assert a.block_until_ready() is a
    np.testing.assert_allclose(np.asarray(a), np.sin(x) * y, rtol=2e-6)
    np.testing.assert_allclose(float(s), float((x * y).sum()), rtol=1e-5)
    b, _ = f(a, a)  # a device result as the next argument: no round trip through the host
    np.testing.assert_allclose(np.asarray(b), np.sin(np.sin(x) * y) * (np.sin(x) * y), rtol=2e-5)


def test_written_device_argument_takes_the_new_buffer(tpu):
    def f(x):
        x[1:3] += 1
        return x.sum()

    d = jk.device_put(np.arange(4, dtype=np.float32), tpu)
    other = d  # the same array object: it sees the write, as in NumPy
    total = jk.jit(f, backend="tpu")(d)
    np.testing.assert_array_equal(np.asarray(d), [0, 2, 3, 3])
    assert other is d and float(total) == 8.0
    host = np.arange(4, dtype=np.float32)
    jk.jit(f, backend="tpu")(host)  # a host argument is written back into the caller's array
    np.testing.assert_array_equal(host, [0, 2, 3, 3])


def test_errors_still_raise_with_device_arguments(tpu):
    pick = jk.jit(lambda x, i: x[i], backend="tpu")
    d = jk.device_put(np.arange(5, dtype=np.float32), tpu)
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        pick(d, 7)
    assert float(pick(d, -1)) == 4.0


def test_complex_arguments_on_the_device(tpu):
    z = np.array([1 + 2j, -3j, 0.5], np.complex64)
    out = jk.jit(lambda z: z * z + 1, backend="tpu")(jk.device_put(z, tpu))
    np.testing.assert_allclose(np.asarray(out), z * z + 1, rtol=1e-6)
    assert np.asarray(out).dtype == np.complex64


def test_benchmark_synchronises(tpu):
    f = jk.jit(lambda x: np.tanh(x) * 2, backend="tpu")
    record = jk.benchmark(f, jk.device_put(np.ones(1024, np.float32), tpu), repeat=3, number=2, baseline=False)
    assert record.compiled.median > 0


def test_64_bit_host_arguments_are_not_narrowed_and_32_bit_calls_return_64_bit_results(tpu):
    # A call enters JAX's x64 mode only when an argument is 64-bit (backends/tpu/backend.py):
    # an int64 host array beyond int32's range must cross whole, and a float32-only call must
    # still return NumPy's int64 / float64 results.
    big = np.array([2**40 + 3, -(2**35)], np.int64)
    wide = jk.jit(lambda i, x: (i * 2, x + 1), backend="tpu")
    i2, x1 = wide(big, np.ones(2, np.float32))
    np.testing.assert_array_equal(np.asarray(i2), big * 2)
    assert np.asarray(i2).dtype == np.int64 and np.asarray(x1).dtype == np.float32
    narrow = jk.jit(lambda x: (np.argmax(x), x.astype(np.float64) * 1e300), backend="tpu")
    x = jk.device_put(np.array([1.0, 5.0, 2.0], np.float32), tpu)
    for _ in range(2):  # the first call and a warm one (the results' shapes read once)
        arg, scaled = narrow(x)
        assert np.asarray(arg).dtype == np.int64 and int(np.asarray(arg)) == 1
        np.testing.assert_array_equal(np.asarray(scaled), np.array([1.0, 5.0, 2.0]) * 1e300)


def test_device_arguments_of_a_program_with_a_layout_guard(tpu):
    """A program whose reshape decided view-or-copy on an argument's strides (a layout guard)
    called with that argument on the device: a device array has no strides, and its layout is C
    order (NPBench's azimint_hist and stockham_fft on the chip raised AttributeError on the
    second call, the fast path's guard). Host and device arguments, in either order, NumPy's
    results."""
    def f(x, y):
        return x.T.reshape(-1) * 2 + y.ravel()

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.ones((4, 3), np.float32)
    want = f(x, y)
    g = jk.jit(f, backend="tpu")
    for args in [(jk.device_put(x, tpu), jk.device_put(y, tpu)), (x, y), (x, jk.device_put(y, tpu)),
                 (jk.device_put(x, tpu), y), (np.asfortranarray(x), y)]:
        for _ in range(2):  # the checked path, then the fast one
            np.testing.assert_array_equal(np.asarray(g(*args)), want)
