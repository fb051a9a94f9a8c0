"""Dynamic dimensions on backend="cuda-emulator" (docs/gpu.md, "Dynamic shapes on the GPU"): the
run-time parameters of a shape-generic program are the kernel argument `jk_params`, so a new
size re-renders the same translation unit and reuses the built module: no compiler run (counted
through CompileEvents), results equal to NumPy's at every size; the generic unit compiles with
nvcc."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk
from helpers import assert_matches_numpy, numpy_result
from jitkernel import events, lax
from jitkernel.backends.cuda import nvcc

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")

IDX = np.array([0, 1, -1, -2])


def mixed(x, m, i):
    """Slices, a mean (1/n is a run-time literal), a column sum, a softmax row kernel over the
    dynamic axis, a gather and a fori_loop, all sized by n."""
    a = np.sin(x[1:]) * 2 + x[:-1]
    s = x.mean() - m.sum(axis=0)
    e = np.exp(m - m.max(axis=1, keepdims=True))
    sm = e / e.sum(axis=1, keepdims=True)
    g = x[i] * 3
    loop = lax.fori_loop(0, 3, lambda k, c: c * 0.5 + c.mean(), x)
    return a, s, sm, g, loop


def reference(x, m, i):
    a, s, sm, g, _ = numpy_result(lambda *args: mixed(*args)[:4] + (None,), x, m, i)
    c = x.copy()
    for _ in range(3):
        c = c * 0.5 + c.mean()
    return a, s, sm, g, c


def args_of(n: int, seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n), rng.standard_normal((4, n)), IDX if n >= 2 else np.array([0, -1, 0, -1])


class Compiles:
    """Counts the compiler runs (CompileEvent) of the emulator while it is active."""

    def __enter__(self) -> "Compiles":
        self.events: list = []
        self._unsubscribe = events.subscribe(self.events.append)
        return self

    def __exit__(self, *exc) -> None:
        self._unsubscribe()

    @property
    def count(self) -> int:
        return sum(1 for e in self.events if isinstance(e, events.CompileEvent) and e.backend == "cuda-emulator")

    @property
    def reused(self) -> int:
        return sum(1 for e in self.events if isinstance(e, events.CacheEvent) and e.level == "dynamic" and e.hit)


@pytest.fixture(scope="module")
def generic() -> jk.jit:
    """`mixed` on the emulator, made shape generic by two sizes."""
    f = jk.jit(mixed, backend="cuda-emulator")
    for n in (5, 6):
        assert_matches_numpy(f(*args_of(n)), reference(*args_of(n)))
    return f


def test_a_new_size_reuses_the_module(generic) -> None:
    with Compiles() as c:
        for n in (7, 11, 30):
            assert_matches_numpy(generic(*args_of(n, n)), reference(*args_of(n, n)))
    assert (c.count, c.reused) == (0, 3)
    reasons = " ".join(r for rec in generic.recompilations() for r in rec.reasons)
    assert "is now dynamic" in reasons


@pytest.mark.filterwarnings("ignore:jitted function 'mixed' reached")  # more sizes than cache entries
@settings(max_examples=25, deadline=None)
@given(n=st.integers(3, 64), seed=st.integers(0, 2**16))
def test_every_size_matches_numpy_without_a_compile(generic, n: int, seed: int) -> None:
    with Compiles() as c:
        assert_matches_numpy(generic(*args_of(n, seed)), reference(*args_of(n, seed)))
    assert c.count == 0


def test_sizes_that_change_the_kernels_still_compile_correctly(generic) -> None:
    """n = 1 fuses into other kernels (x[1:] is empty): compiled afresh, never run on the
    generic module."""
    assert_matches_numpy(generic(*args_of(1)), reference(*args_of(1)))


def test_the_generic_unit_reads_sizes_and_literals_from_jk_params(generic) -> None:
    source = generic.lower(*args_of(9)).as_text("cuda")
    assert "const long long* __restrict__ jk_params" in source
    assert "__longlong_as_double(jk_params[" in source  # 1/n, a run-time float literal
    assert "9LL" not in source and "[9]" not in source  # no size of this call baked in


def test_an_index_out_of_bounds_of_a_dynamic_axis_raises_numpys_error(generic) -> None:
    x, m, _ = args_of(8)
    with pytest.raises(IndexError, match="index 8 is out of bounds for axis 0 with size 8"):
        generic(x, m, np.array([0, 1, 8, 2]))


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc is not on PATH (set NVCC=/path/to/nvcc)")
def test_the_generic_unit_compiles_with_nvcc(generic) -> None:
    source = generic.lower(*args_of(13)).as_text("cuda")
    assert nvcc.cubin(source, options=("-Xptxas", "-O0"))[:4] == b"\x7fELF"


def test_backend_cuda_reuses_the_loaded_module_for_a_new_size() -> None:
    """backend="cuda" (the PyCUDA runtime's code, on an emulated GPU): a new size runs on the
    module loaded for the template: no compile, values equal to NumPy's."""
    from jitkernel.device_array import emulate_gpu
    with emulate_gpu():
        f = jk.jit(mixed, backend="cuda")
        for n in (5, 6):
            f(*args_of(n))
        with Compiles() as c:
            out = f(*args_of(17, 3))
            got = tuple(np.asarray(o) for o in out)
        assert c.reused == 1 and not [e for e in c.events if isinstance(e, events.CompileEvent)]
        expected = reference(*args_of(17, 3))
        assert_matches_numpy(tuple(g[()] if g.ndim == 0 else g for g in got), expected)
