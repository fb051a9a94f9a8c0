"""Gather and scatter steps on backend="cuda-emulator" (docs/gpu.md, "Indexing and in-place
updates on the GPU") against NumPy: `x[idx]`, `x[i, j]` with broadcasting and negative indices,
`x[idx] = v` (repeated indices: the last write wins), `np.add.at` and other `ufunc.at`
(repeated indices accumulate in index order: bit for bit NumPy's), out-of-bounds indices raise
NumPy's IndexError through the status word, in-place updates of arguments; one host build and
one nvcc run for the module."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitkernel as jk
from cuda_corpus import Case, assert_compiles_with_nvcc, kernel_program, module_of, needs_nvcc
from helpers import assert_matches_numpy, numpy_result
from jitkernel.backends.cuda import emulator
from jitkernel.backends.cuda.render import render_program

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")

RNG = np.random.default_rng(7)
V = RNG.standard_normal(50).astype(np.float32)
M = RNG.standard_normal((6, 33))
IDX = np.array([3, -1, 3, 0, 49, 3, -50], np.int64)


def gather_1d(x, i):
    return x[i] * 2


def gather_2d(m, i, j):
    return m[i, j]  # index arrays broadcast: (4, 1) with (3,)


def gather_rows(m, i):
    return np.tanh(m[i]).sum(axis=1)


def set_repeated(x, i, v):
    y = x + 0
    y[i] = v
    return y


def add_at(x, i, v):
    y = x * 1
    np.add.at(y, i, v)
    return y


def add_at_rows(m, i, v):
    y = m - 1.0
    np.add.at(y, i, v)  # v (k, 33): whole rows added
    return y


def max_at_scalar(m, i):
    y = m + 0
    np.maximum.at(y, i, 0.5)  # a Python float: NumPy's weak scalar
    return y


def set_int8(x, i, v):
    y = x + np.int8(0)
    y[i] = v
    return y


def set_python_int(x, i):
    y = x + 0
    y[i] = 5  # a Python int into int32: NumPy's weak scalar, a constant that fits
    return y


def write_argument(x, i):
    x[1:4] = 7.0  # an in-place update of the argument (kernel IR update steps)
    return x[i].sum()


X8 = RNG.integers(-100, 100, 20).astype(np.int8)
CASES = [Case("gather-1d", gather_1d, (V, IDX)),
         Case("gather-2d", gather_2d, (M, np.array([[0], [5], [-6], [2]]), np.array([1, -33, 32]))),
         Case("gather-rows", gather_rows, (M, np.array([5, 0, 0, -1, 2]))),
         Case("set-repeated", set_repeated, (V, IDX, np.arange(7, dtype=np.float32))),
         Case("add-at", add_at, (V, IDX, RNG.standard_normal(7).astype(np.float32))),
         Case("add-at-rows", add_at_rows, (M, np.array([1, 1, 4, 1]), RNG.standard_normal((4, 33)))),
         Case("max-at", max_at_scalar, (M, np.array([2, 2, 0]))),
         Case("set-int8", set_int8, (X8, np.array([3, 3, 19]), np.array([-128, 5, 127], np.int8))),
         Case("set-python-int", set_python_int, (np.arange(9, dtype=np.int32), np.array([1, 1, -2]))),
         Case("write-argument", write_argument, (V.copy(), IDX))]


@pytest.fixture(scope="module", autouse=True)
def prebuilt() -> list:
    modules = [module_of(c) for c in CASES]
    emulator.prebuild(modules)
    return modules


def case(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def check(name: str, *args, exact: bool = False) -> None:
    c = case(name)
    expected = numpy_result(c.fn, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    got = jk.jit(c.fn, backend="cuda-emulator")(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    assert_matches_numpy(got, expected)
    if exact:  # sequential in index order: NumPy's own additions, bit for bit
        assert np.asarray(got).tobytes() == np.asarray(expected).tobytes()


@pytest.mark.parametrize("c", CASES, ids=repr)
def test_indexing_matches_numpy(c: Case) -> None:
    check(c.name, *c.args, exact=c.name.startswith(("set", "add", "max")))


def test_indexing_steps_render_as_kernels(prebuilt) -> None:
    for c, module in zip(CASES, prebuilt):
        assert "atomic" not in module.kernels.replace("atomicOr", ""), c.name  # no float atomics
        for step in kernel_program(c).steps:
            if getattr(step, "prim", None) in ("gather", "scatter", "scatter_ufunc"):
                assert f"_{step.name}" in module.kernels, (c.name, step.name)  # a kernel of its own


@settings(max_examples=30, deadline=None)
@given(idx=hnp.arrays(np.int64, 7, elements=st.integers(-50, 49)),
       v=hnp.arrays(np.float32, 7, elements=st.floats(-1e3, 1e3, width=32)))
def test_scatter_add_accumulates_repeated_indices_like_numpy(idx: np.ndarray, v: np.ndarray) -> None:
    check("add-at", V, idx, v, exact=True)
    check("set-repeated", V, idx, v, exact=True)
    check("gather-1d", V, idx)


@settings(max_examples=20, deadline=None)
@given(bad=st.sampled_from([50, 51, 1000, -51, -10**6]), at=st.integers(0, 6))
def test_out_of_bounds_index_raises_numpys_index_error(bad: int, at: int) -> None:
    idx = IDX.copy()
    idx[at] = bad
    for name, args in (("gather-1d", (V, idx)), ("add-at", (V, idx, case("add-at").args[2])),
                       ("set-repeated", (V, idx, case("set-repeated").args[2]))):
        with pytest.raises(IndexError) as want:
            case(name).fn(*[a.copy() for a in args])
        with pytest.raises(IndexError) as got:
            jk.jit(case(name).fn, backend="cuda-emulator")(*args)
        assert str(got.value) == str(want.value)


def test_in_place_argument_update_writes_the_callers_array() -> None:
    x = V.copy()
    want = V.copy()
    expected = write_argument(want, IDX)
    got = jk.jit(write_argument, backend="cuda-emulator")(x, IDX)
    assert_matches_numpy(got, expected)
    np.testing.assert_array_equal(x, want)


def test_results_do_not_depend_on_the_launch_shape() -> None:
    c = case("add-at-rows")
    kp = kernel_program(c)
    module = render_program(kp)
    lib = emulator.library(module)
    expected = numpy_result(c.fn, *c.args)
    for policy in (emulator.LaunchPolicy(32, 1), emulator.LaunchPolicy(128, 7)):
        (out,) = emulator.EmulatedProgram(kp, module, lib, policy)(list(c.args))
        assert out.tobytes() == expected.tobytes()


def put(x, i):
    y = x * 1
    np.put(y, i, 1.0)
    return y


@pytest.mark.parametrize("fn, message", [
    (put, "library step 'put'"),
    (lambda x, i: np.partition(x, 1), "library step 'partition'"),
    (lambda x, i: np.linalg.inv(x[:4].reshape(2, 2) + 3 * np.eye(2)), "library step 'linalg_inv'"),
    (lambda x, i: np.fft.fft(x).real, "complex numpy.fft .* has no CUDA implementation"),
], ids=["put", "partition", "linalg", "fft"])
def test_steps_without_a_gpu_implementation_raise_naming_them(fn, message) -> None:
    with pytest.raises(jk.UnsupportedOperationError, match=message):
        jk.jit(fn, backend="cuda-emulator")(V, IDX)


@needs_nvcc
def test_every_program_compiles_with_nvcc(prebuilt) -> None:
    assert_compiles_with_nvcc(prebuilt)
