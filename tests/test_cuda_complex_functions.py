"""Complex power, trigonometric and hyperbolic functions, log10/log2/log1p/expm1/exp2 on the
CUDA renderer (backends/cuda/complex_functions.py), on `cuda-emulator` against NumPy element by
element: NaN where NumPy has NaN, infinities and the sign of every zero as NumPy's, finite parts
within a few ulps, over a grid of special and extreme parts (NaN, +-inf, +-0, subnormals, near
overflow, the scaling thresholds of glibc's algorithms) and random values; every kernel compiled
by nvcc for sm_90 (one run)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk
from cuda_corpus import Case, assert_compiles_with_nvcc, module_of, needs_nvcc
from jitkernel.backends.cuda import emulator

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")

RNG = np.random.default_rng(2026)
UNARY = ("sin", "cos", "tan", "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh",
         "exp", "log", "sqrt", "log10", "log2", "log1p", "expm1", "exp2", "rint")
ULPS = 2  # finite parts: at most this many units in the last place from NumPy's (measured: 0)


def functions(z):
    return tuple(getattr(np, name)(z) for name in UNARY)


def power(z, w):
    return (z ** w,)


def _parts(dt: str) -> np.ndarray:
    """Special and extreme parts: the branch points of glibc's algorithms (t = 88/709 for
    exp scaling, 44/354 for tanh, |y| = 1 for tanh's zero sign, the regions of casinh at 0.5,
    1, 1.5 and eps, 1/eps and 16/eps for catanh, |z| near 1 for __x2y2m1, subnormals, near
    overflow, rint's halves)."""
    info = np.finfo("float32" if dt == "complex64" else "float64")
    return np.array([0, -0.0, 1, -1, np.inf, -np.inf, np.nan, 2.5, -3.5, float(info.max), -float(info.max) / 3,
                     float(info.tiny), float(info.tiny) / 64, 0.99, 1.01, 0.7, 1e-8, 40, 80, 89, 200, 360, 700,
                     -710, 1500, 0.5, 1.5, 1.25, 0.8, 0.3, 0.75, float(info.eps) / 16, float(info.eps) ** 2 / 2,
                     2 / float(info.eps), 32 / float(info.eps), -2.5], dtype=info.dtype)


def _grid(re: np.ndarray, im: np.ndarray, dt: str) -> np.ndarray:
    a, b = np.meshgrid(re, im)
    out = np.empty(a.size, dt)
    out.real, out.imag = a.ravel(), b.ravel()
    return out


def _random(n: int, dt: str, decades: float) -> np.ndarray:
    mags = np.exp(RNG.uniform(-decades, decades, (2, n)))
    return (RNG.standard_normal(n) * mags[0] + 1j * RNG.standard_normal(n) * mags[1]).astype(dt)


def _arguments(dt: str) -> np.ndarray:
    with np.errstate(over="ignore"):
        parts = _parts(dt)
    return np.concatenate([_grid(parts, parts, dt), _random(300, dt, 30), _random(300, dt, 1.5)])


def _power_arguments(dt: str) -> tuple[np.ndarray, np.ndarray]:
    """Every base of a special grid against exponents that take each path of npy_cpow: zero,
    1, 2, 3, other integers in (-100, 100) of both signs, +-100 and beyond, non-integers,
    complex, infinite and NaN parts; then random pairs."""
    info = np.finfo("float32" if dt == "complex64" else "float64")
    parts = np.array([0, -0.0, 1, -1, np.inf, -np.inf, np.nan, 2.5, -3.5, float(info.max), float(info.tiny), 0.5,
                      1e-8, 30])
    exponents = np.array([0, -0.0, 1, 2, 3, -1, -2, -3, 4, 7, -5, 99, -99, 100, -100, 0.5, -0.5, 1.5, 2.5j, 1 + 1j,
                          np.inf, -np.inf, np.nan, complex(2, np.nan), complex(np.inf, 1), complex(0, np.inf), 1e10,
                          -7.25, complex(2, -0.0), complex(0, -0.0)])
    base = _grid(parts, parts, "complex128")
    b, e = (a.ravel().astype(dt) for a in np.meshgrid(base, exponents))
    rb, re = _random(400, dt, 2), (RNG.standard_normal(400) * 4 + 1j * RNG.standard_normal(400)).astype(dt)
    return np.concatenate([b, rb]), np.concatenate([e, re])


CASES = [Case(f"functions-{dt}", functions, (_arguments(dt),)) for dt in ("complex64", "complex128")]
CASES += [Case(f"power-{dt}", power, _power_arguments(dt)) for dt in ("complex64", "complex128")]
HYPOTHESIS_N = 64
CASES += [Case(f"hypothesis-{f.__name__}-{dt}", f, tuple(np.zeros(HYPOTHESIS_N, dt) for _ in range(n)))
          for dt in ("complex64", "complex128") for f, n in ((functions, 1), (power, 2))]


@pytest.fixture(scope="module")
def modules() -> list:
    built = [module_of(c) for c in CASES]
    emulator.prebuild(built)  # one host-compiler run for the module
    return built


def run(fn, *args):
    return jk.jit(fn, backend="cuda-emulator")(*args)


def mismatches(got: np.ndarray, expected: np.ndarray, ulps: int = ULPS) -> np.ndarray:
    """Positions where a part differs from NumPy's: NaN against non-NaN, another sign (zeros
    and infinities included), or a finite value more than `ulps` units in the last place away."""
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape, expected.shape)
    bad = np.zeros(got.shape, bool)
    for part in (np.real, np.imag):
        g, e = part(got), part(expected)
        nan = np.isnan(e)
        with np.errstate(all="ignore"):
            far = np.abs(g.astype(np.float64) - e.astype(np.float64)) > ulps * np.spacing(np.abs(e)).astype(np.float64)
        bad |= (np.isnan(g) != nan) | ~nan & ((np.signbit(g) != np.signbit(e)) | (np.isinf(g) != np.isinf(e)) | far)
    return bad


def assert_like_numpy(fn, args: tuple, names: tuple[str, ...]) -> None:
    with np.errstate(all="ignore"):
        got, expected = run(fn, *args), fn(*args)
    for name, g, e in zip(names, got, expected):
        bad = mismatches(g, e)
        where = np.flatnonzero(bad)[:5]
        assert not bad.any(), (name, [(tuple(a[k] for a in args), g[k], e[k]) for k in where])


@pytest.mark.parametrize("case", CASES[:2], ids=repr)
def test_functions_match_numpy_element_by_element(modules, case: Case) -> None:
    """sin ... exp2 at every pair of special/extreme parts and random values: Annex G special
    cases exactly, finite parts within ULPS."""
    assert_like_numpy(case.fn, case.args, UNARY)


@pytest.mark.parametrize("case", CASES[2:4], ids=repr)
def test_power_matches_numpy_element_by_element(modules, case: Case) -> None:
    """npy_cpow's paths: 0 and 1 exponents, zero bases, repeated squaring with NumPy's
    rounding and 1/z**n, the C library's cpow with C99's product (NaN recovery)."""
    assert_like_numpy(case.fn, case.args, ("power",))


def test_integer_powers_are_numpys_products_bit_for_bit(modules) -> None:
    """Integral exponents take npy_cpow's repeated squaring: rounding products that an FMA
    would change; the very bits of NumPy's result."""
    case = CASES[3]
    z, w = case.args
    integral = (w.imag == 0) & (np.abs(w.real) < 100) & (w.real == np.round(w.real)) & (w.real != 0)
    with np.errstate(all="ignore"):
        got, expected = run(power, z, w)[0][integral], power(z, w)[0][integral]
    assert integral.sum() > 1000
    same = (got.view(np.float64) == expected.view(np.float64)) | np.isnan(expected.view(np.float64))
    where = np.flatnonzero(~same.reshape(-1, 2).all(axis=1))[:5]
    assert same.all(), [(z[integral][k], w[integral][k], got[k], expected[k]) for k in where]


_part = st.one_of(st.floats(-30, 30), st.floats(allow_nan=True, allow_infinity=True, width=32),
                  st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0]))


def _draw(data, dt: str) -> np.ndarray:
    re = np.array(data.draw(st.lists(_part, min_size=HYPOTHESIS_N, max_size=HYPOTHESIS_N)))
    im = np.array(data.draw(st.lists(_part, min_size=HYPOTHESIS_N, max_size=HYPOTHESIS_N)))
    z = np.empty(HYPOTHESIS_N, dt)
    with np.errstate(over="ignore"):
        z.real, z.imag = re, im
    return z


@settings(max_examples=25, deadline=None)
@given(data=st.data(), dt=st.sampled_from(["complex64", "complex128"]))
def test_functions_and_power_hypothesis(modules, data, dt: str) -> None:
    """Drawn parts (any float, NaN, infinities, signed zeros) at one prebuilt shape, so no
    example costs a compiler run."""
    z = _draw(data, dt)
    assert_like_numpy(functions, (z,), UNARY)
    w = _draw(data, dt)
    w.imag[::2] = 0  # half the exponents real: npy_cpow's integer and real paths
    w.real[::4] = np.round(w.real[::4].real)
    assert_like_numpy(power, (z, w), ("power",))


@needs_nvcc
def test_every_complex_function_compiles_with_nvcc(modules) -> None:
    assert_compiles_with_nvcc(modules)


@pytest.mark.parametrize("fn, name", [(lambda z: np.sort(z, axis=1), "sort"),
                                      (lambda z: np.cumprod(z, axis=0), "accumulate")], ids=["sort", "cumprod"])
def test_complex_steps_without_a_kernel_still_raise_naming_them(fn, name: str) -> None:
    """What has no GPU form is refused naming it, never approximated or run on the host."""
    z = (RNG.standard_normal((3, 4)) + 1j).astype(np.complex64)
    with pytest.raises(jk.UnsupportedOperationError, match=f"complex numpy.{name} .*backend='cpu'"):
        run(fn, z)


def test_power_with_broadcast_exponent_and_real_scalar(modules) -> None:
    """A real or broadcast exponent reaches the kernel as a complex operand of the result's
    shape (the lowering materialises it)."""
    z = (RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))).astype(np.complex128)
    for fn in (lambda z: z ** 1.5 + z ** -3, lambda z: z[:, :1] ** z[:1, :]):
        with np.errstate(all="ignore"):
            got, expected = run(fn, z), fn(z)
        assert not mismatches(got, expected).any()
