"""backend="cuda" above the PyCUDA layer: device arrays, the backend, the step runner and its
events, run for real on an emulated GPU (device_array.emulate_gpu: a GpuDevice whose runtime
is the emulator device, so the same DeviceProgram and DeviceArray code runs as on a GPU)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitkernel as jk
from jitkernel import events
from jitkernel.backends.cuda import missing_for_cuda
from jitkernel.device_array import DeviceArray, emulate_gpu

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="the emulated GPU needs a host C++20 compiler (g++)")


def sin_times_and_dot(x, y):
    return np.sin(x) * y, (x * y).sum()


def twice_plus_one(x):
    return x * 2 + 1


def bump(x, y):
    x += y
    return x.sum()


def pick(x, i):
    return x[i]


def tanh_sum(x):
    return np.tanh(x).sum()


def tanh_row_sums(x):
    return np.tanh(x).sum(axis=1)


X200 = np.linspace(-2, 2, 200, dtype=np.float32)
X50 = np.arange(50, dtype=np.float64)
PROGRAMS = [(sin_times_and_dot, (X200, X200)), (twice_plus_one, (X50,)),
            (bump, (np.zeros(5, np.float32), np.ones(5, np.float32))), (pick, (np.arange(5.0), 3)),
            (tanh_sum, (np.ones(300, np.float32),)), (tanh_row_sums, (np.ones((4, 40), np.float32),))]


@pytest.fixture(scope="module", autouse=True)
def prebuilt() -> None:
    """Every program of the module in one host-compiler run (emulator.prebuild), as
    tests/test_cuda_emulator.py does: the tests then find their kernels already built."""
    from jitkernel.backends.cuda import emulator
    from jitkernel.backends.cuda.render import render_program
    from jitkernel.fusion import schedule
    modules = [render_program(schedule(jk.jit(fn, backend="interpret").lower(*args).compiled.optimized))
               for fn, args in PROGRAMS]
    emulator.prebuild(modules)


def recorded(fn, *args):
    seen: list = []
    unsubscribe = events.subscribe(seen.append)
    try:
        result = fn(*args)
    finally:
        unsubscribe()
    return result, seen


def transfers(seen: list, direction: str) -> list:
    return [e for e in seen if isinstance(e, events.TransferEvent) and e.direction == direction]


def test_devices_list_the_cpu_first_then_gpus(gpu) -> None:
    assert jk.devices() == [jk.devices("cpu")[0], gpu]
    assert jk.devices("gpu") == [gpu] == jk.devices("cuda")
    assert gpu.platform == "gpu" and repr(gpu) == "CudaDevice(id=0)" and gpu.device_kind == "cuda-emulator"


def test_without_a_gpu_the_gpu_filter_says_what_is_missing() -> None:
    missing = missing_for_cuda()
    if not missing:
        pytest.skip("PyCUDA, a driver and a device are present here")
    assert all(d.platform == "cpu" for d in jk.devices())
    with pytest.raises(RuntimeError, match="no GPU devices are present") as info:
        jk.devices("gpu")
    assert missing[0] in str(info.value)


def test_device_put_copies_and_converts_back(gpu) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    d = jk.device_put(x, gpu)
    assert isinstance(d, jk.DeviceArray) and d.shape == (2, 3) and d.dtype == np.float32 and d.device == gpu
    x[0, 0] = 99  # the device holds its own copy
    back = np.asarray(d)
    assert back[0, 0] == 0 and not np.shares_memory(back, x)
    np.testing.assert_array_equal(back, np.arange(6, dtype=np.float32).reshape(2, 3))
    assert "DeviceArray([[0., 1., 2.]," in repr(d) and "dtype=float32" in repr(d)
    assert d.block_until_ready() is d
    assert jk.device_put(d, gpu) is d
    with pytest.raises(ValueError, match="always copies"):
        np.asarray(d, copy=False)


def test_a_cuda_function_returns_device_arrays(gpu) -> None:
    f = jk.jit(sin_times_and_dot, backend="cuda")
    x = X200
    a, s = f(x, x)
    assert isinstance(a, DeviceArray) and isinstance(s, DeviceArray) and s.ndim == 0 and s.shape == ()
    np.testing.assert_allclose(np.asarray(a), np.sin(x) * x, rtol=1e-6)
    np.testing.assert_allclose(float(s), (x * x).sum(), rtol=1e-5)
    assert a.dtype == np.float32 and s.dtype == np.float32


def test_device_array_arguments_are_not_copied_numpy_ones_are(gpu) -> None:
    f = jk.jit(twice_plus_one, backend="cuda")
    x = X50
    f(x)  # compiled (constants are uploaded once, at the first call)
    d, seen = recorded(f, x)
    assert [e.nbytes for e in transfers(seen, "host->device")] == [x.nbytes]
    again, seen = recorded(f, d)
    assert transfers(seen, "host->device") == [] and transfers(seen, "device->host") == []
    back, seen = recorded(np.asarray, again)
    assert [e.nbytes for e in transfers(seen, "device->host")] == [x.nbytes]
    np.testing.assert_array_equal(back, (x * 2 + 1) * 2 + 1)


def test_an_argument_written_in_place_updates_the_device_array(gpu) -> None:
    f = jk.jit(bump, backend="cuda")
    d = jk.device_put(np.zeros(5, np.float32), gpu)
    other = d  # the same object: sees the update, as a NumPy alias would
    snapshot = jk.device_put(d, gpu)
    total = f(d, np.ones(5, np.float32))
    np.testing.assert_array_equal(np.asarray(other), np.ones(5, np.float32))
    assert float(total) == 5.0
    host = np.zeros(5, np.float32)
    f(host, np.full(5, 2, np.float32))  # a NumPy argument of a cuda function is written back too
    np.testing.assert_array_equal(host, np.full(5, 2, np.float32))
    assert snapshot is d  # device_put of an array already there returns it


def test_the_same_device_array_twice_to_a_writing_function(gpu) -> None:
    def f(x, y):
        x *= 2
        return y + 0  # y is x: NumPy sees the write
    d = jk.device_put(np.arange(4.0), gpu)
    out = jk.jit(f, backend="cuda")(d, d)
    np.testing.assert_array_equal(np.asarray(out), np.arange(4.0) * 2)
    np.testing.assert_array_equal(np.asarray(d), np.arange(4.0) * 2)


def test_device_arrays_on_a_cpu_function_are_copied_back(gpu) -> None:
    d = jk.device_put(np.arange(4.0), gpu)
    out = jk.jit(lambda x: x * 3)(d)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, np.arange(4.0) * 3)
    np.testing.assert_array_equal(np.asarray(d) + 1, d + 1)  # NumPy operators on the host copy


def test_traced_index_errors_raise_at_the_call(gpu) -> None:
    f = jk.jit(pick, backend="cuda")
    x = np.arange(5.0)
    assert float(f(x, 3)) == 3.0
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        f(x, 7)
    assert float(f(x, -1)) == 4.0  # the status word was reset


def test_kernel_events_name_each_launch(gpu) -> None:
    f = jk.jit(tanh_sum, backend="cuda")
    x = np.ones(300, np.float32)
    f(x)
    _, seen = recorded(f, x)
    kernels = [e for e in seen if isinstance(e, events.KernelEvent)]
    assert [e.kernel.rsplit("_", 1)[-1] for e in kernels] == ["part", "final"]
    assert all(e.device == "cuda-emulator" and e.duration > 0 and e.block > 0 and e.grid > 0 for e in kernels)
    assert all(e.function == "tanh_sum" for e in kernels)


@settings(max_examples=20, deadline=None)
@given(hnp.arrays(st.sampled_from([np.float32, np.int32, np.int64]), hnp.array_shapes(max_dims=2, max_side=7)))
def test_device_put_round_trips(x: np.ndarray) -> None:
    with emulate_gpu() as gpu:
        d = jk.device_put(x, gpu)
        back = np.asarray(d)
    assert back.dtype == x.dtype and back.shape == x.shape
    np.testing.assert_array_equal(back, x)


# -- the profiler's device phases (the real profiler, the emulated GPU's events) ----------------
def test_profiler_shows_kernels_and_transfers(gpu) -> None:
    from jitkernel import profiler
    from jitkernel.profiler.collector import Collector
    from jitkernel.profiler.report import Report

    saved = list(events.SUBSCRIBERS)
    c = Collector()
    c.start()
    try:
        f = jk.jit(tanh_row_sums, backend="cuda")
        x = np.ones((4, 40), np.float32)
        outs = [np.asarray(f(x)) for _ in range(3)]
    finally:
        c.stop()
        profiler.stop()
        events.SUBSCRIBERS[:] = saved
    np.testing.assert_allclose(outs[-1], np.tanh(x).sum(axis=1), rtol=1e-6)
    report = Report(c.snapshot())
    st = report["tanh_row_sums"]
    assert st.device == "cuda-emulator" and st.kernel_launches == 3 and st.kernel_time > 0
    assert st.h2d_bytes == 3 * x.nbytes and st.d2h_bytes == 3 * 4 * 4
    text = str(report)
    assert "device phases" in text and "[cuda-emulator] tanh_row_sums: kernels" in text and "in 3 launches" in text
    assert "host->device 1.9 kB" in text and "device->host 48 B" in text
    assert "cuda-emulator" in report._repr_html_()
    calls = report.calls("tanh_row_sums")
    assert len(calls) == 3 and all(c.kernels > 0 and c.transfers > 0 for c in calls)
    phases = {r["phase"] for r in report.records()}
    assert {"kernel", "transfer"} <= phases
    for kind in ("breakdown", "timeline"):
        assert report.plot(kind)._repr_png_().startswith(b"\x89PNG")


def test_jit_profile_magic_shows_the_device(gpu, tmp_path, monkeypatch) -> None:
    """`%%jit -b cuda` and `%jit_profile` in a real in-process IPython shell."""
    from jitkernel import profiler
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    monkeypatch.chdir(tmp_path)
    saved = list(events.SUBSCRIBERS)
    shell = InteractiveShell.instance()
    try:
        assert shell.extension_manager.load_extension("jitkernel") is None
        profiler.reset()
        with capture_output() as cap:
            shell.run_cell("import numpy as np\nx = np.ones(64, np.float32)")
            first = shell.run_cell("%%jit -b cuda\ndef k(v):\n    return np.sin(v) * 2\n")
            shell.run_cell("y = k(x)\nz = np.asarray(y)")
            shell.run_cell("%jit_profile k")
        assert first.success, cap.stdout
        assert type(shell.user_ns["y"]).__name__ == "DeviceArray"
        np.testing.assert_allclose(shell.user_ns["z"], np.sin(np.ones(64, np.float32)) * 2, rtol=1e-6)
        shown = cap.stdout + "".join(str(o.data.get("text/plain", "")) for o in cap.outputs)
        assert "[cuda-emulator] k: kernels" in shown, shown
    finally:
        shell.extension_manager.unload_extension("jitkernel")
        InteractiveShell.clear_instance()
        events.SUBSCRIBERS[:] = saved


def test_complex_arguments_are_computed_not_truncated(gpu) -> None:
    """Complex programs run on backend='cuda' (tests/test_cuda_complex_runtime.py has the rest)."""
    out = jk.jit(lambda z: z * 2, backend="cuda")(np.array([1 + 2j, 3 - 1j]))
    assert out.dtype == np.complex128 and out.shape == (2,)
    assert np.asarray(out).tolist() == [2 + 4j, 6 - 2j]


def test_a_sharding_over_gpus_is_refused(gpu) -> None:
    from jitkernel.sharding import Mesh, NamedSharding, P
    mesh = Mesh(np.array([gpu], dtype=object), ("d",))
    with pytest.raises(jk.UnsupportedOperationError, match="NamedSharding over GPU devices"):
        jk.device_put(np.ones(4), NamedSharding(mesh, P("d")))


def test_no_cuda_array_interface_on_an_emulated_gpu(gpu) -> None:
    d = jk.device_put(np.ones(3), gpu)
    assert not hasattr(d, "__cuda_array_interface__")
