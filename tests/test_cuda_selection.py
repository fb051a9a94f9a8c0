"""Boolean selections on backend="cuda-emulator" and backend="cuda" over an emulated GPU
(backends/cuda/compaction.py): x[mask] (a full mask, a leading-axes mask, a mask computed in
the program), np.nonzero / np.flatnonzero of every dtype (NaN is nonzero, -0.0 is zero):
NumPy's values, dtypes and order for any mask, empty and full selections included; results on
the emulated GPU are DeviceArrays. Fixed programs (one g++ run); hypothesis draws the masks."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitkernel as jk
from jitkernel.device_array import DeviceArray, emulate_gpu
from cuda_corpus import assert_compiles_with_nvcc, module_for, needs_nvcc

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")

X = np.arange(60.0).reshape(12, 5) - 20.0


def full_mask(x, m):
    return x[m]


def leading_mask(x, m):
    return x[m] * 2


def computed(x, t):
    return x[x > t] + 1


def nonzero_2d(x, m):
    return np.nonzero(np.where(m, x, 0))


def flat(x, m):
    return np.flatnonzero(m)


def nonzero_f16(x, m):
    return np.nonzero(np.where(m, x, 0).astype(np.float16))


# (function, mask shape)
PROGRAMS = {"full-mask": (full_mask, (12, 5)), "leading-mask": (leading_mask, (12,)), "nonzero-2d": (nonzero_2d, (12, 5)),
            "flatnonzero": (flat, (12, 5)), "nonzero-f16": (nonzero_f16, (12, 5))}


@pytest.fixture(scope="module")
def modules() -> list:
    return [module_for(fn, X, np.zeros(shape, bool))[1] for fn, shape in PROGRAMS.values()] + \
        [module_for(computed, X, 0.0)[1]]


@pytest.fixture(scope="module", autouse=True)
def prebuilt(modules) -> None:
    from jitkernel.backends.cuda import emulator
    emulator.prebuild(modules)


def _same(got, want) -> None:
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_matches_numpy_for_any_mask(name) -> None:
    fn, shape = PROGRAMS[name]
    f = jk.jit(fn, backend="cuda-emulator")

    @settings(max_examples=12, deadline=None, database=None)
    @given(m=hnp.arrays(np.bool_, shape) | st.sampled_from([np.zeros(shape, bool), np.ones(shape, bool)]))
    def check(m):
        _same(f(X, m), fn(X, m))

    check()


@settings(max_examples=8, deadline=None, database=None)
@given(t=st.sampled_from([-100.0, -20.0, 0.0, 13.5, 39.0, 100.0]))
def test_a_mask_computed_in_the_program(t) -> None:
    _same(jk.jit(computed, backend="cuda-emulator")(X, t), computed(X, t))


def test_nan_is_nonzero_and_negative_zero_is_not() -> None:
    x = np.array([0.0, -0.0, np.nan, 1.0, -np.inf, 0.0])
    _same(jk.jit(np.flatnonzero, backend="cuda-emulator")(x), np.flatnonzero(x))


def test_results_do_not_depend_on_the_launch_shape() -> None:
    from jitkernel.backends.cuda import emulator
    m = np.random.default_rng(2).random((12, 5)) > 0.4
    kp, module = module_for(full_mask, X, m)
    lib = emulator.library(module)
    for policy in (emulator.LaunchPolicy(32, 1), emulator.LaunchPolicy(96, 7), emulator.LaunchPolicy(256, 2)):
        padded = emulator.EmulatedProgram(kp, module, lib, policy)([X, m])[0]
        np.testing.assert_array_equal(padded[:m.sum()], X[m])
        assert not padded[m.sum():].any()  # the padding is zeros


def test_selections_stay_on_the_emulated_gpu() -> None:
    with emulate_gpu() as gpu:
        m = X > 3
        out = jk.jit(full_mask, backend="cuda")(jk.device_put(X, gpu), jk.device_put(m, gpu))
        assert isinstance(out, DeviceArray) and out.device == gpu
        np.testing.assert_array_equal(np.asarray(out), X[m])
        rows, cols = jk.jit(nonzero_2d, backend="cuda")(X, m)
        assert isinstance(rows, DeviceArray)
        np.testing.assert_array_equal(np.asarray(rows), np.nonzero(m)[0])
        np.testing.assert_array_equal(np.asarray(cols), np.nonzero(m)[1])


def selection_of_a_selection(x):
    y = x[x > 0]
    return y[y > 10]  # its mask is a data-dependent value itself


@pytest.mark.parametrize("fn", [selection_of_a_selection, lambda x: np.unique(x > 0)], ids=["nested", "unique"])
def test_other_data_dependent_steps_are_refused_naming_them(fn) -> None:
    with pytest.raises(jk.UnsupportedOperationError, match="datadep"):
        jk.jit(fn, backend="cuda-emulator")(X)


@needs_nvcc
def test_every_program_compiles_with_nvcc(modules) -> None:
    assert_compiles_with_nvcc(modules)
