"""Large matrix products split into panels across the CPU runtime's worker threads when the BLAS
runs on one thread (backends/cpu/library_batches.py `split_products`, blas_threads.py).

The splitter is driven with explicit thread counts and its own pool, over generated shapes,
dtypes and batch axes, and compared with NumPy's matmul: bit for bit where the panels are whole
products (stacks, integers), to a few ulps where OpenBLAS blocks a panel differently. The BLAS
thread count is read from the real OpenBLAS NumPy loaded, and a jitted chain of products runs
with that BLAS set to one thread (restored afterwards).
"""
from __future__ import annotations

import ctypes
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel.backends.cpu import blas_threads as blas
from jitkernel.backends.cpu import runtime
from jitkernel.backends.cpu.library_batches import _product_parts, split_products

_POOL = ThreadPoolExecutor(3, thread_name_prefix="test-panels")


def _splitter(threads: int):
    return split_products(lambda: threads, lambda n: _POOL, lambda: 1, min_work=0, min_thin_bytes=0)


def _operands(draw, dtype, batch, m, k, n):
    def one(shape):
        if np.dtype(dtype).kind == "c":
            return (draw_floats(draw, shape) + 1j * draw_floats(draw, shape)).astype(dtype)
        return draw_floats(draw, shape).astype(dtype)
    return one(batch + (m, k)), one(batch + (k, n))


def draw_floats(draw, shape):
    seed = draw(st.integers(0, 2**32 - 1))
    return np.random.default_rng(seed).integers(-8, 9, size=shape).astype(np.float64) / 4


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data(), dtype=st.sampled_from([np.float64, np.float32, np.complex128, np.int64]),
       batch=st.sampled_from([(), (1,), (2,), (3, 2)]), m=st.integers(1, 40), k=st.integers(1, 30),
       n=st.integers(1, 40), threads=st.integers(2, 4), into=st.booleans(), gram=st.booleans())
def test_split_products_are_numpys_matmul(data, dtype, batch, m, k, n, threads, into, gram):
    a, b = _operands(data.draw, dtype, batch, m, k, n)
    if gram:  # `x @ x.T`: one buffer, which NumPy hands to SYRK and the split cuts into blocks
        b = np.swapaxes(a, -1, -2)
    expected = np.matmul(a, b)
    out = np.full(expected.shape, 7, expected.dtype) if into else None
    got = _splitter(threads)(a, b, out=out)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if into:
        assert got is out
    # Quarter-integer operands: every product and partial sum is exact in float32 at these
    # sizes, so any panel blocking gives NumPy's answer exactly; a panel lost or written twice
    # (a wrong bound) does not.
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("shape, cut", [((300, 310, 290), "rows"), ((8, 3000, 900), "columns"), ((900, 3000, 8), "rows"),
                                        ((2, 200, 210, 220), "batch"), ((400, 500, 400), "gram")])
def test_split_products_of_real_sized_operands_match_numpy(shape, cut):
    rng = np.random.default_rng(1)
    *batch, m, k, n = shape
    a, b = rng.standard_normal((*batch, m, k)), rng.standard_normal((*batch, k, n))
    if cut == "gram":
        b = a.T
    # big enough to be split with the runtime's own thresholds, and along `cut`
    assert _product_parts(a, b, lambda: 2, lambda: 1, 1 << 27, 1 << 24) == (2, cut)
    got = split_products(lambda: 2, lambda n: _POOL, lambda: 1)(a, b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-12, atol=1e-12 * np.abs(a @ b).max())
    if batch:  # whole products per panel: NumPy's own calls
        np.testing.assert_array_equal(got, a @ b)


@pytest.mark.parametrize("blas_count, threads, small", [(2, 2, False), (None, 2, False), (1, 1, False), (1, 2, True)])
def test_products_run_whole_unless_worth_splitting(blas_count, threads, small):
    """A BLAS with threads of its own, an unknown BLAS, one thread, or a small product: whole."""
    size = 20 if small else 400
    a = np.ones((size, size))
    assert _product_parts(a, a, lambda: threads, lambda: blas_count, 1 << 27, 1 << 24)[0] == 1


def _openblas_setter():
    for path in blas._numpy_blas_paths():  # the BLAS NumPy's matmul calls
        library = ctypes.CDLL(path)
        for name in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_",
                     "openblas_set_num_threads"):
            setter = getattr(library, name, None)
            if setter is not None:
                setter.argtypes, setter.restype = [ctypes.c_int], None
                return setter
    return None


@pytest.fixture
def one_blas_thread():
    """The process's OpenBLAS set to one thread for the test, then back to its count."""
    setter, before = _openblas_setter(), blas.blas_threads()
    if setter is None or before is None:
        pytest.skip("no OpenBLAS with a thread-count setter is loaded")
    setter(1)
    try:
        yield
    finally:
        setter(before)


def test_blas_threads_reads_the_loaded_openblas(one_blas_thread):
    import scipy.linalg  # noqa: F401  (SciPy's own OpenBLAS, at its own count, is not NumPy's)
    blas._libraries.cache_clear()
    blas._getters.cache_clear()  # found again, with SciPy's library loaded
    assert blas.blas_threads() == 1
    assert blas.concurrent_calls_safe()  # NumPy's wheels bundle a threaded OpenBLAS


def test_jitted_chain_of_products_with_one_blas_thread(one_blas_thread, monkeypatch):
    monkeypatch.setattr(jk.config, "threads", 2)
    rng = np.random.default_rng(2)
    a, b, c = rng.random((320, 300)), rng.random((300, 310)), rng.random((310, 330))
    assert _product_parts(a, b, runtime._call_threads, blas.blas_threads, 1 << 27, 1 << 24) == (2, "rows")

    def chain(a, b, c):
        return a @ b @ c

    got, expected = jk.jit(chain)(a, b, c), chain(a, b, c)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    runtime.thread_cap.threads = 1  # a Dask block task's thread: products stay whole
    try:
        assert _product_parts(a, b, runtime._call_threads, blas.blas_threads, 1 << 27, 1 << 24)[0] == 1
        np.testing.assert_array_equal(jk.jit(chain)(a, b, c), expected)
    finally:
        del runtime.thread_cap.threads
