"""dot_general on the CUDA renderer (backends/cuda/render_matmul.py): the tiled matmul kernel
on `cuda-emulator` against NumPy (edges that are not multiples of a tile, batches, transposed
operands through strides, every dtype), results independent of the grid, bitwise deterministic,
and every program compiled by nvcc for sm_90 (one nvcc run for the module)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk
from cuda_corpus import Case, assert_compiles_with_nvcc, kernel_program, module_of, needs_nvcc
from helpers import assert_matches_numpy, numpy_result
from jitkernel.backends.cuda import emulator
from jitkernel.backends.cuda.executor import step_kind
from jitkernel.backends.cuda.render import render_program
from jitkernel.backends.cuda.render_matmul import LARGE, SMALL, canonical, offset_expr

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")

RNG = np.random.default_rng(7)


def _operand(shape: tuple[int, ...], dt: str) -> np.ndarray:
    dt = np.dtype(dt)
    if dt.kind == "b":
        return RNG.random(shape) < 0.3
    if dt.kind in "iu":
        info = np.iinfo(dt)
        # large values: the products and sums wrap around, as NumPy's integer matmul does
        return RNG.integers(max(info.min, -2**40), min(info.max, 2**40), shape, endpoint=True).astype(dt)
    return RNG.standard_normal(shape).astype(dt)


def matmul(x, y):
    return x @ y


def matmul_epilogue(x, y):
    return np.tanh(x @ y + 1.0).sum(axis=1)


def transposed_both(x, y):
    return x.T @ y.T


def batched_transposed(x, y):
    return np.swapaxes(x, 1, 2) @ y


def einsum_two_contractions(x, y):
    return np.einsum("bikl,bklj->bij", x, y)


def tensordot_batchless(x, y):
    return np.tensordot(x, y, axes=([0, 2], [1, 0]))


def gram(x, y):
    return x @ x.T, y.T @ y


def vector_dot(x, y):
    return x @ y, np.dot(x, x)


CASES = [Case(f"mm-{dt}-70x33x65", matmul, (_operand((70, 33), dt), _operand((33, 65), dt)),
              rtol=2e-2 if dt == "float16" else None)
         for dt in ("float32", "float64", "float16", "int8", "uint8", "int16", "int32", "uint32", "int64",
                    "uint64", "bool")]
CASES += [
    Case("mm-f32-large-tile-520x9x515", matmul, (_operand((520, 9), "float32"), _operand((9, 515), "float32"))),
    Case("mm-f32-exact-tile-64x32x64", matmul, (_operand((64, 32), "float32"), _operand((32, 64), "float32"))),
    Case("mm-f64-k0", matmul, (np.ones((5, 0)), np.ones((0, 4)))),
    Case("mm-f64-m0", matmul, (np.ones((0, 3)), np.ones((3, 4)))),
    Case("mm-f32-epilogue", matmul_epilogue, (_operand((17, 40), "float32"), _operand((40, 23), "float32"))),
    Case("mm-f64-transposed-both", transposed_both, (_operand((19, 31), "float64"), _operand((7, 19), "float64"))),
    Case("mm-f64-batched-transposed", batched_transposed,
         (_operand((3, 21, 10), "float64"), _operand((3, 21, 66), "float64"))),
    Case("mm-f32-broadcast-batch", matmul, (_operand((2, 1, 5, 7), "float32"), _operand((3, 7, 4), "float32"))),
    Case("mm-f64-einsum-two-contractions", einsum_two_contractions,
         (_operand((2, 5, 3, 4), "float64"), _operand((2, 3, 4, 6), "float64"))),
    Case("mm-f64-tensordot", tensordot_batchless, (_operand((4, 6, 5), "float64"), _operand((5, 4, 3), "float64"))),
    Case("mm-f32-same-operand-twice", gram, (_operand((9, 14), "float32"), _operand((14, 5), "float32"))),
    Case("mm-f32-vector", vector_dot, (_operand((37,), "float32"), _operand((37, 12), "float32"))),
    Case("mm-f32-nan-inf", matmul, (np.array([[np.inf, 1.0], [np.nan, 0.0], [1.0, 2.0]], np.float32),
                                    np.array([[0.0, 1.0, 2.0], [3.0, np.inf, -np.inf]], np.float32))),
]


@pytest.fixture(scope="module")
def modules() -> list:
    built = [module_of(c) for c in CASES]
    emulator.prebuild(built)  # one host-compiler run for the module
    return built


def run(fn, *args):
    return jk.jit(fn, backend="cuda-emulator")(*args)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_matmul_matches_numpy(modules, case: Case) -> None:
    with np.errstate(all="ignore"):
        got = run(case.fn, *case.args)
        expected = numpy_result(case.fn, *case.args)
    assert_matches_numpy(got, expected, rtol=case.rtol)


def test_every_step_is_a_tile_kernel(modules) -> None:
    """No dot_general step is left to a library: each is one `tiles` launch of the fixed block
    size, the epilogue work stays in the following kernels (fusion's decision, as on the CPU)."""
    for case, m in zip(CASES, modules):
        kp = kernel_program(case)
        kinds = [[launch.kind for launch in ls] for ls in m.launches]
        dots = [n for n, s in enumerate(kp.steps) if getattr(s, "prim", None) == "dot_general"]
        assert dots, case.name
        for n in dots:
            assert step_kind(m.launches[n]) == "tiles"  # run by matmul_step.run_tiles (executor.STEP_RUNNERS)
            (launch,) = m.launches[n]
            assert launch.kind == "tiles" and launch.block_size in (LARGE.threads, SMALL.threads), kinds
        assert "atomic" not in m.kernels
    big = next(m for c, m in zip(CASES, modules) if c.name == "mm-f32-large-tile-520x9x515")
    assert "128x128 tiles" in big.kernels


@needs_nvcc
def test_every_matmul_program_compiles_with_nvcc(modules) -> None:
    # the shape pool's kernels differ from the named cases' only in their constants: three of them
    assert_compiles_with_nvcc([m for c, m in zip(CASES, modules) if c not in POOL] + modules[-3:])


@pytest.mark.parametrize("name", ["mm-f32-large-tile-520x9x515", "mm-f64-batched-transposed", "mm-int8-70x33x65"])
def test_results_do_not_depend_on_the_grid_and_are_deterministic(modules, name: str) -> None:
    """Grid-stride over tiles, one writer per output, no atomics: any grid gives the same bits."""
    case = next(c for c in CASES if c.name == name)
    kp = kernel_program(case)
    module = render_program(kp)
    lib = emulator.library(module)
    outs = [emulator.EmulatedProgram(kp, module, lib, emulator.LaunchPolicy(64, g))(list(case.args))[0].tobytes()
            for g in (1, 2, 5, 5)]
    assert len(set(outs)) == 1


def test_canonical_form_flattens_groups_by_strides() -> None:
    # lhs (2, 5, 3, 4) contracting (2, 3), batch (0,): the contracting run (3, 4) is one
    # contiguous group of stride 1; the free dim has stride 12.
    s = canonical((2, 5, 3, 4), (2, 3, 4, 6), {"contracting": ((2, 3), (1, 2)), "batch": ((0,), (0,))})
    assert (s.batch, s.m, s.k, s.n) == (2, 5, 12, 6)
    assert s.lhs == {"b": [(2, 60)], "f": [(5, 12)], "c": [(12, 1)]}
    assert s.rhs == {"b": [(2, 72)], "f": [(6, 1)], "c": [(12, 6)]}
    # a group that is not contiguous keeps its dimensions: x // inner % size * stride
    assert offset_expr("k", [(3, 1), (4, 3)]) == "(k / 4LL) + (k % 4LL) * 3LL"


def _shape_pool(n: int) -> list[tuple]:
    """Random small matmul problems (batch, m, k, n, lhs transposed, rhs transposed, dtype):
    drawn once, rendered and built with the module's other programs (one compiler run), so
    the hypothesis test below costs no compiler run per example."""
    rng = np.random.default_rng(2026)
    return [(int(rng.integers(0, 3)), int(rng.integers(1, 71)), int(rng.integers(0, 21)), int(rng.integers(1, 71)),
             bool(rng.integers(2)), bool(rng.integers(2)), str(rng.choice(["float32", "float64", "int32"])))
            for _ in range(n)]


def _pool_case(b: int, m: int, k: int, n: int, lhs_t: bool, rhs_t: bool, dt: str) -> Case:
    batch = (b + 1,) if b else ()
    x = _operand(batch + ((k, m) if lhs_t else (m, k)), dt)
    y = _operand(batch + ((n, k) if rhs_t else (k, n)), dt)

    def f(x, y):
        return (np.swapaxes(x, -1, -2) if lhs_t else x) @ (np.swapaxes(y, -1, -2) if rhs_t else y)

    return Case(f"pool-{b}-{m}-{k}-{n}-{lhs_t}-{rhs_t}-{dt}", f, (x, y))


POOL = [_pool_case(*p) for p in _shape_pool(24)]
CASES += POOL


@settings(max_examples=24, deadline=None)
@given(case=st.sampled_from(POOL), seed=st.integers(0, 2**32 - 1))
def test_matmul_shapes_hypothesis(modules, case: Case, seed: int) -> None:
    """Any shape (edges, K = 0, batches), either operand transposed through strides, any values."""
    rng = np.random.default_rng(seed)
    x, y = (rng.permutation(a.reshape(-1)).reshape(a.shape) for a in case.args)
    assert_matches_numpy(run(case.fn, x, y), numpy_result(case.fn, x, y))
