"""Complex arrays on the CUDA renderer (backends/cuda/complex_ops.py): complex64/complex128
arguments and results as float (..., 2) views, the arithmetic complex lowering expands (the same
float operations the CPU backend compiles), complex sums, products and matmul rendered as
kernels, on `cuda-emulator` against NumPy; every program compiled by nvcc for sm_90 (one run)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk
from cuda_corpus import Case, assert_compiles_with_nvcc, module_of, needs_nvcc
from helpers import assert_matches_numpy, numpy_result
from jitkernel.backends.cuda import emulator

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")

RNG = np.random.default_rng(11)
SPECIALS = np.array([0, -0.0, 1, -1, np.inf, -np.inf, np.nan, 1e-300, 2.5, -3.5])


def _z(shape: tuple[int, ...], dt: str) -> np.ndarray:
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)


def _special_pairs(dt: str) -> np.ndarray:
    """Every pair of special parts (NaN, infinities, signed zeros, tiny, ordinary)."""
    re, im = np.meshgrid(SPECIALS, SPECIALS)
    out = np.empty(re.size, dt)
    out.real, out.imag = re.ravel(), im.ravel()
    return out


def arithmetic(z, w):
    return z * w, z / w, z + w, z - w, -z, np.conjugate(z), z * z, 1 / z


def magnitudes(z):
    return np.abs(z), np.sign(z), z.real * 2, z.imag - 1, np.isfinite(z), np.isnan(z)


def comparisons(z, w):
    return z == w, z != w, z < w, z >= w, np.maximum(z, w), np.minimum(z, w), np.where(z.real > 0, z, w)


def casts(x, z):
    return x.astype(z.dtype) * z, z.astype(np.complex128), (z * 1j).astype(np.complex64)


def reductions(z):
    return z.sum(axis=1), z.sum(axis=0), z.sum(), z.mean(axis=0), (z * 0.2).prod(axis=1), (z * 0.1 + 1).prod()


def product_3d(z):
    return (z * 0.5).prod(axis=(0, 2)), z.sum(axis=(0, 2))


def complex_matmul(a):
    return a @ a.T[:, :5], a @ np.conjugate(a.T), np.einsum("ij,kj->ik", a, np.conjugate(a))


def mixed_matmul(a, x):
    return a @ x


def returns_argument(z):
    return z, z.real


CASES = []
for dt in ("complex64", "complex128"):
    tol = 1e-5 if dt == "complex64" else 1e-12
    CASES += [
        Case(f"arith-{dt}", arithmetic, (_z((4, 33), dt), _z((4, 33), dt)), rtol=tol),
        Case(f"arith-specials-{dt}", arithmetic,
             (_special_pairs(dt), np.roll(_special_pairs(dt), 7)), rtol=tol),
        Case(f"magnitudes-specials-{dt}", magnitudes, (_special_pairs(dt),), rtol=tol),
        Case(f"compare-specials-{dt}", comparisons, (_special_pairs(dt), np.roll(_special_pairs(dt), 3))),
        Case(f"reductions-{dt}", reductions, (_z((5, 70), dt),), rtol=100 * tol),
        Case(f"product-3d-{dt}", product_3d, (_z((3, 4, 5), dt),), rtol=100 * tol),
        Case(f"matmul-{dt}", complex_matmul, (_z((17, 70), dt),), rtol=100 * tol),
        Case(f"matmul-real-rhs-{dt}", mixed_matmul, (_z((6, 9), dt), RNG.standard_normal((9, 5))), rtol=100 * tol),
        Case(f"casts-{dt}", casts, (RNG.standard_normal((3, 8)).astype(np.float32), _z((3, 8), dt)), rtol=tol),
        Case(f"returns-argument-{dt}", returns_argument, (_z((2, 3), dt),)),
    ]
def transcendental(z):
    return np.exp(z), np.sqrt(z), np.log(z), np.exp(z * 0.5) + 1


def _extremes(dt: str) -> np.ndarray:
    """Every pair of special parts, extremes (near overflow and underflow, subnormals, |z| near
    1: the branches of glibc's algorithms) and random magnitudes over 26 decades."""
    info = np.finfo("float32" if dt == "complex64" else "float64")
    parts = np.array([0, -0.0, 1, -1, np.inf, -np.inf, np.nan, 2.5, -3.5, float(info.max), -float(info.max) / 3,
                      float(info.tiny), float(info.tiny) / 64, 0.99, 1.01, 0.7, 0.71, 1.0 + float(info.eps), 80, 700,
                      -700])
    with np.errstate(over="ignore"):
        re, im = (a.ravel().astype(info.dtype) for a in np.meshgrid(parts, parts))
    grid = np.empty(re.size, dt)
    grid.real, grid.imag = re, im
    mags = np.exp(RNG.uniform(-30, 30, (2, 200)))
    rand = (RNG.standard_normal(200) * mags[0] + 1j * RNG.standard_normal(200) * mags[1]).astype(dt)
    return np.concatenate([grid, rand])


def max_min_arg(z):
    return (z.max(axis=1), z.min(axis=0), np.argmax(z, axis=1), np.argmin(z, axis=0), np.argmax(z), z.max(),
            np.argmin(z[:, ::-1], axis=1))


def _lexicographic_ties(dt: str, nan: bool) -> np.ndarray:
    """Parts drawn from few values, so that ties (equal values, zeros of both signs) are
    common: which of them NumPy keeps is decided by position."""
    values = np.array([0, -0.0, 1, -1, np.inf, -np.inf, 2.5] + ([np.nan] if nan else []))
    z = np.empty((4, 50), dt)
    z.real, z.imag = RNG.choice(values, (4, 50)), RNG.choice(values, (4, 50))
    return z


MAX_MIN = [Case(f"max-min-arg-{dt}-{'nan' if nan else 'ties'}", max_min_arg, (_lexicographic_ties(dt, nan),))
           for dt in ("complex64", "complex128") for nan in (False, True)]
CASES += MAX_MIN
TRANSCENDENTAL = [Case(f"transcendental-{dt}", transcendental, (_extremes(dt),)) for dt in ("complex64", "complex128")]
CASES += TRANSCENDENTAL
CASES.append(Case("sum-nan-inf-complex128", lambda z: (z.sum(axis=1), z.sum()),
                  (_special_pairs("complex128").reshape(10, 10),)))


@pytest.fixture(scope="module")
def modules() -> list:
    built = [module_of(c) for c in CASES]
    emulator.prebuild(built)  # one host-compiler run for the module
    return built


def assert_matches(got, expected, rtol: float | None = None) -> None:
    """assert_matches_numpy, complex leaves compared part by part (type, dtype and shape first;
    NaN and infinity positions exactly; values within rtol of the leaf's largest magnitude)."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_matches(g, e, rtol)
        return
    if np.asarray(expected).dtype.kind != "c":
        assert_matches_numpy(got, expected, rtol=rtol)
        return
    assert isinstance(got, np.generic) == isinstance(expected, np.generic), (type(got), type(expected))
    g, e = np.asarray(got), np.asarray(expected)
    assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
    finite = np.abs(e[np.isfinite(e)])
    tol = (rtol or 1e-6) * max(float(finite.max()) if finite.size else 1.0, 1e-30)
    for part in (np.real, np.imag):
        assert_matches_numpy(part(got), part(expected), rtol=rtol or 1e-6, atol=tol)


def run(fn, *args):
    return jk.jit(fn, backend="cuda-emulator")(*args)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_complex_matches_numpy(modules, case: Case) -> None:
    with np.errstate(all="ignore"):
        got = run(case.fn, *case.args)
        expected = numpy_result(case.fn, *case.args)
    assert_matches(got, expected, rtol=case.rtol)


def test_complex_steps_are_kernels_not_library_calls(modules) -> None:
    """Sums, products and matmul of complex values are kernels of the module (no complex_library
    step is left to the host)."""
    case = next(c for c in CASES if c.name == "reductions-complex64")
    m = module_of(case)
    kinds = {launch.kind for ls in m.launches for launch in ls}
    assert {"rows", "partial", "final"} <= kinds or {"rows", "columns"} & kinds
    assert "complex reduce_prod over axes" in m.kernels
    mm = module_of(next(c for c in CASES if c.name == "matmul-complex128"))
    assert "complex dot_general" in mm.kernels and "atomic" not in mm.kernels


@needs_nvcc
def test_every_complex_program_compiles_with_nvcc(modules) -> None:
    assert_compiles_with_nvcc(modules)


@pytest.mark.parametrize("case", TRANSCENDENTAL, ids=repr)
def test_exp_sqrt_log_match_numpy_element_by_element(modules, case: Case) -> None:
    """Each part of each element within a few ulps of NumPy (glibc's cexp/csqrt/clog), NaN where
    NumPy has NaN, infinities and the sign of every zero as NumPy's: C99 Annex G."""
    (z,) = case.args
    with np.errstate(all="ignore"):
        got, expected = run(case.fn, z), numpy_result(case.fn, z)
    rtol = 1e-5 if z.dtype == np.complex64 else 1e-13
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        for part in (np.real, np.imag):
            gp, ep = part(g).astype(np.float64), part(e).astype(np.float64)
            bad = (np.isnan(gp) != np.isnan(ep)) | (np.signbit(gp) != np.signbit(ep)) & ~np.isnan(ep) | \
                ~np.isnan(ep) & ~np.isclose(gp, ep, rtol=rtol, atol=0)
            assert not bad.any(), [(z[k], g[k], e[k]) for k in np.flatnonzero(bad)[:5]]


@pytest.mark.parametrize("case", MAX_MIN, ids=repr)
def test_max_min_argmax_argmin_follow_numpy_exactly(modules, case: Case) -> None:
    """The first element with a NaN part, else the lexicographically largest (smallest), the
    first of equal ones: the same element as NumPy, so the same bits (zero signs included)."""
    (z,) = case.args
    with np.errstate(all="ignore"):
        got, expected = run(case.fn, z), numpy_result(case.fn, z)
    for g, e in zip(got, expected):
        g, e = np.asarray(g), np.asarray(e)
        assert g.dtype == e.dtype and g.shape == e.shape
        if e.dtype.kind == "c":
            for part in (np.real, np.imag):
                np.testing.assert_array_equal(part(g), part(e))
                np.testing.assert_array_equal(np.signbit(part(g)) | np.isnan(part(e)),
                                              np.signbit(part(e)) | np.isnan(part(e)))
        else:
            np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("fn, name", [(lambda z: np.sort(z, axis=1), "sort"),
                                      (lambda z: np.cumprod(z, axis=1), "accumulate")], ids=["sort", "cumprod"])
def test_complex_functions_without_a_gpu_form_raise_naming_them(fn, name: str) -> None:
    with pytest.raises(jk.UnsupportedOperationError, match=f"complex numpy.{name} .*backend='cpu'"):
        run(fn, _z((3, 4), "complex64"))


def sum_and_prod(z):
    return z.sum(axis=1), z.sum(axis=0), z.sum(), (z * 0.3 + 0.8).prod(axis=1), (z * 0.3 + 0.8).prod(axis=0)


def sums(z):
    return z.sum(axis=1), z.sum(axis=0), z.sum()


HYPOTHESIS_SHAPE = (5, 37)
CASES += [Case(f"hypothesis-{f.__name__}-{dt}", f, (_z(HYPOTHESIS_SHAPE, dt),))
          for dt in ("complex64", "complex128") for f in (sum_and_prod, sums)]

_parts = st.one_of(st.floats(-1e3, 1e3), st.sampled_from([np.nan, np.inf, -np.inf, -0.0]))


@settings(max_examples=25, deadline=None)
@given(data=st.data(), dt=st.sampled_from(["complex64", "complex128"]), specials=st.booleans())
def test_complex_sum_and_prod_hypothesis(modules, data, dt: str, specials: bool) -> None:
    """Values (NaN, infinities, signed zeros in the sums) at one prebuilt shape, so no example
    costs a compiler run; shapes are the cases' job. Products get finite values: where an
    infinity meets a zero, NaN parts depend on the order of the products (module docstring of
    complex_ops)."""
    n = int(np.prod(HYPOTHESIS_SHAPE))
    parts = _parts if specials else st.floats(-2, 2)
    re = np.array(data.draw(st.lists(parts, min_size=n, max_size=n)))
    im = np.array(data.draw(st.lists(parts, min_size=n, max_size=n)))
    z = np.empty(n, dt)
    z.real, z.imag = re, im
    z = z.reshape(HYPOTHESIS_SHAPE)
    f = sums if specials else sum_and_prod
    with np.errstate(all="ignore"):
        expected = numpy_result(f, z)
    assert_matches(run(f, z), expected, rtol=1e-4 if dt == "complex64" else 1e-11)


@pytest.mark.parametrize("name", ["max-min-arg-complex128-nan", "reductions-complex64", "matmul-complex128"])
def test_results_do_not_depend_on_the_launch_shape(modules, name: str) -> None:
    """Block trees with positions, per-block sums and tiles: any block size (a multiple of 32)
    and grid give NumPy's element (max/min/arg: the same bits)."""
    from cuda_corpus import kernel_program
    from jitkernel.backends.cuda.render import render_program
    case = next(c for c in CASES if c.name == name)
    kp = kernel_program(case)
    module = render_program(kp)
    lib = emulator.library(module)
    policies = [emulator.LaunchPolicy(32, 1), emulator.LaunchPolicy(96, 7), emulator.LaunchPolicy(256, 2)]
    with np.errstate(all="ignore"):
        expected = numpy_result(case.fn, *case.args)
    for policy in policies:
        outs = emulator.EmulatedProgram(kp, module, lib, policy)(list(case.args))
        outs = tuple(o[()] if o.ndim == 0 else o for o in outs)
        assert_matches(outs, expected, rtol=case.rtol)
        if name.startswith("max-min"):
            for g, e in zip(outs, expected):
                assert np.asarray(g).tobytes() == np.asarray(e).tobytes()  # the very element NumPy picks
