"""Run-time data checks (`raise_if`: np.average's zero weights, ...) and the gathers of np.repeat
and np.delete (`take_static`) on backend="cuda-emulator" and on backend="cuda" over an emulated
GPU: NumPy's exception and message on bad data, every call; NumPy's values otherwise."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitkernel as jk
from jitkernel.device_array import emulate_gpu

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")


def average(a, w):
    return np.average(a, weights=w)


@settings(max_examples=10, deadline=None, database=None)
@given(w=hnp.arrays(np.float64, 4, elements=st.sampled_from([0.0, 1.0, -1.0, 2.0, 0.5])))
def test_average_raises_numpys_error_on_zero_weights_every_call(w) -> None:
    a = np.arange(4.0)
    f = jk.jit(average, backend="cuda-emulator")
    try:
        want = average(a, w)
    except ZeroDivisionError as e:
        for _ in range(2):  # every call, not only the first
            with pytest.raises(ZeroDivisionError, match=str(e)):
                f(a, w)
        return
    np.testing.assert_allclose(f(a, w), want, rtol=1e-12)


def test_the_check_on_an_emulated_gpu_with_device_arrays() -> None:
    with emulate_gpu() as gpu:
        f = jk.jit(average, backend="cuda")
        a = jk.device_put(np.arange(3.0), gpu)
        assert float(np.asarray(f(a, jk.device_put(np.array([1.0, 1.0, 2.0]), gpu)))) == 1.25
        with pytest.raises(ZeroDivisionError, match="Weights sum to zero"):
            f(a, jk.device_put(np.array([1.0, -1.0, 0.0]), gpu))


COUNTS = np.random.default_rng(0).integers(0, 3, 20)
GATHERS = {
    "repeat-counts": lambda a: np.repeat(a, COUNTS, axis=1),
    "delete-scattered": lambda a: np.delete(a, [0, 2, 5, 7, 9, 11, 13, 15, 17], axis=1),
    "delete-axis0": lambda a: np.delete(a, [1], axis=0),
}


@pytest.mark.parametrize("name", list(GATHERS))
def test_repeat_and_delete_gathers(name) -> None:
    fn = GATHERS[name]
    a = np.arange(40, dtype=np.int16).reshape(2, 20)
    got = jk.jit(fn, backend="cuda-emulator")(a)
    want = fn(a)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_scattered_delete_is_a_take_static_kernel() -> None:
    a = np.arange(40, dtype=np.int16).reshape(2, 20)
    assert "take_static" in jk.jit(GATHERS["delete-scattered"], backend="cuda-emulator").lower(a).as_text("cuda")
