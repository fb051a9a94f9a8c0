"""The warm call path of backend="cuda" with jk.DeviceArray arguments (docs/gpu.md, "Dispatch").

A second call with DeviceArrays of a known shape and dtype takes the jitted function's fast path
(one dictionary read, no signature walk); it must give exactly what the checked slow path gives:
device arrays used in place, host arrays copied in, arguments written in place, the same
DeviceArray twice to a writing function, a CPU function's DeviceArray arguments copied back.
Run for real on an emulated GPU (device_array.emulate_gpu)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk
from jitkernel.device_array import DeviceArray, emulate_gpu

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="the emulated GPU needs a host C++20 compiler (g++)")


def scaled_sum(x, y):
    return x * 2 + y


def add_into(x, y):
    x += y
    return (x * y).sum()


def fast_keys(f) -> list:
    return list(f._fast)


def test_device_array_calls_take_the_fast_path(gpu) -> None:
    f = jk.jit(scaled_sum, backend="cuda")
    x = jk.device_put(np.arange(4, dtype=np.float32), gpu)
    first = f(x, x)
    assert fast_keys(f) == [((( 4,), np.dtype(np.float32), DeviceArray),) * 2]
    again = f(x, first)  # the fast entry: the result is a DeviceArray computed on the device
    assert isinstance(again, DeviceArray) and again.device == gpu
    np.testing.assert_array_equal(np.asarray(again), np.arange(4) * 2 + (np.arange(4) * 3))


def test_a_device_array_and_an_ndarray_of_one_shape_are_keyed_apart(gpu) -> None:
    f = jk.jit(scaled_sum, backend="cuda")
    host = np.arange(3.0)
    dev = jk.device_put(host, gpu)
    for x in (host, dev, host, dev):
        np.testing.assert_array_equal(np.asarray(f(x, x)), host * 3)
    assert len(fast_keys(f)) == 2


def test_a_cpu_function_never_registers_device_arrays(gpu) -> None:
    """Its executable takes host arrays: a fast entry would hand it the DeviceArray itself."""
    f = jk.jit(scaled_sum)
    d = jk.device_put(np.arange(5.0), gpu)
    for _ in range(3):
        out = f(d, d)
        assert isinstance(out, np.ndarray)
        np.testing.assert_array_equal(out, np.arange(5.0) * 3)
    assert fast_keys(f) == []


def test_the_same_device_array_twice_on_the_fast_path(gpu) -> None:
    """f(d, d) writing its first argument after f(a, b) registered the fast entry: the aliasing
    check sends it to the variant traced with one array for both names, as in NumPy."""
    f = jk.jit(add_into, backend="cuda")
    a = jk.device_put(np.ones(4), gpu)
    b = jk.device_put(np.full(4, 2.0), gpu)
    assert float(f(a, b)) == 24.0  # a = 3, sum(3 * 2)
    d = jk.device_put(np.arange(4.0), gpu)
    total = f(d, d)  # d = 2 * arange, sum(d * d) with the written d
    np.testing.assert_array_equal(np.asarray(d), np.arange(4.0) * 2)
    assert float(total) == float(((np.arange(4.0) * 2) ** 2).sum())


def test_a_device_array_of_another_device_goes_through_the_host(gpu) -> None:
    f = jk.jit(scaled_sum, backend="cuda")
    x = jk.device_put(np.arange(4.0), gpu)
    f(x, x)
    with emulate_gpu() as other:
        y = jk.device_put(np.arange(4.0) + 10, other)
        out = f(y, y)  # the fast entry of f's device: y is copied to it, not reinterpreted
    assert out.device == gpu
    np.testing.assert_array_equal(np.asarray(out), (np.arange(4.0) + 10) * 3)


ARGUMENT = st.tuples(st.sampled_from([3, 5]), st.booleans())  # (length, on the device)


@settings(max_examples=20, deadline=None)
@given(calls=st.lists(st.tuples(ARGUMENT, ARGUMENT, st.booleans()), min_size=2, max_size=6))
def test_any_sequence_of_argument_kinds_matches_numpy(calls) -> None:
    """Calls of one writing function with host and device arguments of two lengths, in any
    order, sometimes the same array twice: each call and each written argument is NumPy's."""
    with emulate_gpu() as gpu:
        f = jk.jit(add_into, backend="cuda")
        for (n, x_dev), (_, y_dev), same in calls:
            x_host = np.linspace(-1.0, 1.0, n)
            y_host = x_host if same else np.arange(n, dtype=np.float64)
            want_x = x_host.copy()
            want_y = want_x if same else y_host.copy()
            want_x += want_y
            want = (want_x * want_y).sum()
            x = jk.device_put(x_host, gpu) if x_dev else x_host.copy()
            y = x if same else (jk.device_put(y_host, gpu) if y_dev else y_host.copy())
            got = f(x, y)
            np.testing.assert_allclose(float(got), want, rtol=1e-12)
            np.testing.assert_allclose(np.asarray(x), want_x, rtol=1e-12)
            if not same:
                np.testing.assert_array_equal(np.asarray(y), y_host)


def test_the_dispatch_benchmark_runs(capsys) -> None:
    """benchmarks/cuda_dispatch.py: both cases print a call time and a host-work share of it."""
    from benchmarks import cuda_dispatch
    cuda_dispatch.main(["--calls", "20", "--repeats", "3"])
    lines = [line for line in capsys.readouterr().out.splitlines() if "host work" in line]
    assert len(lines) == 2
    for line in lines:
        call = float(line.split("call")[1].split("us")[0])
        host = float(line.split("host work")[1].split("us")[0])
        assert 0 < host <= call
