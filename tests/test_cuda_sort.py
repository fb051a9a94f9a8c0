"""np.sort, np.argsort(kind="stable") and what sorts (median, percentile, quantile) on
backend="cuda-emulator" (backends/cuda/sort.py, a bitonic network over (value, position)
pairs): NumPy's values, dtypes and stable indices for every dtype, axis and line length (powers
of two and not), NaN last, signed zeros, ties. The programs are fixed (one g++ run builds them);
hypothesis draws their values, with many ties and NaN."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitkernel as jk
from cuda_corpus import assert_compiles_with_nvcc, module_for, needs_nvcc

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")


def _sort(axis):
    return lambda a: np.sort(a, axis=axis)


def _argsort(axis):
    return lambda a: np.argsort(a, axis=axis, kind="stable")


# (name, function, shape, dtype)
CASES = [
    ("sort-f64-100", _sort(-1), (100,), np.float64),
    ("sort-f32-axis0", _sort(0), (17, 3), np.float32),
    ("sort-f16-3d-axis1", _sort(1), (2, 9, 4), np.float16),
    ("sort-i8-64", _sort(-1), (64,), np.int8),
    ("sort-u64-rows", _sort(1), (5, 33), np.uint64),
    ("sort-bool", _sort(0), (31,), np.bool_),
    ("sort-flat", _sort(None), (4, 6), np.int32),
    ("sort-length-1", _sort(1), (6, 1), np.float64),
    ("sort-many-rows", _sort(-1), (3000, 3), np.float32),
    ("argsort-f64-100", _argsort(-1), (100,), np.float64),
    ("argsort-i16-axis0", _argsort(0), (40, 2), np.int16),
    ("argsort-u8-rows", _argsort(1), (7, 13), np.uint8),
    ("argsort-f16", _argsort(-1), (50,), np.float16),
    ("median-f64", lambda a: np.median(a, axis=1), (4, 21), np.float64),
    ("percentile-f32", lambda a: np.percentile(a, [10, 50, 95]), (57,), np.float32),
    ("quantile-axis0", lambda a: np.quantile(a, 0.3, axis=0), (16, 5), np.float64),
]


def _values(shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        few = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan])
        return hnp.arrays(dt, shape, elements=few | st.floats(-100, 100, width=dt.itemsize * 8))
    if dt.kind == "b":
        return hnp.arrays(dt, shape)
    info = np.iinfo(dt)
    return hnp.arrays(dt, shape, elements=st.sampled_from([0, 1, 2, int(info.max), int(info.min)])
                      | st.integers(max(-3, int(info.min)), 3))


def _example(shape, dtype):
    return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape).astype(dtype)


@pytest.fixture(scope="module")
def modules() -> list:
    return [module_for(fn, _example(shape, dt))[1] for _, fn, shape, dt in CASES]


@pytest.fixture(scope="module", autouse=True)
def prebuilt(modules) -> None:
    from jitkernel.backends.cuda import emulator
    emulator.prebuild(modules)


@pytest.mark.parametrize("name,fn,shape,dtype", CASES, ids=[c[0] for c in CASES])
def test_matches_numpy(name, fn, shape, dtype) -> None:
    f = jk.jit(fn, backend="cuda-emulator")

    @settings(max_examples=10, deadline=None, database=None)
    @given(x=_values(shape, dtype))
    def check(x):
        with np.errstate(invalid="ignore"):  # NumPy's interpolation between infinities
            want = fn(x)
            got = np.asarray(f(x))
        assert got.dtype == want.dtype and got.shape == want.shape
        if name.startswith(("median", "percentile", "quantile")):
            np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)  # NumPy's interpolation
        else:
            np.testing.assert_array_equal(got, want)  # argsort: NumPy's stable indices exactly

    check()


def test_default_argsort_is_refused_asking_for_stable() -> None:
    with pytest.raises(jk.UnsupportedOperationError, match="kind='stable'"):
        jk.jit(np.argsort, backend="cuda-emulator")(np.arange(5.0))


def test_complex_sort_is_refused_naming_the_step() -> None:
    with pytest.raises(jk.UnsupportedOperationError, match="sort"):
        jk.jit(np.sort, backend="cuda-emulator")(np.ones(4, np.complex64))


def test_results_do_not_depend_on_the_launch_shape() -> None:
    from jitkernel.backends.cuda import emulator
    x = np.random.default_rng(3).integers(0, 4, (5, 77)).astype(np.int32)
    kp, module = module_for(_argsort(1), x)
    lib = emulator.library(module)
    for policy in (emulator.LaunchPolicy(32, 1), emulator.LaunchPolicy(96, 7), emulator.LaunchPolicy(256, 2)):
        (out,) = emulator.EmulatedProgram(kp, module, lib, policy)([x])
        np.testing.assert_array_equal(out, np.argsort(x, axis=1, kind="stable"))


def test_sort_inside_a_loop_body() -> None:
    def f(x):
        return jk.lax.fori_loop(0, 2, lambda i, c: np.sort(c * -1.0), x)
    x = np.array([3.0, -1.0, 2.0, np.nan, 0.5])
    want = np.sort(np.sort(x * -1.0) * -1.0)
    np.testing.assert_array_equal(jk.jit(f, backend="cuda-emulator")(x), want)


@needs_nvcc
def test_every_case_compiles_with_nvcc(modules) -> None:
    assert_compiles_with_nvcc(modules)
