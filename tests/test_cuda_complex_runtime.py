"""Complex programs on `backend="cuda"` (docs/gpu.md, "Complex numbers on the GPU"), run over the
emulated GPU (`emulate_gpu`): complex DeviceArrays in and out are float (..., 2) views of the
same device buffer (no copy), results match NumPy, and complex DeviceArrays chain between calls
and into loops without a round trip through the host."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk
from complex_compare import assert_matches
from cuda_corpus import Case, kernel_program, module_of
from jitkernel import events, lax
from jitkernel.backends.cuda import emulator
from jitkernel.device_array import DeviceArray, emulate_gpu

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="the emulated GPU needs a host C++20 compiler (g++)")

RNG = np.random.default_rng(29)


def _z(shape, dt="complex128"):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)


Z = _z((5, 7))
SHAPES = [(), (1,), (4,), (3, 5), (2, 1, 4)]


def round_trip(z):
    return z * z - z
W = _z((7, 3))


@pytest.fixture(scope="module", autouse=True)
def prebuilt() -> None:
    """The fixed programs' kernels in one host compiler run (emulator.prebuild)."""
    cases = [Case(f"{fn.__name__}-{dt}", fn, (Z.astype(dt), W.astype(dt)))
             for fn in (arithmetic, library_steps) for dt in ("complex64", "complex128")]
    cases += [Case("scale", lambda z: z * (2 - 1j), (Z,)), Case("sum", lambda z: (z * z).sum(), (Z,))]
    cases += [Case(f"round-trip-{sh}-{dt}", round_trip, (_z(sh, dt),)) for sh in SHAPES
              for dt in ("complex64", "complex128")]
    emulator.prebuild([module_of(c) for c in cases])


@pytest.fixture
def gpu():
    with emulate_gpu() as g:
        yield g


def host(d):
    a = np.asarray(d)
    return a[()] if a.ndim == 0 else a


def arithmetic(z, w):
    return z * w[0, 0] + np.conj(z) / (1 + 2j), np.abs(z), z.real * 2


def library_steps(z, w):
    """Complex library steps of the GPU: a matmul (tile kernel), exp, a complex sum."""
    return z @ w, np.exp(z * 0.5), (z * z).sum(), (z * 1j).sum(axis=0)


@pytest.mark.parametrize("fn", [arithmetic, library_steps], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_programs_match_numpy(gpu, fn, dt) -> None:
    z, w = Z.astype(dt), W.astype(dt)
    got = jk.jit(fn, backend="cuda")(z, w)
    assert all(isinstance(g, DeviceArray) and g.device == gpu for g in got)
    rtol = 1e-4 if dt == "complex64" else 1e-10
    assert_matches(tuple(host(g) for g in got), fn(z, w), rtol=rtol)


def test_complex_results_are_views_of_the_result_buffer_and_arguments_are_not_copied(gpu) -> None:
    """A complex result is the packed float buffer seen as complex (same memory), and a complex
    DeviceArray argument is read in place: no host->device transfer for it."""
    f = jk.jit(lambda z: z * (2 - 1j), backend="cuda")
    d = f(Z)
    assert d.dtype == np.complex128 and d.shape == Z.shape
    assert d._buffer.dtype == np.complex128 and d._buffer.base is not None  # a view, not a copy
    seen = []
    stop = events.subscribe(seen.append)
    try:
        e = f(d)
    finally:
        stop()
    assert not [ev for ev in seen if isinstance(ev, events.TransferEvent) and ev.direction == "host->device"]
    np.testing.assert_allclose(np.asarray(e), Z * (2 - 1j) * (2 - 1j), rtol=1e-12)


def test_device_put_complex_into_a_complex_loop(gpu) -> None:
    d = jk.device_put(Z, gpu)
    f = jk.jit(lambda z, n: lax.fori_loop(0, n, lambda i, c: c * (0.5 + 0.5j) + z, z), backend="cuda")
    got = f(d, np.int64(4))
    c = Z.copy()
    for _ in range(4):
        c = c * (0.5 + 0.5j) + Z
    assert isinstance(got, DeviceArray) and got.dtype == np.complex128
    np.testing.assert_allclose(np.asarray(got), c, rtol=1e-12)


def test_a_complex_argument_of_another_dtype_goes_through_the_host(gpu) -> None:
    """A complex64 DeviceArray handed to a complex128 program is converted by NumPy's rules on the
    host, never its bytes reinterpreted; one of the program's dtype is viewed in place."""
    from jitkernel.backends.cuda.device_complex import packed_arguments
    kp = kernel_program(Case("scale", lambda z: z * (2 - 1j), (Z,)))
    d64 = jk.device_put(Z.astype(np.complex64), gpu)
    (packed,) = packed_arguments(kp, [d64], gpu)
    assert isinstance(packed, np.ndarray) and packed.dtype == np.float64 and packed.shape == Z.shape + (2,)
    np.testing.assert_array_equal(packed[..., 0] + 1j * packed[..., 1], Z.astype(np.complex64))
    d128 = jk.device_put(Z, gpu)
    (same,) = packed_arguments(kp, [d128], gpu)
    assert isinstance(same, DeviceArray) and same.dtype == np.float64 and same.shape == Z.shape + (2,)
    assert np.shares_memory(same._buffer, d128._buffer)


def test_zero_d_complex_result(gpu) -> None:
    got = jk.jit(lambda z: (z * z).sum(), backend="cuda")(Z)
    assert got.shape == () and got.dtype == np.complex128
    np.testing.assert_allclose(complex(np.asarray(got)), (Z * Z).sum(), rtol=1e-12)


@settings(max_examples=15, deadline=None)
@given(shape=st.sampled_from(SHAPES), dt=st.sampled_from(["complex64", "complex128"]), seed=st.integers(0, 99))
def test_any_shape_round_trips(shape, dt, seed) -> None:
    """Shapes from a prebuilt set (a new shape is one host compile), any values."""
    r = np.random.default_rng(seed)
    z = (r.standard_normal(shape) + 1j * r.standard_normal(shape)).astype(dt)
    with emulate_gpu():
        got = jk.jit(round_trip, backend="cuda")(z)
        assert got.dtype == np.dtype(dt) and got.shape == z.shape
        assert_matches(host(got), z * z - z, rtol=1e-4 if dt == "complex64" else 1e-12)
