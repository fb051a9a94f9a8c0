"""backend="cuda" on a real GPU through PyCUDA: device arrays, asynchronous launches and
block_until_ready, in-place updates of DeviceArray arguments, the cubin cache, kernel events.
Skipped, with the reason, wherever PyCUDA, the driver or a device is missing (run by
scripts/gpu_check.py on the GPU machine)."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import cache, events
from jitkernel.backends.cuda import missing_for_cuda

MISSING = missing_for_cuda()
pytestmark = pytest.mark.skipif(bool(MISSING), reason="; ".join(MISSING) or "a CUDA GPU is present")


@pytest.fixture(scope="module")
def gpu():
    gpus = jk.devices("gpu")
    return gpus[0]


def recorded(fn, *args):
    seen: list = []
    unsubscribe = events.subscribe(seen.append)
    try:
        result = fn(*args)
    finally:
        unsubscribe()
    return result, seen


def test_devices_put_and_convert(gpu) -> None:
    assert jk.devices()[0].platform == "cpu" and jk.devices()[1] == gpu
    assert gpu.platform == "gpu" and gpu.device_kind  # e.g. "NVIDIA H200"
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = jk.device_put(x, gpu)
    assert isinstance(d, jk.DeviceArray) and d.shape == (3, 4) and d.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(d), x)
    assert "DeviceArray([[ 0.,  1.,  2.,  3.]," in repr(d)
    empty = jk.device_put(np.zeros((0, 3)), gpu)
    assert np.asarray(empty).shape == (0, 3)


@pytest.mark.parametrize("n", [1, 1000, 1 << 20])
def test_results_match_numpy(gpu, n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    f = jk.jit(lambda a: (np.sin(a) * np.cos(a) + np.sin(a) ** 2, np.tanh(a).sum(), a.max(), np.argmin(a)),
               backend="cuda")
    got = f(x)
    assert all(isinstance(g, jk.DeviceArray) for g in got)
    np.testing.assert_allclose(np.asarray(got[0]), np.sin(x) * np.cos(x) + np.sin(x) ** 2, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(float(got[1]), np.tanh(x).sum(), rtol=1e-4)
    assert float(got[2]) == x.max() and int(got[3]) == np.argmin(x)


def test_softmax_rows(gpu) -> None:
    x = np.random.default_rng(0).standard_normal((512, 1024)).astype(np.float32)

    def softmax(a):
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(jk.jit(softmax, backend="cuda")(x)), softmax(x), rtol=1e-5, atol=1e-7)


def test_launches_are_asynchronous_until_conversion(gpu) -> None:
    f = jk.jit(lambda a: np.sqrt(a * a + 1.0), backend="cuda")
    d = jk.device_put(np.ones(1 << 22, np.float32), gpu)
    out = d
    for _ in range(20):  # chained on the device, no copy back in between
        out = f(out)
    assert out.block_until_ready() is out
    expected = np.ones(1, np.float32)
    for _ in range(20):
        expected = np.sqrt(expected * expected + 1.0)
    np.testing.assert_allclose(np.asarray(out)[:3], np.repeat(expected, 3), rtol=1e-5)
    _, seen = recorded(f, out)
    assert not [e for e in seen if isinstance(e, events.TransferEvent) and e.direction == "host->device"]


def test_in_place_update_of_a_device_array_argument(gpu) -> None:
    def bump(x, y):
        x += y
        return x.sum()
    f = jk.jit(bump, backend="cuda")
    d = jk.device_put(np.zeros(1000, np.float32), gpu)
    total = f(d, np.ones(1000, np.float32))
    np.testing.assert_array_equal(np.asarray(d), np.ones(1000, np.float32))
    assert float(total) == 1000.0


def test_traced_index_error(gpu) -> None:
    f = jk.jit(lambda x, i: x[i], backend="cuda")
    x = np.arange(5.0)
    assert float(f(x, 2)) == 2.0
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 5"):
        f(x, 9)
    assert float(f(x, -1)) == 4.0


def test_cubin_cache_reuse(gpu) -> None:
    from jitkernel.backends.cuda.pycuda_device import cubin_key
    from jitkernel.backends.cuda.render import render_program
    from jitkernel.fusion import schedule

    def prog(a):
        return np.exp(a) * 3 - 1
    x = np.ones(64, np.float32)
    _, seen = recorded(jk.jit(prog, backend="cuda"), x)
    assert [e.backend for e in seen if isinstance(e, events.CompileEvent)] == ["cuda"]
    source = render_program(schedule(jk.jit(prog, backend="interpret").lower(x).compiled.optimized)).source
    assert cache.load(cubin_key(source, gpu.runtime().arch)) is not None
    _, seen = recorded(jk.jit(prog, backend="cuda"), x)  # a new function object: no nvcc run
    assert not [e for e in seen if isinstance(e, events.CompileEvent)]


def test_new_size_reuses_the_module(gpu) -> None:
    from jitkernel.backends.cuda.runtime import CudaBackend
    if not hasattr(CudaBackend, "reuse"):
        pytest.skip("backend='cuda' has no shape-generic reuse in this tree (dynamic dimensions: helper cudaflow)")
    f = jk.jit(lambda a: np.sin(a) + 1, backend="cuda")
    f(np.ones(1000, np.float32))
    f(np.ones(2000, np.float32))
    out, seen = recorded(f, np.ones(3000, np.float32))
    assert not [e for e in seen if isinstance(e, events.CompileEvent)]
    np.testing.assert_allclose(np.asarray(out), np.sin(1.0) + 1, rtol=1e-6)


def test_kernel_events_from_cuda_events(gpu) -> None:
    f = jk.jit(lambda a: np.tanh(a).sum(), backend="cuda")
    x = np.ones(1 << 20, np.float32)
    f(x)
    _, seen = recorded(f, x)
    kernels = [e for e in seen if isinstance(e, events.KernelEvent)]
    assert len(kernels) == 2 and all(e.duration > 0 and e.device == gpu.device_kind for e in kernels)
    h2d = [e for e in seen if isinstance(e, events.TransferEvent)]
    assert [e.nbytes for e in h2d] == [x.nbytes]


def test_calls_from_another_thread(gpu) -> None:
    """The context is pushed and popped around each operation off the main thread: the worker
    thread ends with an empty context stack (PyCUDA would abort the process otherwise)."""
    import threading
    f = jk.jit(lambda a: a * 3 + 1, backend="cuda")
    x = np.arange(1000, dtype=np.float32)
    out: dict = {}

    def work() -> None:
        d = f(x)
        out["values"] = np.asarray(f(d))
    t = threading.Thread(target=work)
    t.start()
    t.join()
    np.testing.assert_array_equal(out["values"], (x * 3 + 1) * 3 + 1)


def test_cuda_array_interface_for_cupy(gpu) -> None:
    cupy = pytest.importorskip("cupy")
    d = jk.jit(lambda a: a * 2, backend="cuda")(np.arange(10, dtype=np.float32))
    np.testing.assert_array_equal(cupy.asnumpy(cupy.asarray(d)), np.arange(10, dtype=np.float32) * 2)
