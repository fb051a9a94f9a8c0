"""cumsum, cumprod and ufunc.accumulate on backend="cuda-emulator" (backends/cuda/accumulate.py):
NumPy's result bit for bit, in both forms (one thread per line; chunks for few long lines of an
exactly regroupable ufunc), every dtype, axis, NaN, signed zeros, wrap-around; nvcc compiles the
kernels. The programs are fixed (one g++ run builds them all); hypothesis draws their values."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitkernel as jk
from jitkernel.backends.cuda import accumulate
from cuda_corpus import assert_compiles_with_nvcc, module_for, needs_nvcc

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")

LONG = accumulate.CHUNK_MIN * 40 + 7  # few lines this long take the chunks form where exact


def _cumsum(axis, dtype=None):
    return lambda a: np.cumsum(a, axis=axis, dtype=dtype)


def _cumprod(axis):
    return lambda a: np.cumprod(a, axis=axis)


def _acc(ufunc, axis):
    return lambda a: ufunc.accumulate(a, axis=axis)


# (name, function, shape, dtype, form): form is the kernel form the renderer must pick
CASES = [
    ("cumsum-f32-1d-long", _cumsum(None), (LONG,), np.float32, "lines"),
    ("cumsum-f64-2d-axis0", _cumsum(0), (9, 5), np.float64, "lines"),
    ("cumsum-f16-2d-axis1", _cumsum(1), (4, 70), np.float16, "lines"),
    ("cumsum-i8-1d-long", _cumsum(None), (LONG,), np.int8, "chunks"),        # int8 -> int64
    ("cumsum-i32-3d-axis1", _cumsum(1), (3, LONG, 2), np.int32, "chunks"),
    ("cumsum-u8-dtype-u8", _cumsum(0, np.uint8), (LONG,), np.uint8, "chunks"),  # wraps around
    ("cumsum-bool", _cumsum(None), (LONG,), np.bool_, "chunks"),
    ("cumsum-i64-many-lines", _cumsum(1), (accumulate.LINES_MIN + 3, 3), np.int64, "lines"),
    ("cumprod-f64-axis1", _cumprod(1), (5, 12), np.float64, "lines"),
    ("cumprod-i16-long", _cumprod(None), (LONG,), np.int16, "chunks"),
    ("cumsum-f32-to-f64", _cumsum(0, np.float64), (40,), np.float32, "lines"),
    ("maximum-f64-long", _acc(np.maximum, 0), (LONG,), np.float64, "chunks"),
    ("minimum-f32-axis0", _acc(np.minimum, 0), (LONG, 3), np.float32, "chunks"),
    ("fmax-f16-long", _acc(np.fmax, 0), (LONG,), np.float16, "chunks"),
    ("maximum-u64-axis1", _acc(np.maximum, 1), (3, LONG), np.uint64, "chunks"),
    ("logical_or-bool", _acc(np.logical_or, 0), (LONG,), np.bool_, "chunks"),
    ("bitwise_xor-i32", _acc(np.bitwise_xor, 0), (LONG,), np.int32, "chunks"),
    ("subtract-f64", _acc(np.subtract, 0), (LONG,), np.float64, "lines"),
    ("divide-f32-axis1", _acc(np.divide, 1), (3, 20), np.float32, "lines"),
    ("multiply-i64-long", _acc(np.multiply, 0), (LONG,), np.int64, "chunks"),
]


def _values(shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        elements = st.floats(-4, 4, width=dt.itemsize * 8) | st.sampled_from([0.0, -0.0, np.nan, np.inf, -np.inf])
        return hnp.arrays(dt, shape, elements=elements)
    return hnp.arrays(dt, shape)


def _example(shape, dtype):
    rng = np.random.default_rng(sum(shape))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) > 0.5
    if dt.kind == "f":
        return rng.uniform(0.5, 1.5, shape).astype(dt)
    return rng.integers(-50 if dt.kind == "i" else 0, 50, shape).astype(dt)


@pytest.fixture(scope="module")
def modules() -> list:
    return [module_for(fn, _example(shape, dt))[1] for _, fn, shape, dt, _ in CASES]


@pytest.fixture(scope="module", autouse=True)
def prebuilt(modules) -> None:
    """Every program of the module in one host-compiler run (emulator.prebuild)."""
    from jitkernel.backends.cuda import emulator
    emulator.prebuild(modules)


def _source(fn, x) -> str:
    return jk.jit(fn, backend="cuda-emulator").lower(x).as_text("cuda")


@pytest.mark.parametrize("name,fn,shape,dtype,form", CASES, ids=[c[0] for c in CASES])
def test_the_expected_form_is_rendered(name, fn, shape, dtype, form) -> None:
    source = _source(fn, _example(shape, dtype))
    assert ("chunks of" in source) == (form == "chunks"), name


@pytest.mark.parametrize("name,fn,shape,dtype,form", CASES, ids=[c[0] for c in CASES])
def test_matches_numpy_bit_for_bit(name, fn, shape, dtype, form) -> None:
    f = jk.jit(fn, backend="cuda-emulator")

    @settings(max_examples=8, deadline=None, database=None)
    @given(x=_values(shape, dtype))
    def check(x):
        with np.errstate(all="ignore"):
            want = fn(x)
        got = f(x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)  # NaN == NaN here; zeros' signs below
        if want.dtype.kind == "f":  # a NaN's sign is not NumPy's contract (x86 and CUDA differ)
            numbers = ~np.isnan(want)
            np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))

    check()


def test_chunked_results_do_not_depend_on_the_launch_shape() -> None:
    """The three kernels of the chunks form under several grids and blocks: the same bits."""
    from jitkernel.backends.cuda import emulator
    x = np.random.default_rng(1).integers(-9, 9, LONG).astype(np.int32)
    kp, module = module_for(_cumsum(None), x)
    lib = emulator.library(module)
    for policy in (emulator.LaunchPolicy(32, 1), emulator.LaunchPolicy(96, 7), emulator.LaunchPolicy(256, 2)):
        (out,) = emulator.EmulatedProgram(kp, module, lib, policy)([x])
        np.testing.assert_array_equal(out, np.cumsum(x))


def test_an_accumulation_inside_a_loop_body() -> None:
    """A fori_loop whose body holds a cumsum runs on the GPU as a loop step (flow_steps.py)."""
    def f(x):
        return jk.lax.fori_loop(0, 3, lambda i, c: np.cumsum(c) % 97, x)
    x = np.arange(1, 40, dtype=np.int64)
    want = x
    for _ in range(3):
        want = np.cumsum(want) % 97
    source = jk.jit(f, backend="cuda-emulator").lower(x).as_text("cuda")
    assert "accumulate" in source and "loop driven from the host" in source
    np.testing.assert_array_equal(jk.jit(f, backend="cuda-emulator")(x), want)


@pytest.mark.parametrize("dtype,out", [(np.complex64, None), (np.complex128, None), (np.complex64, np.complex128)])
@settings(max_examples=6, deadline=None, database=None)
@given(data=st.data())
def test_complex_cumsum_is_numpys_bit_for_bit(dtype, out, data) -> None:
    """The float cumsum of the packed buffer (complex_ops.py): componentwise, NumPy's order."""
    parts = data.draw(hnp.arrays(np.dtype(dtype).type(0).real.dtype, (5, 9, 2),
                                 elements=st.floats(-4, 4, width=32) | st.sampled_from([np.nan, np.inf, -0.0])))
    z = np.ascontiguousarray(parts).view(dtype)[..., 0]  # any parts, infinities and NaN as drawn
    for fn in (lambda a: np.cumsum(a, axis=1, dtype=out), lambda a: np.cumsum(a, axis=0, dtype=out)):
        got, want = jk.jit(fn, backend="cuda-emulator")(z), fn(z)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.view(got.real.dtype), want.view(want.real.dtype))


def test_complex_cumprod_is_refused_naming_the_step() -> None:
    with pytest.raises(jk.UnsupportedOperationError, match="complex numpy.accumulate"):
        jk.jit(np.cumprod, backend="cuda-emulator")(np.ones(4, np.complex128))


def test_empty_axis_gives_an_empty_result() -> None:
    out = jk.jit(_cumsum(0), backend="cuda-emulator")(np.ones((0, 3), np.int32))
    assert out.shape == (0, 3) and out.dtype == np.cumsum(np.ones((0, 3), np.int32), axis=0).dtype


@needs_nvcc
def test_every_case_compiles_with_nvcc(modules) -> None:
    assert_compiles_with_nvcc(modules)


def test_new_sizes_reuse_the_shape_generic_module() -> None:
    """cumsum and take of a shape-generic program: the generic source names no size (its
    comments print run-time extents as their C text), so new sizes compile nothing."""
    from jitkernel import events
    f = jk.jit(lambda x, i: (np.cumsum(x, axis=0), np.take(x, i, axis=0)), backend="cuda-emulator")
    compiles: list = []
    unsubscribe = events.subscribe(lambda e: compiles.append(e) if isinstance(e, events.CompileEvent) else None)
    try:
        for n in (5, 6, 9, 13):  # the first size, then the shape-generic module, then reuse
            x, i = np.arange(n * 3.0).reshape(n, 3), np.array([0, n - 1])
            a, b = f(x, i)
            np.testing.assert_array_equal(a, np.cumsum(x, axis=0))
            np.testing.assert_array_equal(b, np.take(x, i, axis=0))
    finally:
        unsubscribe()
    assert len(compiles) == 2
