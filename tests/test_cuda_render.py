"""The CUDA renderer: every program of the corpus (tests/cuda_corpus.py) renders to one
self-contained translation unit that nvcc compiles for sm_90 (one nvcc run for the whole
corpus), steps it does not render raise naming the step, and `backend="cuda"` without PyCUDA,
driver or device says which is missing."""
from __future__ import annotations

import re

import numpy as np
import pytest

import jitkernel as jk
from cuda_corpus import all_cases, assert_compiles_with_nvcc, kernel_program, module_of, needs_nvcc
from jitkernel.backends.cuda import missing_for_cuda

CASES = all_cases()


@pytest.fixture(scope="module")
def modules() -> list:
    return [module_of(c) for c in CASES]


@needs_nvcc
def test_every_corpus_program_compiles_with_nvcc(modules) -> None:
    assert_compiles_with_nvcc(modules)


def test_translation_units_are_self_contained_and_deterministic(modules) -> None:
    for case, m in zip(CASES, modules):
        src = m.source
        assert not re.search(r"^\s*#\s*include", src, re.M), case.name
        names = re.findall(r'extern "C" __global__ void (\w+)\(', m.kernels)
        assert names == [launch.name for ls in m.launches for launch in ls], case.name
        assert len(m.launches) == len(kernel_program(case).steps)
        assert "atomicAdd" not in src and "atomicOr" not in m.kernels  # no float atomics, ever
        reduces = [launch for ls in m.launches for launch in ls if launch.kind != "elementwise"]
        if reduces:
            assert "jk_shfl_down(" in m.kernels, case.name
        if any(launch.kind != "warp_rows" for launch in reduces):  # warp rows: shuffles only
            assert "__syncthreads();" in m.kernels, case.name
        assert module_of(case).source == src  # the same program renders the same text


def test_as_text_cuda_on_every_backend() -> None:
    x = np.arange(12.0).reshape(3, 4)

    def f(x):
        return np.sin(x).sum(axis=0), x.max()

    texts = {b: jk.jit(f, backend=b).lower(x).as_text("cuda") for b in ("cpu", "interpret", "cuda-emulator")}
    assert len(set(texts.values())) == 1
    assert 'extern "C" __global__ void jk_' in texts["cpu"] and "_part(" in texts["cpu"] and "_final(" in texts["cpu"]


@needs_nvcc
def test_ptx_stage() -> None:
    ptx = jk.jit(lambda x: x * 2 + 1).lower(np.ones(8, np.float32)).as_text("ptx")
    assert ".entry jk_" in ptx and "sm_90" in ptx


@pytest.mark.parametrize("fn, message", [
    (lambda x: np.linalg.inv(x + 4 * np.eye(4, dtype=np.float32)), "library step 'linalg_inv'"),
    (lambda x: np.partition(x, 1, axis=1), "library step 'partition'"),
    (lambda x: jk.lax.fori_loop(0, 3, lambda i, c: np.partition(c, 1, axis=1), x), "control flow 'fori_loop'.*library step"),
    (lambda x: np.sort(x.astype(np.complex64) * 1j, axis=1), "complex numpy.sort"),
], ids=["linalg", "partition", "loop-of-library-steps", "complex-sort"])
def test_unrendered_steps_raise_naming_them(fn, message: str) -> None:
    x = np.ones((4, 4), np.float32)
    with pytest.raises(jk.UnsupportedOperationError, match=message):
        jk.jit(fn, backend="cuda-emulator")(x)
    with pytest.raises(jk.UnsupportedOperationError, match=message):
        jk.jit(fn).lower(x).as_text("cuda")
    np.testing.assert_allclose(jk.jit(fn)(x), fn(x), rtol=1e-6)  # the CPU backend runs them


def test_cuda_backend_says_what_is_missing() -> None:
    missing = missing_for_cuda()
    if not missing:
        pytest.skip("PyCUDA, a driver and a device are all present here")
    with pytest.raises(jk.BackendUnavailableError) as info:
        jk.jit(lambda x: x + 1, backend="cuda")
    text = str(info.value)
    for item in missing:
        assert item in text
    assert "cuda-emulator" in text and "backend='cpu'" in text
