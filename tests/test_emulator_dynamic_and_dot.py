"""The dynamic-shape and dot-operand parts of the NumPy-equivalence suite on backend="cuda-emulator":
slices whose length depends on a loop index (tests/test_symbolic_lengths.py: its forms, the
triangular solves, Cholesky, LU, every dtype, NaN in the padding, random loop bodies) and the
folded dot operands of tests/test_dot_operands.py (transposed and batched operands, outer
products with NumPy's zero signs). Those modules parametrize their own backends (cpu,
interpret); this one runs their functions on the rendered CUDA C, every program built in one
prebuild (the hypothesis examples are derandomized and drawn once in a stand-in pass first,
emulator.record_modules(stand_in=True), so they too are prebuilt), and every program's CUDA source
compiles with nvcc where it exists."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitkernel as jk
import test_dot_operands as dots
import test_symbolic_lengths as sym
from helpers import assert_matches_numpy
from jitkernel.backends.cuda import emulator
from cuda_corpus import assert_compiles_with_nvcc, needs_nvcc

pytestmark = [pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                 reason="backend='cuda-emulator' needs a host C++20 compiler (g++)"),
              pytest.mark.filterwarnings("ignore:invalid value encountered")]

EMU = "cuda-emulator"
N = sym.N


def _workloads() -> list:
    """(name, function, arguments, tolerance) of the symbolic-length programs."""
    out = [(f.__name__, f, (sym.A9, sym.X9), 1e-12) for f in sym.FORMS]
    low, b = sym._lower(7)
    out += [("trisolve", sym.trisolve, (low, b), 1e-12), ("back_solve", sym.back_solve, (low.T.copy(), b), 1e-12),
            ("cholesky", sym.cholesky, (sym._spd(7),), 1e-12), ("lu", sym.lu, (sym._spd(7),), 1e-12),
            ("lu_polybench", sym.lu_polybench, (sym._spd(6),), 1e-12)]
    for dtype in (np.float32, np.float64, np.int32, np.int64):
        out.append((f"dtypes-{np.dtype(dtype)}", _dtype_body(dtype), ((sym.A9 * 10).astype(dtype),
                                                                      (sym.X9 * 10).astype(dtype)),
                    1e-5 if dtype == np.float32 else None))
    return out


def _dtype_body(dtype):
    def f(a, x):  # test_symbolic_lengths.py::test_dtypes
        def body(i, c):
            x, s = c
            s = s + (a[i, :i].sum() + a[:i, i] @ x[:i] + (a[i + 1:, i] * 3).sum()).astype(dtype)
            x[i:] = x[i:] + a[i, i:]
            return x, s
        return sym.lax.fori_loop(0, N, body, (x, np.zeros((), dtype)))
    return f


def _nan_padding(a, x):  # test_symbolic_lengths.py::test_nan_in_the_padding_does_not_leak
    def body(i, s):
        row = a[i, :i + 1]
        return s + row.sum() + np.prod(row * 0.1 + 1) + row.max() + row.min() + a[i, :i] @ a[i, :i]
    return sym.lax.fori_loop(0, N, body, 0.0) + sym.lax.fori_loop(0, N // 2, lambda i, s: s + x[:i] @ x[:i], 0.0)


def _nan_padding_args() -> tuple:
    a = np.tril(sym.A9) + np.triu(np.full((N, N), np.nan), 1)
    a[0, N - 1] = np.inf
    x = sym.X9.copy()
    x[N // 2:] = np.nan
    return a, x


WORKLOADS = _workloads() + [("nan_padding", _nan_padding, _nan_padding_args(), 1e-12)]
_HYPOTHESIS = settings(max_examples=12, deadline=None, derandomize=True, database=None,
                       suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@_HYPOTHESIS
@given(sym.loop_bodies())
def _random_loop_bodies(p) -> None:
    """test_symbolic_lengths.py::test_random_bodies_with_affine_bounds_match_numpy on the emulator."""
    dt = p["dtype"]
    rng = np.random.default_rng(11)
    a = rng.uniform(-3, 3, (sym.M, sym.M)).astype(dt)
    x, y = rng.uniform(-3, 3, sym.M).astype(dt), rng.uniform(-3, 3, sym.M).astype(dt)
    f = sym._body_function(p)
    got = jk.jit(f, backend=EMU)(a.copy(), x.copy(), y.copy())
    tol = 1e-4 if dt == np.float32 else None
    assert_matches_numpy(got, f(a.copy(), x.copy(), y.copy()), rtol=tol, atol=tol)


@_HYPOTHESIS
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6), st.integers(1, 4), st.booleans(), st.booleans(),
       st.sampled_from([np.float32, np.float64]))
def _batched_transposed_operands(m, k, n, b, t_lhs, t_rhs, dtype) -> None:
    """test_dot_operands.py::test_batched_transposed_operands_hypothesis on the emulator."""
    rng = np.random.default_rng(m * 1000 + k * 100 + n * 10 + b)
    x = rng.standard_normal((b, k, m) if t_lhs else (b, m, k)).astype(dtype)
    y = rng.standard_normal((b, n, k) if t_rhs else (b, k, n)).astype(dtype)

    def f(x, y):
        return (np.swapaxes(x, 1, 2) if t_lhs else x) @ (np.swapaxes(y, 1, 2) if t_rhs else y)
    np.testing.assert_allclose(jk.jit(f, backend=EMU)(x, y), f(x, y), rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-6)


def _outer_product(dtype) -> tuple:
    rng = np.random.default_rng(4)
    return dots.special_values(rng, (3, 7, 1), dtype), dots.special_values(rng, (3, 1, 5), dtype)


def _transposed_dots() -> list:
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((24, 18)), rng.standard_normal((24, 10))
    g32, w32 = rng.standard_normal((16, 40)).astype(np.float32), rng.standard_normal((12, 40)).astype(np.float32)
    x3, y3 = rng.standard_normal((5, 3, 4)), rng.standard_normal((5, 6))
    return [("x.T @ g", lambda x, g: x.T @ g, (x, g), 1e-12), ("g @ w.T", lambda g, w: g @ w.T, (g32, w32), 2e-5),
            ("tensordot of a transpose", lambda x, y: np.tensordot(np.transpose(x, (0, 2, 1)), y, axes=([0], [0])),
             (x3, y3), 1e-12),
            ("x.T @ g, x.T + 1", lambda x, g: (x.T @ g, x.T + 1), (x[:8, :5], g[:8, :7]), 1e-12)]


DOTS = _transposed_dots()


def _run_everything() -> None:
    for _, f, args, tol in WORKLOADS:
        sym.run_both(f, *args, backend=EMU, rtol=tol, atol=tol)
    for _, f, args, tol in DOTS:
        assert_matches_numpy(jk.jit(f, backend=EMU)(*args), f(*args), rtol=tol, atol=tol)
    for dtype in (np.float32, np.float64):
        a, b = _outer_product(dtype)
        jk.jit(lambda a, b: a @ b, backend=EMU)(a, b)
    _random_loop_bodies()
    _batched_transposed_operands()


@pytest.fixture(scope="module")
def recorded() -> list:
    """Every program of the module, recorded in one stand-in pass and built in one prebuild."""
    with emulator.record_modules(stand_in=True) as modules:
        _run_everything()
    emulator.prebuild(modules)
    return modules


@pytest.mark.parametrize("name,f,args,tol", WORKLOADS, ids=[w[0] for w in WORKLOADS])
def test_symbolic_length_programs_match_numpy(recorded, name, f, args, tol) -> None:
    sym.run_both(f, *args, backend=EMU, rtol=tol, atol=tol)


def test_random_loop_bodies_match_numpy(recorded) -> None:
    _random_loop_bodies()


@pytest.mark.parametrize("name,f,args,tol", DOTS, ids=[d[0] for d in DOTS])
def test_folded_transposed_operands_match_numpy(recorded, name, f, args, tol) -> None:
    """Within rounding, not bit for bit: the CUDA tile kernel sums in its own order (BLAS too)."""
    assert_matches_numpy(jk.jit(f, backend=EMU)(*args), f(*args), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_outer_product_is_a_multiply_with_matmuls_zero_signs(recorded, dtype) -> None:
    a, b = _outer_product(dtype)
    assert dots.same_bits(jk.jit(lambda a, b: a @ b, backend=EMU)(a, b), np.matmul(a, b))


def test_batched_transposed_operands(recorded) -> None:
    _batched_transposed_operands()


def test_nothing_is_built_alone(recorded, monkeypatch) -> None:
    """The whole module again with the compiler forbidden: every program was prebuilt."""
    monkeypatch.setattr(emulator, "_compile", lambda *a: (_ for _ in ()).throw(AssertionError("built alone")))
    _run_everything()


@needs_nvcc
def test_every_program_compiles_with_nvcc(recorded) -> None:
    """The same translation units for the GPU (sm_90), as one nvcc run (include guards)."""
    assert_compiles_with_nvcc(recorded)
